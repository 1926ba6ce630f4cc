"""Motion capture as arrays: BVH I/O (`bvh`), kinematics (`kinematics`), foot contacts (`contacts`), gait
phase (`phase`), the control root and its trajectory (`root`), and one clip's root, contacts and phase
measured together (`gait_labels`)."""
