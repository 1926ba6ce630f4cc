"""The motion VAE kind: networks and their numpy twins, windows, condition, checkpoint round trip and bad
files, the runtime model (history buffer, determinism, variation, no NaN), the registry and the runtime."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from pfnn_core.features.layout import make_layouts
from pfnn_core.models.checkpoint import CheckpointError, read_checkpoint_file, write_checkpoint
from pfnn_core.models.mvae.checkpoint import network_of, save_mvae
from pfnn_core.models.mvae.frames import TRIM_S, SequenceIndex, condition, phase_features
from pfnn_core.models.mvae.losses import (
    SKATE_BAND,
    FrameParts,
    collapse_warning,
    jerk,
    kl_per_dimension,
    planted,
    skate,
    still,
)
from pfnn_core.models.mvae.model import MVAEModel
from pfnn_core.models.mvae.networks import MotionVAE, MVAEConfig, NumpyMVAE
from pfnn_core.models.registry import build_model, load_checkpoint
from pfnn_core.runtime.settings import RuntimeSettings

LAYOUTS = make_layouts(22)


def _config(**values) -> MVAEConfig:
    return MVAEConfig(frame_size=LAYOUTS.y.size, control_size=84, num_styles=3, **values)


def test_networks_have_the_documented_shapes_and_the_numpy_twin_matches_torch():
    torch.manual_seed(0)
    model = MotionVAE(_config(latent_size=16)).eval()
    batch, config = 5, model.config
    window = torch.randn(batch, config.window, config.frame_size)
    mu, logvar = model.encoder(window)
    assert mu.shape == logvar.shape == (batch, 16)
    cond = torch.randn(batch, config.condition_size)
    z = torch.randn(batch, 16)
    with torch.no_grad():
        frame = model.decoder(z, window[:, -1], cond)
        chosen = model.policy(z, window, cond)
    assert frame.shape == (batch, config.frame_size) and chosen.shape == (batch, 16)
    runner = NumpyMVAE(model)
    np.testing.assert_allclose(runner.decode(z.numpy(), window[:, -1].numpy(), cond.numpy()), frame.numpy(),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(runner.policy(z.numpy(), window.numpy(), cond.numpy()), chosen.numpy(),
                               rtol=1e-4, atol=1e-4)


def test_a_carrying_decoder_adds_its_layers_output_to_the_carried_previous_frame():
    """The same weights with `carry` c give exactly the plain decoder's output plus c x the previous
    frame, in torch and in the numpy twin; a config stored before the option existed loads it at 0 (the
    plain decoder); a carry outside 0..1 is refused by name."""
    torch.manual_seed(2)
    plain = MotionVAE(_config()).eval()
    carrying = MotionVAE(_config(carry=0.75)).eval()
    carrying.load_state_dict(plain.state_dict())
    z, previous = torch.randn(4, 32), torch.randn(4, LAYOUTS.y.size)
    cond = torch.randn(4, plain.config.condition_size)
    with torch.no_grad():
        output = plain.decoder(z, previous, cond)
        frame = carrying.decoder(z, previous, cond)
    torch.testing.assert_close(frame, 0.75 * previous + output)
    np.testing.assert_allclose(NumpyMVAE(carrying).decode(z.numpy(), previous.numpy(), cond.numpy()),
                               frame.numpy(), rtol=1e-4, atol=1e-4)
    stored = {key: value for key, value in _config(carry=0.75).to_dict().items() if key != "carry"}
    assert MVAEConfig.from_dict(stored).carry == 0.0
    with pytest.raises(ValueError, match="carry"):
        _config(carry=1.5)


def test_the_gru_encoder_reads_a_window_of_thirty_frames():
    model = MotionVAE(_config(encoder="gru", window=30))
    mu, logvar = model.encoder(torch.randn(2, 30, LAYOUTS.y.size))
    assert mu.shape == (2, 32)
    with pytest.raises(ValueError, match="encoder"):
        _config(encoder="lstm")
    with pytest.raises(ValueError, match="policy_frames"):
        _config(window=2, policy_frames=3)


def test_the_decoder_uses_the_latent_in_every_layer():
    """Zeroing the latent's columns of every mixture layer's weights changes the output more than
    zeroing them in the first layer only: the latent is fed into every layer."""
    torch.manual_seed(1)
    model = MotionVAE(_config()).eval()
    z, previous, cond = torch.randn(4, 32), torch.randn(4, LAYOUTS.y.size), torch.randn(4, model.config.condition_size)
    with torch.no_grad():
        full = model.decoder(z, previous, cond)
        for layer in model.decoder.layers[1:]:
            layer.weight[:32] = 0.0
        later_cut = model.decoder(z, previous, cond)
    assert float((full - later_cut).abs().max()) > 1e-3


def test_the_phase_is_given_as_sine_and_cosine_continuous_across_the_seam():
    before, after = phase_features(np.array([0.9999])), phase_features(np.array([0.0]))
    assert np.abs(before - after).max() < 1e-3
    np.testing.assert_allclose(phase_features(np.array([0.25])), [[1.0, 0.0]], atol=1e-6)
    torch_values = phase_features(torch.tensor([0.25]))
    np.testing.assert_allclose(torch_values.numpy(), [[1.0, 0.0]], atol=1e-6)
    cond = condition(np.zeros(2), np.ones((2, 3), np.float32), np.eye(2, dtype=np.float32))
    np.testing.assert_allclose(cond[0], [0.0, 1.0, 1, 1, 1, 1, 0])


def test_windows_stay_in_one_clip_and_leave_out_the_ends_of_motion_clips():
    # two motion clips of 100 and 80 rows, stored interleaved, and a standing run of 10 rows
    first, second = np.arange(0, 200, 2), np.arange(1, 160, 2)
    standing_rows = np.arange(200, 210)
    next_index = np.full(210, -1)
    for chain in (first, second, standing_rows):
        next_index[chain[:-1]] = chain[1:]
    standing = np.zeros(210, bool)
    standing[standing_rows] = True
    index = SequenceIndex(next_index, standing)
    history, length = 3, 8
    starts = index.starts(history, length)
    rows = index.rows(starts, np.arange(-history, length))
    trim = int(round(TRIM_S * 60))
    clip_of = {int(r): k for k, chain in enumerate((first, second, standing_rows)) for r in chain}
    place = {int(r): i for chain in (first, second, standing_rows) for i, r in enumerate(chain)}
    sizes = {0: len(first), 1: len(second), 2: len(standing_rows)}
    for window in rows:
        clips = {clip_of[int(r)] for r in window}
        assert len(clips) == 1
        clip = clips.pop()
        positions = [place[int(r)] for r in window]
        assert positions == list(range(positions[0], positions[0] + history + length))
        if clip < 2:
            assert positions[0] >= trim and positions[-1] < sizes[clip] - trim
    per_clip = {k: sum(clip_of[int(w[0])] == k for w in rows) for k in range(3)}
    assert per_clip == {0: 100 - 2 * trim - history - length + 1, 1: 80 - 2 * trim - history - length + 1,
                        2: 10 - history - length + 1}


def test_the_kl_is_zero_at_the_prior_and_collapse_is_named():
    assert float(kl_per_dimension(torch.zeros(3, 4), torch.zeros(3, 4)).abs().max()) == 0.0
    assert float(kl_per_dimension(torch.ones(1, 1), torch.zeros(1, 1))) == pytest.approx(0.5)
    assert collapse_warning(np.r_[np.full(8, 0.5), np.zeros(24)]) is None
    message = collapse_warning(np.r_[np.full(7, 0.5), np.full(25, 1e-7)])
    assert message and "7 of 32" in message


def _raw_parts(floor) -> FrameParts:
    """Frame parts of the 22-joint layout with identity normalisation (frames hold raw values)."""
    size = LAYOUTS.y.size
    return FrameParts.of(LAYOUTS.y, [3, 4, 7, 8], np.zeros(size), np.ones(size), "cpu", floor)


def test_the_skate_term_weighs_foot_speed_by_nearness_to_the_floor_and_counts_sinking():
    floor = [0.12, 0.045, 0.12, 0.045]
    parts = _raw_parts(floor)
    frame = torch.zeros(1, LAYOUTS.y.size)
    heights = [0.12, 0.045 + SKATE_BAND / 2, 0.12 + SKATE_BAND, 0.045 - 0.03]  # on, half-way, at H, sunk 3 cm
    speeds = [(0.3, 0.4), (1.0, 0.0), (2.0, 0.0), (0.0, 0.2)]  # horizontal (x, z): 0.5, 1, 2, 0.2 m/s
    for joint in range(4):
        frame[0, parts.foot_pos[joint, 1]] = heights[joint]
        frame[0, parts.foot_vel[joint, 0]], frame[0, parts.foot_vel[joint, 1]] = speeds[joint]
        frame[0, parts.foot_vel[joint, 0] + 1] = 5.0  # vertical speed: not a slide
    # w = 2 - 2^(h/H): 1 on the floor, 2 - sqrt(2) half-way, 0 at H; sinking counts below floor - H (1 cm)
    expected = (1.0 * 0.5 + (2.0 - 2.0 ** 0.5) * 1.0 + 0.0 * 2.0 + (1.0 * 0.2 + 0.01)) / 4
    assert float(skate(frame, parts)[0]) == pytest.approx(expected, rel=1e-5)
    frame.requires_grad_(True)
    skate(frame, parts).sum().backward()
    assert float(frame.grad[0, parts.foot_pos[1, 1]]) == 0.0  # the weight is held: no gain from lifting a foot


def test_the_still_term_counts_root_speed_yaw_rate_and_foot_speed_above_the_datas():
    parts = _raw_parts(None)
    pred, data = torch.zeros(2, LAYOUTS.y.size), torch.zeros(2, LAYOUTS.y.size)
    pred[:, parts.root_vel[0]], pred[:, parts.root_vel[1]] = 0.3, -0.4  # 0.5 m/s
    pred[:, parts.yaw_rate[0]] = -0.1  # rad/s, turning right
    for joint, (vx, vz) in enumerate([(0.6, 0.8), (0.0, 0.2), (0.0, 0.0), (0.1, 0.0)]):  # 1, 0.2, 0, 0.1 m/s
        pred[:, parts.foot_vel[joint, 0]], pred[:, parts.foot_vel[joint, 1]] = vx, vz
        pred[:, parts.foot_vel[joint, 0] + 1] = 3.0  # vertical: not counted
    data[1, parts.root_vel[1]] = 0.2  # the data's own motion is not fought
    data[1, parts.yaw_rate[0]] = 0.25
    data[1, parts.foot_vel[0, 0]] = 0.5
    first = 0.5 + 0.1 + (1.0 + 0.2 + 0.0 + 0.1) / 4
    second = (0.5 - 0.2) + 0.0 + (0.5 + 0.2 + 0.0 + 0.1) / 4
    assert still(pred, data, parts).tolist() == pytest.approx([first, second], rel=1e-5)
    pred.requires_grad_(True)
    still(pred, data, parts)[0].backward()  # absolute, not squared: a small drift keeps its full gradient
    assert float(pred.grad[0, parts.yaw_rate[0]]) == pytest.approx(-1.0)


def test_the_planted_term_is_the_world_speed_root_and_pose_give_a_contact_foot_above_the_datas():
    parts = _raw_parts(None)
    dt = 1.0 / 60.0
    before, pred, data = (torch.zeros(1, LAYOUTS.y.size) for _ in range(3))
    for joint in range(4):
        before[0, parts.foot_pos[joint, 0]] = 0.1 * (joint + 1)
        pred[0, parts.foot_pos[joint, 0]] = 0.1 * (joint + 1)
        data[0, parts.foot_pos[joint, 0]] = 0.1 * (joint + 1)  # the data's feet stand still
        data[0, parts.contacts[joint]] = 1.0
    pred[0, parts.root_vel[1]] = 0.6  # the root walks forward 1 cm this tick...
    pred[0, parts.foot_pos[0, 2]] = -0.01  # ...and joint 0 moves back 1 cm in the root frame: still in the world
    data[0, parts.contacts[3]] = 0.0  # joint 3 is in the air in the data: not counted
    # joints 1 and 2 stay put in the root frame: they slide forward with the root at 0.6 m/s
    assert float(planted(pred, before, data, before, parts, dt)[0]) == pytest.approx((0.0 + 0.6 + 0.6 + 0.0) / 4, rel=1e-4)
    # a turn: the root turns by a, the joints turned back by -a in the new root frame stay where they were
    turn = 0.3
    pred = torch.zeros(1, LAYOUTS.y.size)
    pred[0, parts.yaw_rate[0]] = turn / dt
    for joint in range(4):
        x = 0.1 * (joint + 1)  # R(-a) (x, 0) = (cos a x, sin a x) with R(a)(x, z) = (c x + s z, -s x + c z)
        pred[0, parts.foot_pos[joint, 0]], pred[0, parts.foot_pos[joint, 2]] = np.cos(turn) * x, np.sin(turn) * x
    assert float(planted(pred, before, data, before, parts, dt)[0]) == pytest.approx(0.0, abs=1e-4)
    # the data's own creep is not fought: data sliding forward at 0.5 m/s leaves 0.1 of the 0.6
    sliding = before.clone()
    sliding[0, parts.root_vel[1]] = 0.6
    data[0, parts.root_vel[1]] = 0.5
    assert float(planted(sliding, before, data, before, parts, dt)[0]) == pytest.approx(3 * 0.1 / 4, rel=1e-4)


def test_the_jerk_term_is_zero_for_constant_acceleration_and_exact_for_a_cubic():
    parts = _raw_parts(None)
    index = parts.pose

    def frames(coefficient, times):
        out = torch.zeros(1, len(times), LAYOUTS.y.size)
        for k, t in enumerate(times):
            out[0, k, index] = 0.5 * t * t + coefficient * t ** 3
        return out

    quadratic = frames(0.0, [0, 1, 2, 3])
    assert float(jerk(quadratic[:, 3], quadratic[:, :3], quadratic[:, 3], quadratic[:, :3], parts)[0]) == 0.0
    cubic = frames(1.0, [0, 1, 2, 3])  # third difference of t^3 with unit steps: 6
    assert float(jerk(cubic[:, 3], cubic[:, :3], quadratic[:, 3], quadratic[:, :3], parts)[0]) == pytest.approx(36.0)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A random-weight motion VAE written with real card facts (those of the shipped PFNN)."""
    from pfnn_core.models.checkpoint import stored_meta

    default = Path(__file__).resolve().parents[1] / "assets" / "models" / "default.safetensors"
    info, tensors = read_checkpoint_file(default)
    meta = stored_meta(info)
    meta.pop("training", None)
    styles = len(meta["styles"]["names"])
    torch.manual_seed(3)
    model = MotionVAE(MVAEConfig(frame_size=LAYOUTS.y.size, control_size=84, num_styles=styles)).eval()
    norm = {name: tensors[f"norm.{name}"] for name in ("x_mean", "x_std", "y_mean", "y_std")}
    path = tmp_path_factory.mktemp("mvae") / "random.safetensors"
    save_mvae(path, model, LAYOUTS, norm, np.full(32, 0.5), {**meta, "mvae": {"active_dimensions": 0}})
    return path, model, norm, meta


