"""Training: a tiny run lowers the validation loss, a fixed seed reproduces a run exactly, the stop flag
writes a resumable checkpoint and resuming finishes the same run, NaN losses stop with a clear error,
the loss terms are zero on the data itself, and the command line refuses bad input with exit code 2 and
trains the model kind `--kind` names.

The data is a small synthetic gait: per clip a phase that advances at a clip-specific rate, a pose that is
a function of the phase, and y's pose equal to the next row's x pose, so rollouts are meaningful."""
import threading
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
import torch

from pfnn_core.data.normalise import normalisation, split_by_clip
from pfnn_core.device import resolve_device
from pfnn_core.features.layout import FeatureLayout, ModelLayout
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.training import cli, loop
from pfnn_core.training.cli import main
from pfnn_core.training.config import TrainConfig, TrainingError, TrainResult
from pfnn_core.training.loop import train
from pfnn_core.training.losses import sample_losses
from pfnn_core.training.resume import resume_config
from pfnn_core.training.schedules import cosine_lr, epoch_start_rows, feedback_probability, oversampled_rows
from pfnn_core.training.tensors import to_device

NAMES = ["Hips", "UpLeg_L", "Foot_L", "Toes_L", "UpLeg_R", "Foot_R", "Toes_R"]
PARENTS = [-1, 0, 1, 2, 0, 4, 5]
OFFSETS = [[0.0, 0.0, 0.0], [0.1, -0.05, 0.0], [0.0, -0.8, 0.0], [0.0, -0.05, 0.12],
           [-0.1, -0.05, 0.0], [0.0, -0.8, 0.0], [0.0, -0.05, 0.12]]  # metres: a checkpoint stores its skeleton
J = len(NAMES)


@dataclass
class TinyData:
    x: np.ndarray
    y: np.ndarray
    phase: np.ndarray
    clip: np.ndarray
    next_index: np.ndarray
    layout: ModelLayout
    clip_names: list
    skeleton: dict
    stride: dict
    gait_speeds: dict
    style: np.ndarray = None
    styles: list = field(default_factory=list)
    clip_labels: list = field(default_factory=list)
    style_stats: dict = field(default_factory=dict)
    floor_heights: list = field(default_factory=list)
    stance: dict = field(default_factory=dict)


def synthetic_data(clips=8, frames=90, seed=0, styles=0) -> TinyData:
    """Walk-like clips of a 7-joint skeleton; with `styles` > 0, clip c is in style c % styles."""
    rng = np.random.default_rng(seed)
    x_layout = FeatureLayout([("traj_pos", (3, 2)), ("joint_pos", (J, 3)), ("joint_vel", (J, 3))])
    y_layout = FeatureLayout([("root_vel", (2,)), ("dphase", (1,)), ("contacts", (4,)),
                           ("joint_pos", (J, 3)), ("joint_vel", (J, 3))])
    base = rng.normal(size=(J, 3))
    swing = rng.normal(size=(J, 3)) * 0.3
    xs, ys, phases, clip_ids, nexts = [], [], [], [], []
    for clip in range(clips):
        speed = 1.0 + 0.3 * clip / clips
        dphase = speed / 66.0
        phase = (rng.random() + dphase * np.arange(frames + 1)) % 1.0
        angle = 2 * np.pi * phase[:, None, None]
        pose = base + swing * np.sin(angle + np.arange(J)[:, None])        # [F+1, J, 3]
        velocity = swing * np.cos(angle + np.arange(J)[:, None]) * 2 * np.pi * dphase * 60
        left = (np.sin(angle[:, 0, 0]) > 0).astype(float)
        contacts = np.stack([left, left, 1 - left, 1 - left], -1)
        traj = speed * np.array([-1.0, 0.0, 1.0])[None, :, None] * np.array([0.0, 1.0])
        xs.append(x_layout.pack({"traj_pos": np.repeat(traj, frames, 0), "joint_pos": pose[:-1],
                                 "joint_vel": velocity[:-1]}))
        ys.append(y_layout.pack({"root_vel": np.tile([0.0, speed], (frames, 1)),
                                 "dphase": np.full((frames, 1), dphase), "contacts": contacts[1:],
                                 "joint_pos": pose[1:], "joint_vel": velocity[1:]}))
        phases.append(phase[1:])
        clip_ids.append(np.full(frames, clip))
        start = clip * frames
        nexts.append(np.where(np.arange(frames) < frames - 1, start + np.arange(frames) + 1, -1))
    return TinyData(x=np.concatenate(xs).astype(np.float32), y=np.concatenate(ys).astype(np.float32),
                    phase=np.concatenate(phases).astype(np.float32), clip=np.concatenate(clip_ids),
                    next_index=np.concatenate(nexts), layout=ModelLayout(x_layout, y_layout),
                    clip_names=[f"clip{i}.bvh" for i in range(clips)],
                    skeleton={"names": NAMES, "parents": PARENTS, "offsets": OFFSETS},
                    stride={"speed": [1.1], "stride_length": [1.3], "linear": [1.3, 0.0], "num_cycles": 0},
                    gait_speeds={"walk": 1.1, "run": 3.4},
                    style=np.concatenate(clip_ids) % max(styles, 1),
                    styles=[f"style{i}" for i in range(styles)], floor_heights=[0.08, 0.02, 0.08, 0.02])


