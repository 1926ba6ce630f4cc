"""The live runtime: one simulation tick of B characters, whatever motion model drives them.

By job: `settings` (every live tunable), `command` (input -> `Command`), `trajectory` (command springs and
the planned trajectory), `root_motion` (drift correction, stand amount, phase advance, the root's motion),
`pose` (prediction -> world pose) and `ik` / `settle` (foot pins, leg IK, settling steps), `guards`,
`history`, `state` (`CharacterState`), `tick` (`step`), `character` (`Character`: model + settings + state),
`timestep` (the fixed-timestep accumulator). Nothing here reaches training or dataset building."""