def _inputs(model: MVAEModel, batch: int, seed: int = 0):
    from pfnn_core.models.base import ModelInput

    rng = np.random.default_rng(seed)
    x = model.norm["x_mean"] + rng.standard_normal((batch, LAYOUTS.x.size)) * model.norm["x_std"] * 0.3
    return ModelInput(x, rng.random(batch), model.default_style(batch), model.initial_model_state(batch),
                      RuntimeSettings(), 1.0 / 60.0)


def test_a_round_trip_through_the_file_gives_identical_outputs(saved):
    path, network, _, _ = saved
    checkpoint = load_checkpoint(path)
    assert checkpoint.kind == "mvae" and checkpoint.card.kind == "mvae"
    loaded = network_of(checkpoint)
    for name, value in network.state_dict().items():
        assert torch.equal(value, loaded.state_dict()[name])
    first, second = build_model(checkpoint), build_model(load_checkpoint(path))
    assert isinstance(first, MVAEModel)
    inputs = _inputs(first, 3)
    for _ in range(5):
        a, b = first.step(inputs), second.step(inputs)
        np.testing.assert_array_equal(a.y, b.y)
        inputs = inputs._replace(state=a.state)


def test_a_bad_file_names_the_file_and_the_tensor(saved, tmp_path):
    path, network, norm, meta = saved
    info, tensors = read_checkpoint_file(path)
    broken = dict(tensors)
    broken["latent.scale"] = torch.ones(7)
    bad = tmp_path / "bad.safetensors"
    write_checkpoint(bad, "mvae", broken, LAYOUTS, {k: v for k, v in info.items() if k not in (
        "format", "version", "kind", "model_config", "layout")}, model_config=info["model_config"])
    with pytest.raises(CheckpointError, match=r"bad\.safetensors.*latent\.scale"):
        load_checkpoint(bad)
    del broken["latent.scale"]
    broken.pop("model.decoder.layers.0.weight")
    write_checkpoint(bad, "mvae", broken, LAYOUTS, {}, model_config=info["model_config"])
    with pytest.raises(CheckpointError, match=r"bad\.safetensors.*model\.decoder\.layers\.0\.weight"):
        load_checkpoint(bad)
    write_checkpoint(bad, "mvae", tensors, LAYOUTS, {}, model_config={**info["model_config"], "experts": "six"})
    with pytest.raises(CheckpointError, match=r"bad\.safetensors"):
        load_checkpoint(bad)