@pytest.fixture(scope="module")
def data():
    return synthetic_data()


def tiny_config(tmp_path, **overrides) -> TrainConfig:
    values = dict(out=str(tmp_path / "tiny.safetensors"), hidden_size=32, epochs=3, batch_size=32,
                  lr=3e-3, dropout=0.1, rollout_length=3, feedback_max=0.5, patience=10, seed=3,
                  val_fraction=0.25, device="cpu", threads=1)
    values.update(overrides)
    return TrainConfig(**values)


def test_tiny_run_lowers_validation_loss_and_writes_a_loadable_model(tmp_path, data):
    events = []
    result = train(tiny_config(tmp_path, epochs=4), progress=events.append, data=data)
    assert result.epochs_completed == 4 and not result.stopped
    assert result.val_losses[-1] < 0.7 * result.val_losses[0]
    assert result.best_val_loss == min(result.val_losses)
    checkpoint = load_checkpoint(result.out_path)
    assert checkpoint.config.hidden_size == 32 and checkpoint.config.input_size == data.x.shape[1]
    assert checkpoint.meta["training"]["best_epoch"] == result.best_epoch
    assert checkpoint.meta["skeleton"]["names"] == NAMES
    assert checkpoint.meta["data"]["samples"] == len(data.x)
    batch_events = [e for e in events if e["event"] == "batch"]
    assert batch_events[-1]["step"] == batch_events[-1]["total_steps"]
    assert {"epoch", "train_loss", "val_loss", "eta_s", "lr"} <= set(batch_events[-1])
    assert events[-1]["event"] == "done"
    epoch_events = [e for e in events if e["event"] == "epoch"]
    assert [e["epoch"] for e in epoch_events] == [1, 2, 3, 4]
    assert [e["train_loss"] for e in epoch_events] == result.train_losses
    assert [e["val_loss"] for e in epoch_events] == result.val_losses
    # the cosine schedule ended near its floor
    assert batch_events[-1]["lr"] < 0.1 * 3e-3


def test_fixed_seed_reproduces_a_run(tmp_path, data):
    first = train(tiny_config(tmp_path / "a", epochs=2), data=data)
    second = train(tiny_config(tmp_path / "b", epochs=2), data=data)
    assert first.train_losses == second.train_losses
    assert first.val_losses == second.val_losses
    other_seed = train(tiny_config(tmp_path / "c", epochs=2, seed=4), data=data)
    assert other_seed.train_losses != first.train_losses


