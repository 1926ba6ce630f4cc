import dataclasses

import pytest

from pfnn_core.settings import RuntimeSettings, tunable_fields


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
                 "lock_fade_halflife", "ik_enabled", "stand_speed", "root_motion_from_command"):
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


def test_speeds_from_checkpoint_meta():
    settings = RuntimeSettings.from_checkpoint_meta({"gait_speeds": {"walk": 1.2, "run": 3.3}})
    assert settings.walk_speed == 1.2 and settings.run_speed == 3.3
    assert RuntimeSettings.from_checkpoint_meta({}).walk_speed == RuntimeSettings().walk_speed


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
