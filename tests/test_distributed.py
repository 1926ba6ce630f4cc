"""Distributed training on the CPU: two gloo processes on small data against one process.

- The same seed, data (two styles) and global batch reach validation losses within 2% of the one-process
  run; every rank trains each batch at the same RBF beta.
- A stop request seen by one rank only stops both at the same batch; rank 0 saves every rank's random
  state; resuming with two processes finishes exactly the uninterrupted two-process run.
- Only rank 0 writes checkpoints; the checkpoint records the world size.
- A global batch smaller than the number of processes (one rank gets no rows) does not hang.
- `pfnn-train` under torchrun: Ctrl+C stops both processes after a batch with a resumable checkpoint.
And without processes: each rank's share of a batch and its loss weight, per-rank seeds, the atomic
checkpoint write.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest
import torch
from test_train import synthetic_data, tiny_config

from pfnn_core.models.registry import load_checkpoint
from pfnn_core.training import cli, distributed, loop
from pfnn_core.training.config import TrainConfig
from pfnn_core.training.loop import train
from pfnn_core.training.schedules import epoch_start_rows

ROOT = Path(__file__).resolve().parents[1]
DEADLINE_S = 180


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class StopAfterChecks:
    """A stop flag that turns on after `checks` looks, as a Ctrl+C reaching this process alone would."""

    def __init__(self, checks: int):
        self.checks = checks

    def is_set(self) -> bool:
        self.checks -= 1
        return self.checks < 0


def _rank_main(rank: int, world_size: int, port: int, out: str, config_values: dict) -> None:
    """One process of the two-process run (started by torch.multiprocessing)."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    context = distributed.setup("cpu")
    written = []
    real_save = loop.save_checkpoint

    def recording_save(path, *args, **kwargs):
        written.append(str(path))
        return real_save(path, *args, **kwargs)

    loop.save_checkpoint = recording_save
    betas = []
    real_beta = loop.batch_beta
    loop.batch_beta = lambda config, step: betas.append(real_beta(config, step)) or betas[-1]
    data = synthetic_data(styles=2)
    out = Path(out)
    config = TrainConfig(**config_values)

    def losses(result):
        return {"train": result.train_losses, "val": result.val_losses, "epochs": result.epochs_completed,
                "stopped": result.stopped}

    full = train(replace(config, out=str(out / "full" / "m.safetensors")), data=data)
    interrupted_config = replace(config, out=str(out / "stop" / "m.safetensors"))
    # epoch 1 has 6 batches: rank 1 alone sees the stop request at the 4th batch of epoch 2
    stop = StopAfterChecks(6 + 3) if rank == 1 else threading.Event()
    stopped = train(interrupted_config, stop=stop, data=data)
    saved_run = load_checkpoint(stopped.resume_path).meta["resume"]["run"]
    resumed = train(replace(interrupted_config, resume=str(stopped.resume_path)), data=data)
    uneven = train(replace(config, out=str(out / "uneven" / "m.safetensors"), batch_size=179, epochs=1), data=data)
    report = {"rank": context.rank, "world_size": context.world_size, "full": losses(full),
              "stopped": {**losses(stopped), "saved_epoch": saved_run["epoch"], "saved_batch": saved_run["batch"]},
              "resumed": losses(resumed), "uneven": losses(uneven), "written": written, "betas": betas}
    (out / f"rank{rank}.json").write_text(json.dumps(report))
    distributed.shutdown(context)


def _run_two_processes(out: Path, config: TrainConfig) -> list[dict]:
    import torch.multiprocessing as mp

    values = {key: value for key, value in asdict(config).items() if key != "out"}
    processes = mp.start_processes(_rank_main, args=(2, _free_port(), str(out), values), nprocs=2, join=False,
                                   start_method="spawn")
    deadline = time.monotonic() + DEADLINE_S
    try:
        while not processes.join(timeout=1.0):
            assert time.monotonic() < deadline, "the two-process run did not finish (a rank waits for the other?)"
    finally:
        for process in processes.processes:
            if process.is_alive():
                process.kill()
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(2)]


@pytest.fixture(scope="module")
def two_process_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("distributed")
    config = tiny_config(out, epochs=3)
    return config, out, _run_two_processes(out, config)


@pytest.mark.slow  # two training processes
def test_two_processes_reach_the_one_process_validation_loss(two_process_run, tmp_path):
    config, out, ranks = two_process_run
    single = train(replace(config, out=str(tmp_path / "single.safetensors")), data=synthetic_data(styles=2))
    distributed_val = ranks[0]["full"]["val"]
    assert ranks[1]["full"]["val"] == distributed_val  # reduced over ranks: every rank sees the same numbers
    assert ranks[0]["betas"] == ranks[1]["betas"] and len(set(ranks[0]["betas"])) > 10  # one beta per step, shared
    assert len(distributed_val) == len(single.val_losses) == 3
    assert distributed_val[-1] < 0.8 * distributed_val[0]  # it learned
    np.testing.assert_allclose(distributed_val, single.val_losses, rtol=0.02)
    # the same number of optimizer steps and the same schedule: the global batch is the one asked for
    step_counts = {len(epoch_start_rows(np.arange(540), config, epoch)) for epoch in range(3)}
    assert step_counts == {6}