def test_stop_flag_saves_resumable_checkpoint_and_resume_finishes_the_same_run(tmp_path, data):
    reference = train(tiny_config(tmp_path / "ref"), data=data)

    stop = threading.Event()

    def stop_mid_second_epoch(info):
        if info["event"] == "batch" and info["epoch"] == 2 and info["batch"] == 3:
            stop.set()

    config = tiny_config(tmp_path / "run")
    stopped = train(config, progress=stop_mid_second_epoch, stop=stop, data=data)
    assert stopped.stopped and stopped.epochs_completed == 1
    resumable = load_checkpoint(stopped.resume_path)
    assert resumable.meta["resume"]["run"]["batch"] == 3
    assert "rng.torch" in resumable.training_state
    assert any(name.startswith("optimizer.") for name in resumable.training_state)

    resumed = train(replace(config, resume=str(stopped.resume_path)), data=data)
    assert resumed.epochs_completed == 3 and not resumed.stopped
    assert resumed.train_losses == reference.train_losses  # bit-exact: the same batches, draws and states
    assert resumed.val_losses == reference.val_losses


def test_resume_config_reads_the_stored_settings(tmp_path, data):
    result = train(tiny_config(tmp_path, epochs=1), data=data)
    config = resume_config(result.resume_path, epochs=2)
    assert config.hidden_size == 32 and config.epochs == 2 and config.resume == str(result.resume_path)
    resumed = train(config, data=data)
    assert resumed.epochs_completed == 2


def test_nan_loss_stops_with_a_clear_error(tmp_path, data):
    poisoned = replace(data, y=data.y.copy())
    poisoned.y[:, 0] = np.nan
    with pytest.raises(TrainingError, match=r"epoch 1, batch 1"):
        train(tiny_config(tmp_path), data=poisoned)
    assert not (tmp_path / "tiny.safetensors").exists()


def test_loss_terms_vanish_on_the_data_and_foot_skating_by_hand(tmp_path, data):
    norm = normalisation(data, split_by_clip(data, 0.25, 0)[0])
    tensors = to_device(data, norm, torch.device("cpu"))
    config = tiny_config(tmp_path)
    target = tensors.y[:10]
    terms = sample_losses(target.clone(), target, tensors, config)
    for name in ("fit", "root_velocity", "foot_skating"):
        assert float(terms[name].abs().max()) == 0.0
    # move the left foot joint (index 2) by +1 m/s in x on a row where the left foot is planted
    row = int(np.flatnonzero(data.y[:, data.layout.y.slice("contacts")][:, 0] == 1.0)[0])
    pred = tensors.y[row:row + 1].clone()
    column = data.layout.y.slice("joint_vel").start + 2 * 3 + 0
    pred[0, column] += 1.0 / float(tensors.y_std[column])
    true_speed = float(np.linalg.norm(data.y[row, column:column + 3:2]))
    new_speed = float(np.linalg.norm(data.y[row, column:column + 3:2] + [1.0, 0.0]))
    terms = sample_losses(pred, tensors.y[row:row + 1], tensors, config)
    assert float(terms["foot_skating"][0]) == pytest.approx(max(new_speed - true_speed, 0) / 4, rel=1e-4)


def test_schedules():
    config = TrainConfig(lr=1e-3, lr_final_fraction=0.1, epochs=10, feedback_max=0.6)
    assert cosine_lr(config, 0, 100) == pytest.approx(1e-3)
    assert cosine_lr(config, 50, 100) == pytest.approx(0.55e-3)
    assert cosine_lr(config, 100, 100) == pytest.approx(1e-4)
    assert feedback_probability(config, 0) == 0.0
    assert feedback_probability(config, 5) == pytest.approx(0.6)
    assert feedback_probability(config, 2) == pytest.approx(0.24)
    rows = np.arange(1000)
    batches = epoch_start_rows(rows, replace(config, rollout_length=4, batch_size=64), 3)
    assert sum(len(b) for b in batches) == 250
    again = epoch_start_rows(rows, replace(config, rollout_length=4, batch_size=64), 3)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again))


