import dataclasses

import pytest

from pfnn_core.models.card import ModelCard
from pfnn_core.runtime.settings import PRIOR_MINUTES, RuntimeSettings, style_speeds, tunable_fields

SKELETON = {"names": ["Hips", "Foot_L", "Foot_R"], "parents": [-1, 0, 0],
            "offsets": [[0.0, 1.0, 0.0], [0.1, -0.9, 0.0], [-0.1, -0.9, 0.0]]}


def card(meta: dict, config=None) -> ModelCard:
    """The model card of a checkpoint whose metadata is `meta` (a small skeleton added)."""
    return ModelCard.from_meta({"skeleton": SKELETON, **meta}, config=config)


def test_every_field_has_ui_metadata_and_a_default_inside_its_range():
    settings = RuntimeSettings()
    for f in tunable_fields():
        assert f.metadata["label"] and f.metadata["help"], f.name
        value = getattr(settings, f.name)
        if isinstance(value, bool):
            continue
        if isinstance(value, str):
            assert value in f.metadata["choices"], f.name
        else:
            assert f.metadata["min"] <= value <= f.metadata["max"], f.name
    settings.validate()


def test_required_tunables_exist():
    names = {f.name for f in dataclasses.fields(RuntimeSettings)}
    for name in ("beta", "drift_window", "traj_halflife_pos", "traj_halflife_dir", "bias_pos", "bias_dir",
                 "walk_speed", "run_speed", "phase_mode", "pose_smoothing", "foot_locking", "contact_threshold",
                 "lock_release_time", "lock_release_distance", "floor_snap_height", "ik_enabled", "stand_speed",
                 "root_motion_from_command", "settle_steps", "settle_step_time", "settle_step_height",
                 "side_step_speed", "walk_back_speed", "strafe_speed_correction", "start_from_command"):
        assert name in names


def test_reset_restores_defaults_in_place():
    settings = RuntimeSettings()
    same = settings
    settings.beta = 3.0
    settings.phase_mode = "network"
    settings.foot_locking = False
    settings.reset()
    assert same is settings
    assert settings == RuntimeSettings.defaults()


def test_speeds_from_the_model_card():
    settings = RuntimeSettings.for_model(card({"gait_speeds": {"walk": 1.2, "run": 3.3}}))
    assert settings.walk_speed == 1.2 and settings.run_speed == 3.3
    assert RuntimeSettings.for_model(card({})).walk_speed == RuntimeSettings().walk_speed


def test_validate_names_the_field():
    settings = RuntimeSettings(phase_mode="bogus")
    with pytest.raises(ValueError, match="phase_mode"):
        settings.validate()
    with pytest.raises(ValueError, match="contact_threshold"):
        RuntimeSettings(contact_threshold=2.0).validate()


def test_slow_walk_warp_defaults_sit_above_standing_and_below_the_walk():
    settings = RuntimeSettings()
    # a warped slow walk starts above the stand speed and ends at or below full-stick walking
    assert settings.stand_speed * settings.max_speed_warp < settings.slow_walk_speed <= settings.walk_speed


META = {"gait_speeds": {"walk": 1.2, "run": 3.0}, "training": {"config": {"beta": 8.0, "phase_function": "rbf"}}}


def test_fitting_to_a_model_narrows_beta_around_its_trained_value_and_clamps():
    settings = RuntimeSettings(beta=50.0, run_speed=7.0)
    changed = settings.fit_to_model(card(META))
    assert settings.limits("beta") == (4.0, 16.0)
    assert settings.limits("run_speed") == (0.5, 4.5)  # 1.5x the data's fastest gait
    assert ("beta", 50.0, 16.0) in changed and settings.run_speed == 4.5
    assert settings.limits("drift_window") == (0.0, 600.0)  # not model dependent
    settings.beta, settings.drift_window = 2.0, 10_000
    assert settings.clamp() == [("beta", 2.0, 4.0), ("drift_window", 10_000, 600)]
    assert isinstance(settings.drift_window, int)
    settings.traj_halflife_pos = float("nan")
    settings.clamp()
    assert settings.traj_halflife_pos == RuntimeSettings().traj_halflife_pos
    # "Reset to defaults" goes back to the model's defaults
    settings.reset()
    assert settings.beta == 8.0 and settings.walk_speed == 1.2