@pytest.mark.slow  # two training processes
def test_only_rank_0_writes_and_the_checkpoint_records_the_world_size(two_process_run):
    _, out, ranks = two_process_run
    assert ranks[1]["written"] == []
    written = ranks[0]["written"]
    assert str(out / "full" / "m.safetensors") in written and str(out / "full" / "m.resume.safetensors") in written
    model = load_checkpoint(out / "full" / "m.safetensors")
    assert model.meta["training"]["world_size"] == 2
    resumable = load_checkpoint(out / "full" / "m.resume.safetensors")
    assert resumable.meta["resume"]["world_size"] == 2
    assert {"rng.torch", "rng.torch.rank1"} <= set(resumable.training_state)
    # the two ranks' random streams differ (per-rank seeds)
    assert not torch.equal(resumable.training_state["rng.torch"], resumable.training_state["rng.torch.rank1"])


@pytest.mark.slow  # two training processes
def test_a_stop_seen_by_one_rank_stops_both_and_resume_finishes_the_same_run(two_process_run):
    _, out, ranks = two_process_run
    for rank in ranks:
        assert rank["stopped"]["stopped"] and rank["stopped"]["epochs"] == 1
        assert rank["stopped"]["saved_epoch"] == 1 and rank["stopped"]["saved_batch"] == 3
    resumed, full = ranks[0]["resumed"], ranks[0]["full"]
    assert resumed["epochs"] == 3 and not resumed["stopped"]
    np.testing.assert_allclose(resumed["train"], full["train"], rtol=1e-6)
    np.testing.assert_allclose(resumed["val"], full["val"], rtol=1e-6)


@pytest.mark.slow  # two training processes
def test_a_batch_smaller_than_the_world_does_not_hang(two_process_run):
    _, _, ranks = two_process_run
    # 180 rollout starts in batches of 179: the last batch has one row, so rank 1 gets none
    assert ranks[0]["uneven"]["epochs"] == ranks[1]["uneven"]["epochs"] == 1
    assert np.isfinite(ranks[0]["uneven"]["val"][0])


def test_rank_share_covers_the_batch_and_weighs_rows_as_one_process():
    batch = np.arange(7)
    shares = [distributed.rank_share(batch, distributed.Context(rank=r, world_size=3)) for r in range(3)]
    assert np.array_equal(np.sort(np.concatenate([s for s, _ in shares])), batch)
    assert [len(s) for s, _ in shares] == [3, 2, 2]
    # DDP averages the ranks' scaled means: sum_r weight_r * mean_r / 3 must equal the mean over all rows
    values = np.random.default_rng(0).random(7)
    ddp_mean = sum(w * values[s].mean() for s, w in shares) / 3
    assert ddp_mean == pytest.approx(values.mean(), rel=1e-12)
    one, weight = distributed.rank_share(batch, distributed.Context())
    assert one is batch and weight == 1.0
    stand_in, weight = distributed.rank_share(np.arange(5, 6), distributed.Context(rank=1, world_size=2))
    assert list(stand_in) == [5] and weight == 0.0  # no rows of its own: a row that counts for nothing


def test_rank_seeds_keep_rank_0_and_differ_between_ranks():
    assert distributed.rank_seed(7, 0) == 7
    seeds = {distributed.rank_seed(7, rank) for rank in range(8)}
    assert len(seeds) == 8 and distributed.rank_seed(7, 3) == distributed.rank_seed(7, 3)
    assert distributed.rank_seed(8, 3) != distributed.rank_seed(7, 3)


def test_without_torchrun_nothing_is_set_up():
    context = distributed.setup("cpu", environ={})
    assert context == distributed.Context() and not context.distributed and context.is_main
    assert not torch.distributed.is_initialized()
    model = torch.nn.Linear(2, 2)
    assert distributed.wrap_model(model, context) is model
    assert distributed.mean_of_means({"total": 0.5}, 10, context) == {"total": 0.5}


@pytest.mark.slow  # two training processes
def test_pfnn_train_under_torchrun_stops_on_ctrl_c_with_a_resumable_checkpoint(tmp_path, bundled_bvh_files):
    clips = tmp_path / "clips"
    clips.mkdir()
    for path in [p for p in bundled_bvh_files if "_walk_normal_00" in p.name][:2]:
        (clips / path.name).symlink_to(path)
    out = tmp_path / "run" / "m.safetensors"
    resume = out.with_name("m.resume.safetensors")
    torchrun = Path(sys.executable).with_name("torchrun")
    command = [str(torchrun), "--standalone", "--nproc_per_node", "2", "-m", "pfnn_core.training.cli", str(clips),
               "--out", str(out), "--epochs", "10000", "--patience", "10000", "--hidden", "16",
               "--batch-size", "64", "--device", "cpu", "--cache-dir", str(tmp_path / "cache")]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not resume.exists():  # the first epoch is done: both processes are training
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no epoch finished"
            time.sleep(0.2)
        first_epoch_state = resume.stat().st_mtime_ns
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert "pfnn-train: stopped; resumable checkpoint saved to" in err
    assert err.count("pfnn-train: dataset:") == 1  # rank 0 alone prints
    assert "2 processes (gloo)" in err
    saved = load_checkpoint(resume)
    assert resume.stat().st_mtime_ns > first_epoch_state  # written again at the stop
    assert saved.meta["resume"]["world_size"] == 2 and "rng.torch.rank1" in saved.training_state


def test_default_threads_share_the_cores_among_torchruns_processes():
    cores = os.cpu_count() or 1
    assert cli.default_threads({}) == cores
    assert cli.default_threads({"LOCAL_WORLD_SIZE": "2"}) == max(cores // 2, 1)
    assert cli.default_threads({"LOCAL_WORLD_SIZE": str(4 * cores)}) == 1  # never 0