def test_cli_refuses_missing_or_empty_folders(tmp_path, capsys):
    assert main([str(tmp_path / "absent")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")]) == 2
    assert "no .bvh or .bvh.gz files" in capsys.readouterr().err


def test_cli_surfaces_data_errors_as_one_line(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "clips"
    folder.mkdir()
    (folder / "a.bvh").write_text("HIERARCHY\n")

    def mixed(config, **kwargs):
        raise ValueError("b.bvh: skeleton differs from a.bvh (joint names)")

    monkeypatch.setattr(cli, "load_training_data", mixed)
    assert main([str(folder), "--out", str(tmp_path / "m.safetensors")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "pfnn-train: error: b.bvh: skeleton differs from a.bvh (joint names)"


def test_cli_trains_and_resumes(tmp_path, capsys, monkeypatch, data):
    folder = tmp_path / "clips"
    folder.mkdir()
    (folder / "a.bvh").write_text("HIERARCHY\n")
    monkeypatch.setattr(cli, "load_training_data", lambda config, **kwargs: data)
    out = tmp_path / "m.safetensors"
    common = ["--hidden", "16", "--batch-size", "64", "--threads", "1", "--device", "cpu"]
    assert main([str(folder), "--out", str(out), "--epochs", "1", *common]) == 0
    assert out.exists()
    resume = tmp_path / "m.resume.safetensors"
    assert main(["--resume", str(resume), "--epochs", "2"]) == 0
    assert load_checkpoint(resume).meta["resume"]["run"]["epoch"] == 2


def test_tiny_real_run_on_bundled_clips_lowers_validation_loss(tmp_path, bundled_bvh_files):
    from pfnn_core.data.build import build_training_data
    walks = [path for path in bundled_bvh_files if "_walk_" in path.name][:3]
    standing = [path for path in bundled_bvh_files if "raise-up-both" in path.name][:1]
    real = build_training_data(walks + standing, mirror=True)
    config = TrainConfig(data=[], out=str(tmp_path / "real.safetensors"), hidden_size=32, epochs=3,
                         val_fraction=0.25, seed=0, device="cpu", threads=1)
    result = train(config, data=real)
    assert result.val_losses[-1] < result.val_losses[0]
    checkpoint = load_checkpoint(result.out_path)
    assert checkpoint.layout == real.layout
    assert checkpoint.meta["skeleton"]["names"] == real.skeleton["names"]
    x = torch.as_tensor((real.x[:5] - checkpoint.norm["x_mean"].numpy()) / checkpoint.norm["x_std"].numpy())
    assert checkpoint.model(x, torch.as_tensor(real.phase[:5])).shape == (5, real.y.shape[1])


def labelled(data: TinyData, contents: list) -> TinyData:
    return replace(data, clip_labels=[{"style": "normal", "content": contents[c % len(contents)]}
                                      for c in range(len(data.clip_names))])


def test_oversampling_repeats_the_rows_of_the_named_motion_kinds_only(data):
    # clip 0 side-steps to the left, clip 1 walks backwards, the other six walk forward
    tagged = labelled(data, ["walk-left", "walk-back"] + ["walk"] * 6)
    rows = np.arange(len(data.x))
    more = oversampled_rows(rows, tagged, {"side": 3, "back": 2})
    counts = np.bincount(more, minlength=len(rows))
    assert (counts[data.clip == 0] == 3).all() and (counts[data.clip == 1] == 2).all()
    assert (counts[data.clip >= 2] == 1).all()
    assert len(more) == len(rows) + 2 * 90 + 1 * 90
    assert oversampled_rows(rows, tagged, {}) is rows
    with pytest.raises(ValueError, match="unknown motion kind 'sideways'.*side"):
        oversampled_rows(rows, tagged, {"sideways": 2})
    with pytest.raises(ValueError, match="whole number >= 1"):
        oversampled_rows(rows, tagged, {"side": 0})


def test_fine_tuning_starts_from_the_given_model_and_keeps_its_normalisation(tmp_path, data):
    base = train(tiny_config(tmp_path / "base", epochs=3), data=data)
    fresh = train(tiny_config(tmp_path / "fresh", epochs=1, seed=5), data=data)
    # another seed splits the clips otherwise, so its own normalisation would differ from the base's
    tuned = train(tiny_config(tmp_path / "tuned", epochs=1, seed=5, lr=1e-7, init=str(base.out_path)), data=data)
    base_checkpoint, tuned_checkpoint = load_checkpoint(base.out_path), load_checkpoint(tuned.out_path)
    for name in ("x_mean", "x_std", "y_mean", "y_std"):
        assert torch.equal(base_checkpoint.norm[name], tuned_checkpoint.norm[name])
    assert not torch.equal(load_checkpoint(fresh.out_path).norm["x_mean"], base_checkpoint.norm["x_mean"])
    # a near-zero learning rate leaves the base's weights: its loss, far below a fresh model's first epoch
    assert tuned.val_losses[0] < 0.7 * fresh.val_losses[0]
    for key, value in base_checkpoint.model.state_dict().items():
        assert torch.allclose(value, tuned_checkpoint.model.state_dict()[key], atol=1e-4)
    with pytest.raises(TrainingError, match="does not match"):
        train(tiny_config(tmp_path / "bad", epochs=1, hidden_size=16, init=str(base.out_path)), data=data)


def test_cli_reads_oversample_factors_and_refuses_bad_ones(tmp_path, capsys, monkeypatch, data):
    folder = tmp_path / "clips"
    folder.mkdir()
    (folder / "a.bvh").write_text("HIERARCHY\n")
    seen = {}
    monkeypatch.setattr(cli, "load_training_data", lambda config, **kwargs: data)

    def remember(rows, given_data, factors):
        seen["factors"] = factors
        return rows

    monkeypatch.setattr(loop, "oversampled_rows", remember)
    common = ["--hidden", "16", "--batch-size", "64", "--threads", "1", "--device", "cpu", "--epochs", "1"]
    assert main([str(folder), "--out", str(tmp_path / "m.safetensors"), "--oversample", "side=4",
                 "--oversample", "back=2", *common]) == 0
    assert seen["factors"] == {"side": 4, "back": 2}
    with pytest.raises(SystemExit) as exit_info:
        main([str(folder), "--oversample", "side", *common])
    assert exit_info.value.code == 2 and "expected KIND=N" in capsys.readouterr().err


def test_cli_trains_the_kind_asked_for_and_names_the_known_kinds_for_an_unknown_one(tmp_path, capsys, monkeypatch,
                                                                                   data):
    folder = tmp_path / "clips"
    folder.mkdir()
    (folder / "a.bvh").write_text("HIERARCHY\n")
    common = [str(folder), "--out", str(tmp_path / "m.safetensors"), "--hidden", "16", "--device", "cpu"]
    with pytest.raises(SystemExit) as exit_info:
        main([*common, "--kind", "nope"])
    assert exit_info.value.code == 2
    assert f"argument --kind: unknown model kind 'nope' (known: {', '.join(cli.KINDS)})" in capsys.readouterr().err
    assert cli.KINDS["pfnn"] is train  # the default kind is this package's loop

    monkeypatch.setattr(cli, "load_training_data", lambda config, **kwargs: data)
    calls = []

    def other_kind(config, progress=None, stop=None, data=None):
        calls.append((config, stop, data))
        return TrainResult(out_path=tmp_path / "other.safetensors", resume_path=tmp_path / "other.resume",
                           epochs_completed=2, best_epoch=2, best_val_loss=0.25, train_losses=[0.5, 0.3],
                           val_losses=[0.4, 0.25], stopped=False, early_stopped=False, wall_s=1.0)

    monkeypatch.setitem(cli.KINDS, "other", other_kind)
    assert main([*common, "--kind", "other"]) == 0
    [(config, stop, given)] = calls
    assert config.hidden_size == 16 and given is data and not stop.is_set()
    assert "best validation loss 0.2500 at epoch 2" in capsys.readouterr().err
    assert not (tmp_path / "m.safetensors").exists()  # the PFNN loop did not run


def test_the_command_runs_as_a_module_as_torchrun_starts_it():
    import subprocess
    import sys

    completed = subprocess.run([sys.executable, "-m", "pfnn_core.training.cli", "--kind", "nope"],
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2
    assert f"pfnn-train: error: argument --kind: unknown model kind 'nope' (known: {', '.join(cli.KINDS)})" in completed.stderr


def test_device_names_resolve_once_for_training_and_the_runtime(tmp_path, data):
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        resolve_device("gpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="'cuda:1' was asked for but CUDA is not available"):
            resolve_device("cuda:1")
        with pytest.raises(ValueError, match="CUDA is not available"):
            train(tiny_config(tmp_path, device="cuda"), data=data)


def test_kind_fit_compares_each_kinds_predicted_root_speed_with_its_data(data):
    from pfnn_core.training.kind_fit import fit_of_rows, kind_fit, smooth_l1
    # SmoothL1 by hand: half the square below 1, |e| - 0.5 above
    assert np.allclose(smooth_l1(np.array([0.5, -2.0, 0.0])), [0.125, 1.5, 0.0])
    tagged = labelled(data, ["walk-left", "walk-back"] + ["walk"] * 6)
    y_std = np.full(data.y.shape[1], 2.0)
    truth = {row.tobytes(): i for i, row in enumerate(data.x.astype(np.float64))}
    root_vel = data.layout.y.slice("root_vel")

    def slow_backwards(x, phase, style):
        rows = np.array([truth[row.tobytes()] for row in x])
        y = data.y[rows].astype(np.float64)
        y[data.clip[rows] == 1, root_vel] *= 0.5  # clip 1 walks backwards at half its speed
        y[data.clip[rows] == 0, 0] += 1.0  # the side-step's first output one std (2.0) off
        return y

    fits = {item.kind: item for item in kind_fit(slow_backwards, tagged, y_std)}
    assert set(fits) == {"walk", "side", "back"}
    assert fits["walk"].rows == 6 * 90 and fits["side"].rows == 90 and fits["back"].rows == 90
    assert fits["walk"].fit == 0.0 and fits["walk"].speed_ratio == pytest.approx(1.0)
    assert fits["back"].speed_ratio == pytest.approx(0.5)
    # an error of 0.5 std in one of the outputs: 0.125 / outputs
    assert fits["side"].fit == pytest.approx(0.125 / data.y.shape[1])
    # rows standing still do not count in the ratio
    still = np.zeros((3, data.y.shape[1]))
    assert np.isnan(fit_of_rows(still, still, y_std, root_vel)[1])
    assert [item.rows for item in kind_fit(slow_backwards, tagged, y_std, max_rows=50)] == [50, 50, 50]


def test_cli_prints_the_trained_models_fit_per_motion_kind(tmp_path, capsys, monkeypatch, data):
    folder = tmp_path / "clips"
    folder.mkdir()
    (folder / "a.bvh").write_text("HIERARCHY\n")
    tagged = labelled(data, ["walk-left", "walk-back"] + ["walk"] * 6)
    monkeypatch.setattr(cli, "load_training_data", lambda config, **kwargs: tagged)
    out = tmp_path / "m.safetensors"
    assert main([str(folder), "--out", str(out), "--epochs", "2", "--hidden", "16", "--threads", "1",
                 "--device", "cpu"]) == 0
    err = capsys.readouterr().err
    assert "one-step fit per motion kind" in err
    lines = {line.split()[0]: line for line in err.splitlines() if line.startswith("  ") and " rows: fit " in line}
    assert set(lines) == {"walk", "side", "back"}
    assert "540 rows" in lines["walk"] and "root speed" in lines["walk"]