def test_a_trained_beta_range_is_used_and_cubic_models_leave_beta_alone():
    meta = {"training": {"config": {"beta": 8.0, "beta_range": [2.0, 32.0], "phase_function": "rbf"}}}
    settings = RuntimeSettings()
    settings.fit_to_model(card(meta))
    assert settings.limits("beta") == (2.0, 32.0)
    cubic = RuntimeSettings()
    cubic.fit_to_model(card({"training": {"config": {"beta": 8.0, "phase_function": "cubic"}}}))
    assert cubic.limits("beta") == (0.5, 64.0)


def test_defaults_from_a_checkpoint_take_its_trained_beta():
    from pfnn_core.models.pfnn.model import ModelConfig

    assert RuntimeSettings.for_model(card({"training": {"config": {"beta": 5.0}}})).beta == 5.0
    assert RuntimeSettings.for_model(card({}, ModelConfig(10, 10, beta=3.0))).beta == 3.0


def test_assign_from_text_validates_names_kinds_and_ranges():
    settings = RuntimeSettings()
    settings.fit_to_model(card(META))
    assert settings.assign("drift_window", "0") is None and settings.drift_window == 0
    assert settings.assign("foot_locking", "off") is None and settings.foot_locking is False
    assert settings.assign("phase_mode", "network") is None
    note = settings.assign("beta", "64")
    assert settings.beta == 16.0 and "4..16" in note
    with pytest.raises(ValueError, match="unknown setting 'betta'; known settings: beta, drift_window"):
        settings.assign("betta", "3")
    with pytest.raises(ValueError, match=r"contact_threshold: 2 is outside its range 0.05..0.99"):
        settings.assign("contact_threshold", "2")
    with pytest.raises(ValueError, match="drift_window: expected an integer"):
        settings.assign("drift_window", "1.5")
    with pytest.raises(ValueError, match="expected true or false"):
        settings.assign("ik_enabled", "maybe")
    with pytest.raises(ValueError, match="expected one of speed, network"):
        settings.assign("phase_mode", "fast")
    with pytest.raises(ValueError, match="outside its range"):
        settings.assign("beta", "nan")


def test_the_bare_network_preset():
    settings = RuntimeSettings.bare_network(card(META))
    assert (settings.root_motion_from_command, settings.drift_window, settings.stand_speed) == (0.0, 0, 0.0)
    assert not (settings.foot_locking or settings.ik_enabled or settings.floor_clamp)
    assert (settings.phase_mode, settings.slow_walk_speed, settings.pose_smoothing) == ("network", 0.0, 0.0)
    assert not (settings.settle_steps or settings.start_from_command)
    assert settings.walk_speed == 1.2 and settings.beta == 8.0  # the rest as for the model
    settings.validate()
    assert "0 = no stand scaling" in RuntimeSettings.__dataclass_fields__["stand_speed"].metadata["help"]


def _style_meta():
    """Two styles with hand-picked statistics: 'slow' has plenty of side-steps, 'brisk' a few seconds."""
    def stats(walk, run, slowest, back, side, side_minutes, back_minutes):
        return {"walk": walk, "run": run, "slowest_walk": slowest, "walk_back": back, "side_step": side,
                "content_minutes": {"walk": 3.0, "walk-left": side_minutes / 2, "walk-right": side_minutes / 2,
                                    "walk-back": back_minutes}}
    return {"gait_speeds": {"walk": 1.1, "run": 2.8},
            "styles": {"names": ["brisk", "slow"],
                       "stats": {"brisk": stats(1.4, 3.4, 1.2, 1.3, 1.5, 0.1, 0.1),
                                 "slow": stats(0.7, 1.4, 0.6, 0.5, 0.8, 0.3, 0.3)}}}


