"""Training a motion model from BVH folders, one file per job: `config` (what a run is asked for and gives
back), `dataset` (loading through the cache, split, normalisation, what checkpoints record about the data),
`tensors` (the set on the training device), `losses`, `schedules` (lr, beta, feedback, batches,
oversampling), `resume` (resumable state), `loop` (`train`), `distributed` (several processes under
torchrun) and `cli` (the `pfnn-train` command, one training function per model kind)."""
