"""The physics layer: a simulated body (MuJoCo) that tracks the motion the runtime shows, with real
floor contact, pushes, and a kinematic-versus-physics comparison (docs/PHYSICS.md).

    from pfnn_core.physics.layer import physics_for_character
    tracker = physics_for_character(character)                 # PhysicsTracker for its B characters
    pose = tracker.step(state.world_joint_pos, state.world_joint_rot, dt)    # SimulatedPose
    tracker.push([30, 0, 0], characters=[0])                  # N s at the chest, over the next tick
    tracker.settings.root_help = 0.5                          # PhysicsSettings: live, clamped each tick

The package, by job (importing it imports no MuJoCo; the modules that need it do):
- `settings`: `PhysicsSettings`, every live tunable with its range;
- `events`: pushes in drive scripts (`"events": [{"at": t, "push": [x, y, z]}]`);
- `fit`: what the body learns from the mocap (each joint's zero and range, the soles' frames), cached;
- `geometry`: the body's shapes from the bone lengths (capsules, foot boxes, pairs that never collide);
- `mjcf`: the MJCF text of a body, and the hash it is cached by;
- `body`: `PhysicsBody`, the compiled model and how the settings are written into it;
- `tracker`: `PhysicsTracker`, B bodies following the kinematic poses tick by tick;
- `layer`: making a tracker for a skeleton or a `runtime.Character`;
- `replay`: tracking a recorded motion; `drive`: `pfnn-drive --physics`;
- `measures`, `evaluation`: the physics measures and `pfnn-eval --physics`.
"""
