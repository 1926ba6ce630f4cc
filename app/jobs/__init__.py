"""Work the viewer does beside the frame loop, each reporting into its panel: `training.py` (the
background training thread) and `training_runner.py` (its progress into the Train section), `capture.py`
(PNG and MP4 files), `recorder.py` (the live character to BVH), `capture_control.py` (starting and
stopping those for the viewer) and `edits.py` (the clip editor's actions)."""
