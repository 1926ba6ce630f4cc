"""Honest motion-quality evaluation (`pfnn-eval`): measure the network, not the controller.

Every measure is defined in docs/EVALUATION.md. The package, by job:
- `suite`: the built-in drives and running them as two subjects, "network" (the bare network) and
  "runtime" (everything as shipped);
- `measures`: the body's measures as pure functions (skating against the capture's floor, realism,
  pops, floating and sunk feet, stance and settling after a stop, contact F1, phase drift);
- `reference`: the training mocap measured with the same code, and the pose database;
- `analysis`: the measures applied to each drive, with their targets (report rows);
- `rollouts`: the network alone on held-out clips (contacts, phase, trajectory correlation);
- `latency` and `counterfactual`: response latency, each input change against the same drive from the
  same state with the input held (a drive run again with branches; against its first run, determinism);
  `acceleration_noise` and `turning_slip`: their formulas; `controller_rows`: these four as report rows;
- `report`: report.md, results.json, plots and filmstrips;
- `cli`: `evaluate()` and the `pfnn-eval` command.

`evaluate` and `main` live in `pfnn_core.evaluation.cli`.
"""
