"""Training the motion VAE on a few bundled clips: schedules, a resumable stop, the KL of a trained tiny
model not collapsed, the policy reaching a commanded speed better than an untrained one, and a
random-weight model failing the evaluation's body targets."""
from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from pfnn_core.models.mvae.train import MVAETrainConfig, feedback_at, kl_weight_at, lr_at, train
from pfnn_core.models.registry import build_model, load_checkpoint

BVH = Path(__file__).resolve().parents[1] / "assets" / "bvh" / "bandai-namco-ds2"
CLIPS = [str(BVH / f"dataset-2_{name}_normal_001.bvh.gz") for name in ("walk", "run", "walk-turn-left")]
CLIPS.append(str(BVH / "dataset-2_raise-up-both-hands_normal_001.bvh.gz"))


def _tiny(tmp_path, **values) -> MVAETrainConfig:
    base = MVAETrainConfig(data=CLIPS, out=str(tmp_path / "tiny.safetensors"), batch_size=32, batches_per_epoch=10,
                           vae_epochs=4, decoder_only_epochs=1, kl_warmup_epochs=1, teacher_epochs=1,
                           ramp_epochs=1, policy_epochs=2, val_windows=128, hidden=64, cache=False)
    return replace(base, **values)


def test_the_schedules_follow_the_config():
    config = MVAETrainConfig(decoder_only_epochs=2, kl_warmup_epochs=4, teacher_epochs=3, ramp_epochs=4,
                             kl_weight=0.001, lr=1e-3, lr_final=1e-5)
    assert kl_weight_at(config, 1, 0.9) == 0.0  # the decoder alone: no KL
    assert kl_weight_at(config, 4, 0.0) == pytest.approx(0.0005)
    assert kl_weight_at(config, 9, 0.0) == pytest.approx(0.001)
    assert feedback_at(config, 2, 0.99) == 0.0  # teacher forcing
    assert feedback_at(config, 5, 0.0) == pytest.approx(0.5)
    assert feedback_at(config, 20, 0.0) == 1.0  # fully autoregressive
    assert lr_at(config, 0.0) == pytest.approx(1e-3) and lr_at(config, 1.0) == pytest.approx(1e-5)


@pytest.mark.slow
def test_each_epochs_report_is_that_epochs_number_stage_and_held_out_loss_per_term(tmp_path):
    seen = []
    config = _tiny(tmp_path, vae_epochs=2, policy_epochs=1, batches_per_epoch=4)
    train(config, progress=seen.append)
    epochs = [info for info in seen if info["event"] == "epoch"]
    history = load_checkpoint(config.out).card.extra["loss_history"]
    assert [(info["epoch"], info["stage"]) for info in epochs] == [(1, "vae"), (2, "vae"), (3, "policy")]
    for info, (stage, index) in zip(epochs, [("vae", 0), ("vae", 1), ("policy", 0)]):
        assert info["train_loss"] == pytest.approx(history[stage]["total"][index])  # the epoch's, not the next one's
        assert info["terms"] == pytest.approx({term: values[index] for term, values in history["val"][stage].items()})
    assert set(epochs[2]["terms"]) >= {"total", "reconstruction", "velocity"}


@pytest.mark.slow
def test_the_vae_stage_planted_term_is_recorded_and_weighted_into_the_total(tmp_path):
    """`vae_planted_weight` gives the decoder the policy's planted term (`losses.planted`): recorded in the
    VAE's history and added to its total with its weight; a run without it records no such term."""
    weight = 0.3
    config = _tiny(tmp_path, vae_epochs=1, decoder_only_epochs=0, kl_warmup_epochs=0, teacher_epochs=0,
                   ramp_epochs=0, policy_epochs=1, batches_per_epoch=3, batch_size=16, vae_planted_weight=weight)
    train(config)
    held_out = load_checkpoint(config.out).card.extra["loss_history"]["val"]["vae"]
    terms = {name: values[-1] for name, values in held_out.items()}
    assert terms["planted"] > 0.0
    expected = (terms["reconstruction"] + config.kl_weight * terms["kl"] + config.foot_weight * terms["foot"]
                + config.acceleration_weight * terms["acceleration"] + weight * terms["planted"])
    assert terms["total"] == pytest.approx(expected, rel=1e-5)
    plain = _tiny(tmp_path, out=str(tmp_path / "plain.safetensors"), vae_epochs=1, decoder_only_epochs=0,
                  kl_warmup_epochs=0, teacher_epochs=0, ramp_epochs=0, policy_epochs=1, batches_per_epoch=3,
                  batch_size=16)
    train(plain)
    assert "planted" not in load_checkpoint(plain.out).card.extra["loss_history"]["val"]["vae"]


