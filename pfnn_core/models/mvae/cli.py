"""`python -m pfnn_core.models.mvae.cli`: train a motion VAE with every option of `MVAETrainConfig`
on the command line (`pfnn-train --kind mvae` takes the shared options only)."""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from dataclasses import fields

from pfnn_core.models.mvae.train import MVAETrainConfig, train


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mvae-train", description="Train a motion VAE and its control policy.")
    parser.add_argument("data", nargs="*", help="BVH folder(s) or files (default assets/bvh)")
    for item in fields(MVAETrainConfig):
        if item.name == "data":
            continue
        flag = "--" + item.name.replace("_", "-")
        if item.type in ("bool", bool):
            parser.add_argument(flag, type=lambda text: text.lower() in ("1", "true", "yes", "on"), dest=item.name)
        else:
            kind = {"int": int, "float": float}.get(str(item.type), str)
            parser.add_argument(flag, type=kind, dest=item.name)
    return parser


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    args = _parser().parse_args(argv)
    values = {name: value for name, value in vars(args).items() if value is not None and name != "data"}
    if args.data:
        values["data"] = list(args.data)
    config = MVAETrainConfig.from_dict(values)
    stop = threading.Event()

    def progress(info: dict) -> None:
        if info["event"] == "epoch":
            print(f"mvae-train: epoch {info['epoch']}/{info['epochs']} ({info['stage']}) "
                  f"val {info['val_loss']:.4f} active {info['active_dimensions']} wall {info['wall_s']:.0f} s",
                  file=sys.stderr, flush=True)

    def on_interrupt(signum, frame) -> None:  # the first Ctrl+C (or SIGTERM) stops after the batch, resumable
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print("mvae-train: stopping after this batch (Ctrl+C again to abort without saving)", file=sys.stderr)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_interrupt)
    try:
        result = train(config, progress=progress, stop=stop)
    except KeyboardInterrupt:
        print("mvae-train: aborted; the last resumable checkpoint is kept", file=sys.stderr)
        return 130
    if result.stopped:
        print(f"mvae-train: stopped; resume with --resume {result.resume_path}", file=sys.stderr)
        return 130
    print(f"mvae-train: {result.epochs_completed} epochs in {result.wall_s:.0f} s; model {result.out_path}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