def test_style_speeds_follow_the_style_blend_and_shrink_sparse_side_steps_toward_the_pool():
    meta = _style_meta()
    slow = style_speeds(card(meta), "slow")
    assert (slow["walk_speed"], slow["run_speed"], slow["slow_walk_speed"]) == (0.7, 1.4, 0.6)
    # side-steps pooled by minutes: (0.1 * 1.5 + 0.3 * 0.8) / 0.4 = 0.975; 'slow' has 0.3 min of its own:
    # (0.3 * 0.8 + PRIOR_MINUTES * 0.975) / (0.3 + PRIOR_MINUTES)
    assert slow["side_step_speed"] == pytest.approx((0.3 * 0.8 + PRIOR_MINUTES * 0.975) / (0.3 + PRIOR_MINUTES))
    brisk = style_speeds(card(meta), "brisk")
    assert brisk["side_step_speed"] == pytest.approx((0.1 * 1.5 + PRIOR_MINUTES * 0.975) / (0.1 + PRIOR_MINUTES))
    half = style_speeds(card(meta), [0.5, 0.5])
    assert half["walk_speed"] == pytest.approx(1.05) and half["run_speed"] == pytest.approx(2.4)
    assert half["side_step_speed"] == pytest.approx(0.5 * (slow["side_step_speed"] + brisk["side_step_speed"]))
    assert style_speeds(card(meta), 1) == slow
    with pytest.raises(ValueError, match="unknown style 'fast'.*brisk"):
        style_speeds(card(meta), "fast")
    # without style statistics: the checkpoint's gait speeds, side-steps and backward walks at the walk speed
    plain = style_speeds(card({"gait_speeds": {"walk": 1.2, "run": 3.3}}))
    assert plain == {"walk_speed": 1.2, "run_speed": 3.3, "side_step_speed": 1.2, "walk_back_speed": 1.2}


def test_a_style_change_sets_the_styles_speeds_and_what_reset_restores():
    meta = _style_meta()
    settings = RuntimeSettings.for_model(card(meta), style="brisk")
    assert settings.walk_speed == 1.4 and settings.slow_walk_speed == 1.2
    settings.fit_to_model(card(meta))
    settings.apply_style(card(meta), "slow")
    assert (settings.walk_speed, settings.run_speed, settings.slow_walk_speed) == (0.7, 1.4, 0.6)
    settings.walk_speed, settings.beta = 0.9, 5.0
    settings.reset()  # "Reset to defaults": the current style's speeds, the model's values for the rest
    assert (settings.walk_speed, settings.run_speed, settings.beta) == (0.7, 1.4, 8.0)
    bare = RuntimeSettings.bare_network(card(meta))
    bare.apply_style(card(meta), "slow")
    assert bare.walk_speed == 0.7 and bare.slow_walk_speed == 0.0  # the bare network never warps


def test_a_setting_assigned_by_name_stays_over_a_style_change():
    meta = {"styles": {"names": ["a", "b"], "stats": {"a": {"walk": 0.7, "run": 1.4}, "b": {"walk": 1.3, "run": 3.0}}}}
    settings = RuntimeSettings.for_model(card(meta), style="a")
    settings.assign("walk_speed", "0.9")  # pfnn-drive --set walk_speed=0.9
    settings.apply_style(card(meta), "b")
    assert settings.walk_speed == pytest.approx(0.9) and settings.run_speed == pytest.approx(3.0)
    with pytest.raises(ValueError):
        settings.assign("run_speed", "fast")  # a failed assignment does not pin the field
    settings.apply_style(card(meta), "a")
    assert settings.run_speed == pytest.approx(1.4)




def test_a_walks_past_rid_of_the_run_is_a_live_setting_off_by_default_and_never_in_the_bare_network():
    """Measured and left off (assets/models/default.md, "Both feet up after a run"): a setting the panel
    and `--set` switch on; the bare network (what the evaluation judges as the model alone) never has it."""
    settings = RuntimeSettings.for_model(card({}))
    assert settings.walk_past_after_run is False
    settings.assign("walk_past_after_run", "true")
    assert settings.walk_past_after_run is True
    assert RuntimeSettings.bare_network(card({})).walk_past_after_run is False
