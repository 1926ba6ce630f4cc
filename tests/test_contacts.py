"""Foot joints from names, contact labels from height AND speed, blip filter."""

import numpy as np
import pytest

from pfnn_core.motion.contacts import filter_blips, foot_contacts
from pfnn_core.skeleton import foot_joints, joint_side

BUNDLED = ["joint_Root", "Hips", "Spine", "Chest", "Neck", "Head", "Shoulder_L", "UpperArm_L", "LowerArm_L",
           "Hand_L", "Shoulder_R", "UpperArm_R", "LowerArm_R", "Hand_R", "UpperLeg_L", "LowerLeg_L", "Foot_L",
           "Toes_L", "UpperLeg_R", "LowerLeg_R", "Foot_R", "Toes_R"]


def test_foot_joints_bundled_names():
    feet = foot_joints(BUNDLED)
    assert feet == {"left_foot": 16, "left_toe": 17, "right_foot": 20, "right_toe": 21}


@pytest.mark.parametrize("names, expected", [
    (["Hips", "LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase", "LeftToe_End",
      "RightUpLeg", "RightLeg", "RightFoot", "RightToeBase"], (3, 4, 8, 9)),
    (["pelvis", "L_Hip", "L_Knee", "L_Ankle", "L_Foot", "R_Hip", "R_Knee", "R_Ankle", "R_Foot"], (3, 4, 7, 8)),
    (["root", "lThigh", "lShin", "lFoot", "lToe", "rThigh", "rShin", "rFoot", "rToe"], (3, 4, 7, 8)),
])
def test_foot_joints_other_conventions(names, expected):
    feet = foot_joints(names)
    assert (feet["left_foot"], feet["left_toe"], feet["right_foot"], feet["right_toe"]) == expected


def test_foot_joints_without_toes_uses_child():
    names = ["Hips", "LeftLeg", "LeftFoot", "LeftFootEnd", "RightLeg", "RightFoot", "RightFootEnd"]
    parents = [-1, 0, 1, 2, 0, 4, 5]
    feet = foot_joints(names, parents)
    assert feet["left_toe"] == 3 and feet["right_toe"] == 6


def test_joint_side():
    assert joint_side("LowerLeg_L") == "left" and joint_side("LHipJoint") == "left"
    assert joint_side("rFoot") == "right" and joint_side("Hips") is None and joint_side("LUMBAR") is None


def test_foot_joints_missing_raises():
    with pytest.raises(ValueError, match="foot"):
        foot_joints(["Hips", "Spine"])


def test_contact_needs_low_and_slow():
    dt, frames = 1 / 60, 60
    positions = np.zeros((frames, 3, 3))
    positions[:, 1, 1] = 0.2                      # joint 1: high, still -> never
    positions[:, 2, 0] = np.arange(frames) * 0.02  # joint 2: low, 1.2 m/s -> never
    positions[:, :, 1] += 0.04                    # own ground level is not zero
    positions[:30, 1, 1] = 0.04                   # joint 1 low during first half... but its ground is then 0.04
    contact = foot_contacts(positions, dt, 0.03, 0.4)
    assert contact[:, 0].all()
    assert contact[:29, 1].all() and not contact[31:, 1].any()
    assert not contact[:, 2].any()


def test_explicit_ground_heights():
    positions = np.zeros((10, 1, 3))
    positions[..., 1] = 0.10
    assert not foot_contacts(positions, 1 / 60, 0.03, 0.4, ground_heights=np.array([0.0])).any()
    assert foot_contacts(positions, 1 / 60, 0.03, 0.4, ground_heights=np.array([0.09])).all()


def test_blip_filter_removes_one_frame_blips_keeps_ends():
    contact = np.array([1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 1], bool)
    filtered = filter_blips(contact, 3)
    expected = np.array([1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1], bool)
    np.testing.assert_array_equal(filtered, expected)


def test_blip_in_labels_is_filtered():
    dt, frames = 1 / 60, 40
    positions = np.zeros((frames, 1, 3))
    positions[:, 0, 1] = 0.2
    positions[:10, 0, 1] = 0.0
    positions[20, 0, 1] = 0.0  # a one-frame dip: not a contact
    contact = foot_contacts(positions, dt, 0.03, 100.0)
    assert contact[:10, 0].all() and not contact[10:, 0].any()