@pytest.mark.slow
def test_a_stopped_run_resumes_where_it_stopped(tmp_path):
    stop = threading.Event()
    seen = []

    def progress(info):
        seen.append(info)
        if info["event"] == "batch" and info["step"] == 15:
            stop.set()

    config = _tiny(tmp_path, vae_epochs=2, policy_epochs=1)
    first = train(config, progress=progress, stop=stop)
    assert first.stopped and first.resume_path.exists() and not Path(config.out).exists()
    resumed = train(replace(config, resume=str(first.resume_path)))
    assert not resumed.stopped and resumed.epochs_completed == 3
    checkpoint = load_checkpoint(config.out)
    history = checkpoint.card.extra["loss_history"]
    assert len(history["vae"]["total"]) == 2 and len(history["policy"]["total"]) == 1
    assert checkpoint.card.training["batches"] == 30


@pytest.mark.slow
def test_pfnn_train_resume_continues_a_stopped_motion_vae_run_with_its_own_settings(tmp_path, capsys):
    """`pfnn-train --resume X` reads the kind and the settings from X (no --kind needed); a wrong --kind
    is refused naming the file."""
    from pfnn_core.training import cli

    stop = threading.Event()

    def progress(info):
        if info["event"] == "batch" and info["step"] == 5:
            stop.set()

    config = _tiny(tmp_path, vae_epochs=1, policy_epochs=1, threads=1)
    first = train(config, progress=progress, stop=stop)
    assert first.stopped
    assert cli.main(["--resume", str(first.resume_path), "--kind", "pfnn"]) == 2
    assert f"{first.resume_path}: a mvae checkpoint, not pfnn" in capsys.readouterr().err
    assert cli.main(["--resume", str(first.resume_path), "--no-cache", "--threads", "1"]) == 0
    checkpoint = load_checkpoint(config.out)
    assert checkpoint.kind == "mvae" and checkpoint.card.training["batches"] == 20  # 2 epochs x 10, none twice
    assert checkpoint.card.training["config"]["hidden"] == 64 and checkpoint.card.training["config"]["data"] == CLIPS


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mvae_trained")
    config = _tiny(folder, vae_epochs=8, batches_per_epoch=15, policy_epochs=4, hidden=128)
    result = train(config)
    return config, result


@pytest.mark.slow
def test_the_kl_of_a_trained_tiny_model_is_not_collapsed(trained):
    config, result = trained
    checkpoint = load_checkpoint(result.out_path)
    extra = checkpoint.card.extra
    kl = np.asarray(extra["kl_per_dim"])
    assert len(kl) == config.latent_size
    assert extra["active_dimensions"] >= config.latent_size // 2
    assert extra["collapse_warning"] is None
    assert np.all(np.isfinite(kl)) and float(kl.sum()) > 0.1
    history = extra["loss_history"]["val"]["vae"]
    assert set(history) == {"total", "reconstruction", "kl", "foot", "acceleration"}
    assert history["reconstruction"][-1] < history["reconstruction"][0]


def _speed_error(model, speed: float, ticks: int = 240) -> float:
    """Mean |ground speed - commanded| over the last 2 s of a straight walk, the bare model's own root
    motion (no command blending, foot locks, IK or settling)."""
    from pfnn_core.runtime.character import Character
    from pfnn_core.runtime.command import Command
    from pfnn_core.runtime.settings import RuntimeSettings

    character = Character(model.checkpoint, settings=RuntimeSettings.bare_network(model.card))
    character.model = model
    speeds = []
    for tick in range(ticks):
        state = character.tick(Command(np.array([0.0, speed]), gait="walk"), 1.0 / 60.0)
        if tick >= ticks - 120:
            speeds.append(float(np.linalg.norm(state.root_vel[0])))
    return abs(float(np.mean(speeds)) - speed)


@pytest.mark.slow
def test_the_trained_policy_reaches_a_commanded_speed_better_than_an_untrained_one(trained):
    from pfnn_core.models.mvae.networks import NumpyMVAE, Policy

    _, result = trained
    checkpoint = load_checkpoint(result.out_path)
    trained_model = build_model(checkpoint)
    untrained = build_model(checkpoint)
    torch.manual_seed(0)
    untrained.network.policy = Policy(checkpoint.config)
    untrained.runner = NumpyMVAE(untrained.network)
    walk = float(checkpoint.card.walk_speed)
    assert _speed_error(trained_model, walk) < _speed_error(untrained, walk)