def test_ten_runs_from_the_same_history_are_identical_at_variation_zero(saved):
    path = saved[0]
    results = []
    for _ in range(10):
        model = build_model(load_checkpoint(path))
        inputs = _inputs(model, 2, seed=5)
        outputs = []
        for _ in range(20):
            output = model.step(inputs)
            outputs.append(output.y)
            inputs = inputs._replace(state=output.state)
        results.append(np.stack(outputs))
    for other in results[1:]:
        np.testing.assert_array_equal(results[0], other)


def test_variation_samples_around_the_policy_and_never_gives_nan(saved):
    model = build_model(load_checkpoint(saved[0]))
    inputs = _inputs(model, 4, seed=2)
    calm = model.step(inputs).y
    for variation in (0.25, 1.0, 5.0):
        settings = RuntimeSettings()
        settings.variation = variation
        state = inputs.state
        for _ in range(30):
            output = model.step(inputs._replace(settings=settings, state=state))
            assert np.isfinite(output.y).all() and np.isfinite(output.state["latent"]).all()
            state = output.state
    settings = RuntimeSettings()
    settings.variation = 1.0
    assert not np.array_equal(model.step(inputs._replace(settings=settings)).y, calm)


def test_the_history_buffer_holds_exactly_the_training_window(saved):
    model = build_model(load_checkpoint(saved[0]))
    inputs = _inputs(model, 2)
    state = model.step(inputs).state
    assert state["history"].shape == (2, model.config.window, LAYOUTS.y.size)
    frames = []
    for _ in range(4):
        output = model.step(inputs._replace(state=state))
        frames.append((output.y - model.norm["y_mean"]) / model.norm["y_std"])
        state = output.state
    # the newest slots are the last frames produced (root motion before the filter aside)
    body = slice(LAYOUTS.y.slice("joint_pos").start, LAYOUTS.y.size)
    np.testing.assert_allclose(state["history"][:, -1, body], frames[-1][:, body], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(state["history"][:, -2, body], frames[-2][:, body], rtol=1e-4, atol=1e-4)


def test_the_runtime_drives_a_motion_vae(saved):
    from pfnn_core.runtime.character import Character
    from pfnn_core.runtime.command import Command

    character = Character(load_checkpoint(saved[0]))
    assert isinstance(character.model, MVAEModel)
    for _ in range(60):
        state = character.tick(Command(np.array([0.0, 1.0]), gait="walk"), 1.0 / 60.0)
    assert np.isfinite(state.world_joint_pos).all()
    assert state.model_state["history"].shape[1] == character.model.window
    path = character.model.latent_path(np.random.default_rng(0).standard_normal((50, 32)))
    assert path.shape == (50, 2)


def test_the_latent_trail_keeps_the_last_seconds_and_projects_them_on_their_main_directions():
    from pfnn_core.models.mvae.model import LatentTrail, latent_path

    trail = LatentTrail(3, seconds=0.1, fps=60.0)  # 6 ticks
    for tick in range(10):
        trail.push([tick, 2.0 * tick, 0.0])
    np.testing.assert_array_equal(trail.latents()[:, 0], [4, 5, 6, 7, 8, 9])
    path = trail.path()
    # points on a line: the first direction carries all the spread, the second none
    assert np.ptp(path[:, 0]) == pytest.approx(5.0 * np.sqrt(5.0)) and np.abs(path[:, 1]).max() < 1e-9
    assert latent_path(np.zeros((1, 3))).shape == (1, 2)
