"""Training a motion model from BVH folders: config, losses, schedules, resumable checkpoints, the loop,
several processes under torchrun (`distributed`), and the `pfnn-train` command."""