@pytest.mark.slow
def test_a_random_weight_model_fails_the_evaluations_body_targets(tmp_path, trained):
    from pfnn_core.evaluation import cli
    from pfnn_core.models.mvae.checkpoint import network_of, save_mvae
    from pfnn_core.models.mvae.networks import MotionVAE

    _, result = trained
    checkpoint = load_checkpoint(result.out_path)
    torch.manual_seed(7)
    random = MotionVAE(checkpoint.config)
    assert network_of(checkpoint) is not None
    path = tmp_path / "random.safetensors"
    save_mvae(path, random, checkpoint.layout, checkpoint.norm, checkpoint.tensors["latent.scale"], checkpoint.meta)
    evaluation = cli.evaluate(path, tmp_path / "eval", quick=True, drives=["walk_start", "run"], bvh_dir=BVH)
    network = [row for row in evaluation["rows"] if row.subject == "network" and row.passed is not None]
    assert network and sum(row.passed for row in network) < len(network) / 2


@pytest.mark.slow
def test_a_time_limit_ends_the_stages_early_and_says_so(tmp_path):
    config = _tiny(tmp_path, vae_epochs=3, policy_epochs=2, max_minutes=1e-4)
    result = train(config)
    assert not result.stopped and result.out_path.exists()
    training = load_checkpoint(result.out_path).card.training
    assert training["batches"] == 10  # one VAE epoch, then no time left for more
    assert len(training["time_limits"]) == 2 and "vae stage ended after epoch 1" in training["time_limits"][0]


def test_a_policy_only_run_keeps_the_encoder_and_decoder_and_trains_the_policy_with_its_own_terms(tmp_path):
    source = train(_tiny(tmp_path, vae_epochs=1, decoder_only_epochs=0, kl_warmup_epochs=0, teacher_epochs=0,
                         ramp_epochs=0, policy_epochs=1, batches_per_epoch=4, batch_size=16))
    before = load_checkpoint(source.out_path)
    config = _tiny(tmp_path, out=str(tmp_path / "policy.safetensors"), policy_only=str(source.out_path),
                   vae_epochs=1, policy_epochs=2, batches_per_epoch=3, batch_size=16, policy_rollout=5,
                   policy_foot_weight=2.0, skate_weight=0.2, jerk_weight=0.2, style_weight=0.1, max_minutes=60)
    result = train(config)
    after = load_checkpoint(result.out_path)
    changed = {name for name, value in after.tensors.items() if not torch.equal(value, before.tensors[name])}
    assert changed and all(name.startswith("model.policy.") for name in changed)
    assert after.card.training["batches"] == 6  # the policy's 2 epochs x 3; no VAE batch
    history = after.card.extra["loss_history"]
    assert history["vae"] == before.card.extra["loss_history"]["vae"]
    assert len(history["policy"]["total"]) == 2
    # these clips are of one style: nothing for a style classifier to tell apart, so no style term
    assert {"skate", "jerk"} <= set(history["val"]["policy"]) and "style" not in history["val"]["policy"]
    assert after.card.extra["kl_per_dim"] == before.card.extra["kl_per_dim"]


def test_a_policy_only_run_with_the_still_term_trains_on_standing_windows_and_stops(tmp_path):
    source = train(_tiny(tmp_path, vae_epochs=1, decoder_only_epochs=0, kl_warmup_epochs=0, teacher_epochs=0,
                         ramp_epochs=0, policy_epochs=1, batches_per_epoch=4, batch_size=16))
    config = _tiny(tmp_path, out=str(tmp_path / "still.safetensors"), policy_only=str(source.out_path),
                   vae_epochs=1, policy_epochs=1, batches_per_epoch=3, batch_size=16, policy_rollout=5,
                   still_weight=0.2, idle_share=0.25, stop_share=0.25, max_minutes=60)
    from pfnn_core.models.mvae.session import prepare
    session = prepare(config)
    idle = session.tensors.idle.numpy()
    assert 0 < idle.sum() < len(idle)  # the standing clip's rows, not the walks'
    rows = session.draw_rows("policy")
    assert idle[rows[:4, -1].numpy()].all()  # a quarter of the batch ends standing
    future = session.tensors.future_control
    assert int(future.sum()) * 2 == future.numel() and not future[:12].any() and future[12:24].all()
    result = train(config)
    history = load_checkpoint(result.out_path).card.extra["loss_history"]
    assert "still" in history["val"]["policy"] and np.isfinite(history["policy"]["still"]).all()
    assert history["policy"]["still"][0] > 0.0


def test_the_policy_weights_and_rollout_length_follow_the_config():
    config = MVAETrainConfig(foot_weight=0.5, policy_foot_weight=-1.0, rollout=8, policy_rollout=0)
    assert config.weights("policy").foot == 0.5 and config.rollout_length("policy") == 8
    config = replace(config, policy_foot_weight=2.0, skate_weight=0.3, policy_rollout=24)
    policy, vae = config.weights("policy"), config.weights("vae")
    assert (policy.foot, policy.skate, vae.foot, vae.skate) == (2.0, 0.3, 0.5, 0.0)
    assert config.rollout_length("policy") == 24 and config.rollout_length("vae") == 8
