"""Motion models behind one interface (`base.MotionModel`, docs/MODELS.md): the PFNN, and the typed model
card and checkpoints every kind shares."""
