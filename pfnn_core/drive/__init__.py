"""Headless scripted drives (`pfnn-drive`): a JSON script of timed stick segments run through the runtime,
written as BVH and a per-tick log."""
