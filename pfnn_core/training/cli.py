"""The `pfnn-train` command (`python -m pfnn_core.training.cli`, which torchrun runs too): the command
line -> `TrainConfig`, the data checked and loaded before any epoch (each machine's first process builds
the dataset into the cache, the others read it back) and reported, a progress bar, Ctrl+C (and a
scheduler's SIGTERM under torchrun) stopping after a batch with a resumable checkpoint.

`--kind` picks the training function from `KINDS`, one entry per model kind.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Callable

from pfnn_core.data import checks
from pfnn_core.models.matching import build as matching_build
from pfnn_core.models.mvae import train as mvae_train
from pfnn_core.models.registry import load_model
from pfnn_core.motion import bvh
from pfnn_core.threads import set_thread_counts
from pfnn_core.training import distributed, loop
from pfnn_core.training.config import DEFAULT_OUT, TrainConfig, TrainingError, TrainResult
from pfnn_core.training.dataset import load_training_data
from pfnn_core.training.kind_fit import kind_fit, kind_fit_lines
from pfnn_core.training.resume import resume_config, resumed_kind

# Model kind -> its training function, (config, progress, stop, data) -> TrainResult.
KINDS: dict[str, Callable[..., TrainResult]] = {"pfnn": loop.train, "mvae": mvae_train.train,
                                                "matching": matching_build.train}
# Kinds that read the BVH files themselves: no PFNN dataset is built for them (their `data` is None).
OWN_DATA_KINDS = ("matching",)
BUILT_KINDS = ("matching",)  # kinds whose "training" is a build: no epochs, no batches, no validation loss


def _model_kind(text: str) -> str:
    if text not in KINDS:
        raise argparse.ArgumentTypeError(f"unknown model kind '{text}' (known: {', '.join(KINDS)})")
    return text


def _oversample_factor(text: str) -> tuple[str, int]:
    kind, _, factor = text.partition("=")
    try:
        return kind.strip(), int(factor)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected KIND=N (e.g. side=4), got '{text}'") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pfnn-train", description="Train a motion model on a folder of BVH clips.")
    parser.add_argument("data", nargs="*", help="BVH folder(s) or files (default assets/bvh)")
    parser.add_argument("--kind", type=_model_kind, default=None,
                        help=f"what to train: {', '.join(KINDS)} (default pfnn; with --resume the checkpoint's own)")
    parser.add_argument("--out", help=f"best model path (default {DEFAULT_OUT})")
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--hidden", type=int, dest="hidden_size")
    parser.add_argument("--phase-function", choices=["rbf", "cubic"])
    parser.add_argument("--kernels", type=int, dest="num_kernels")
    parser.add_argument("--beta", type=float)
    parser.add_argument("--beta-range", type=float, nargs=2, metavar=("LO", "HI"),
                        help="rbf: draw beta per batch log-uniformly from [LO, HI] (default 4 16)")
    parser.add_argument("--fixed-beta", action="store_const", const=(), dest="beta_range",
                        help="rbf: always train at --beta")
    parser.add_argument("--labels", help="labelling rule: 'filename' (default: {set}_{content}_{style}_{id}), "
                        "'folder' (one folder per style) or a JSON/CSV table of file -> style, content")
    parser.add_argument("--dropout", type=float)
    parser.add_argument("--lr", type=float)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--rollout", type=int, dest="rollout_length")
    parser.add_argument("--patience", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--threads", type=int, help="CPU threads for BLAS and torch (default: all cores, shared "
                        "among the processes torchrun starts on one machine)")
    parser.add_argument("--no-mirror", action="store_false", dest="mirror", default=None)
    parser.add_argument("--init", metavar="MODEL",
                        help="fine-tune: start from this model's weights and normalisation (same size and data layout)")
    parser.add_argument("--oversample", metavar="KIND=N", action="append", type=_oversample_factor,
                        help="feed each training row of a motion kind (side, back, run, walk) N times per epoch; "
                             "repeatable")
    parser.add_argument("--resume", metavar="CKPT", help="continue from a *.resume.safetensors checkpoint")
    parser.add_argument("--workers", type=int, default=0,
                        help="processes building the dataset's clips in parallel (default 0: one per CPU core)")
    parser.add_argument("--no-cache", action="store_false", dest="cache", default=None,
                        help="build the dataset afresh and do not store it in the dataset cache")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="dataset cache folder (default $PFNN_DATASET_CACHE, else ~/.cache/pfnn-viewer/datasets)")
    return parser


def _run_kind(args: argparse.Namespace) -> str:
    """The kind to train: --kind, or a resumed checkpoint's own (ValueError when the two disagree)."""
    if not args.resume:
        return args.kind or "pfnn"
    kind = resumed_kind(args.resume)
    if kind not in KINDS or kind in BUILT_KINDS:
        raise ValueError(f"{args.resume}: a {kind} checkpoint cannot be resumed")
    if args.kind and args.kind != kind:
        raise ValueError(f"{args.resume}: a {kind} checkpoint, not {args.kind} (leave out --kind to resume it)")
    return kind


def _config_from_args(args: argparse.Namespace) -> TrainConfig:
    overrides = {name: value for name, value in vars(args).items() if name not in ("data", "resume", "kind")}
    if args.oversample is not None:
        overrides["oversample"] = dict(args.oversample)
    if args.data:
        overrides["data"] = list(args.data)
    if args.resume and args.kind != "pfnn":  # the kind's own trainer reads its stored settings
        data = mvae_train.resumed_config(args.resume).data
        return replace(TrainConfig(), resume=str(args.resume), data=list(data),
                       **{k: v for k, v in overrides.items() if v is not None and k != "data"})
    if args.resume:
        return resume_config(args.resume, **overrides)
    return replace(TrainConfig(), **{k: v for k, v in overrides.items() if v is not None})


def default_threads(environ=None) -> int:
    """The CPU threads of one training process: every core, shared among the processes torchrun starts on
    this machine (LOCAL_WORLD_SIZE), so several processes never oversubscribe the cores."""
    environ = os.environ if environ is None else environ
    processes = max(int(environ.get("LOCAL_WORLD_SIZE") or 1), 1)
    return max((os.cpu_count() or 1) // processes, 1)


def _check_data_paths(paths: list[str]) -> None:
    for path in map(Path, paths):
        if not path.exists():
            raise ValueError(f"{path}: no such file or folder")
        if path.is_dir() and not bvh.find_files(path):
            raise ValueError(f"{path}: folder contains no .bvh or .bvh.gz files")


def _prepare_data(config: TrainConfig, context: distributed.Context, on_build=None):
    """Everything checked before any epoch, then the dataset: the data paths, the output path (rank 0 writes
    it), the data checks (in the build, kept in the cache). Each machine's first process builds the
    dataset into the cache; the others read it back."""
    def prepare():
        _check_data_paths(config.data)
        if context.is_main:
            message = checks.errors_message(checks.output_findings(config.out))
            if message:
                raise ValueError(message)
        return load_training_data(config, progress=on_build if context.local_rank == 0 else None)

    return distributed.first_on_each_machine(prepare, context)


def _dataset_report(data, config: TrainConfig, context: distributed.Context) -> list[str]:
    """What pfnn-train prints when it starts: where the dataset came from, its size, the data checks'
    warnings, and the processes taking part."""
    summary = getattr(data, "summary", None) or {}
    lines = []
    if summary.get("cache") == "hit":
        lines.append(f"pfnn-train: dataset read from the cache in {summary.get('cache_load_seconds', 0):.1f} s, "
                     f"not rebuilt ({summary.get('cache_folder')})")
    elif "build_seconds" in summary:
        where = {"stored": f"; cached in {summary.get('cache_folder')}",
                 "not stored": "; the cache could not be written"}.get(summary.get("cache"), " (cache off)")
        lines.append(f"pfnn-train: features built in {summary['build_seconds']:.1f} s with "
                     f"{summary.get('workers', 1)} worker process(es){where}")
    clips = len(data.clip_names)
    minutes = f", {summary['minutes']:.1f} min of motion" if "minutes" in summary else ""
    mirrored = " (mirrored copies included)" if summary.get("mirror") else ""
    lines.append(f"pfnn-train: dataset: {clips} clips{minutes}, {len(data.x):,} samples{mirrored}")
    lines += [str(checks.Finding.from_dict(item)) for item in summary.get("findings", [])]
    if context.distributed:
        lines.append(f"pfnn-train: {context.world_size} processes ({context.backend}); global batch "
                     f"{config.batch_size}, about {math.ceil(config.batch_size / context.world_size)} rows per process")
    return lines



def _say(context: distributed.Context, text: str) -> None:
    if context.is_main:
        print(text, file=sys.stderr)


class _BuildBar:
    """The dataset build's progress bar (clips done of all), made at the first call."""

    def __init__(self):
        self.bar = None

    def __call__(self, done: int, total: int) -> None:
        from tqdm import tqdm

        if self.bar is None:
            self.bar = tqdm(total=total, unit="clip", desc="features", dynamic_ncols=True)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _progress_bar(context: distributed.Context, shown: bool = True):
    """(the training progress bar, the `progress` callback that moves it); rank 0 alone shows it."""
    from tqdm import tqdm

    bar = tqdm(total=1, unit="batch", dynamic_ncols=True, disable=not (shown and context.is_main))

    def on_progress(info: dict) -> None:
        bar.total = info["total_steps"]
        bar.n = info["step"]
        postfix = {"epoch": f"{info['epoch']}/{info['epochs']}", "loss": f"{info['train_loss']:.4f}"}
        if info["val_loss"] is not None:
            postfix["val"] = f"{info['val_loss']:.4f}"
        if info["world_size"] > 1:
            postfix["processes"] = info["world_size"]
        bar.set_postfix(postfix, refresh=False)
        bar.refresh() if info["event"] != "batch" else bar.update(0)

    return bar, on_progress


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event, bar, context: distributed.Context):
    """While training: the first Ctrl+C sets `stop` (the run stops after its batch, with a resumable
    checkpoint), a second raises KeyboardInterrupt. Under torchrun, Ctrl+C reaches the workers as the
    SIGINT torchrun forwards, and a scheduler's SIGTERM (preemption) stops as gracefully; every rank agrees
    on the batch to stop at (`loop.train`). Signal handlers can only be set from the main thread."""
    def on_interrupt(signum, frame) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        if context.is_main:
            bar.write("pfnn-train: stopping after this batch (Ctrl+C again to abort without saving)")

    stop_signals = [signal.SIGINT] + ([signal.SIGTERM] if context.distributed else [])
    previous = ({sig: signal.signal(sig, on_interrupt) for sig in stop_signals}
                if threading.current_thread() is threading.main_thread() else {})
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _load(args: argparse.Namespace) -> tuple[TrainConfig, distributed.Context, object] | int:
    """(config, process context, dataset) from the command line, or the exit code after an error (2) or an
    interrupt (130) while loading."""
    context = distributed.Context()
    build_bar = _BuildBar()
    try:
        args.kind = _run_kind(args)
        config = _config_from_args(args)
        config = replace(config, threads=set_thread_counts(config.threads or default_threads()))
        context = distributed.setup(config.device)
        _say(context, f"pfnn-train: loading {', '.join(config.data)}")
        data = None if args.kind in OWN_DATA_KINDS else _prepare_data(config, context, build_bar)
    except (ValueError, OSError) as error:
        _say(context, f"pfnn-train: error: {error}")
        distributed.shutdown(context)
        return 2
    except KeyboardInterrupt:
        _say(context, "pfnn-train: interrupted while loading data")
        return 130
    finally:
        build_bar.close()
    return config, context, data


def _finished(result: TrainResult, context: distributed.Context, kind: str = "pfnn") -> int:
    """Say how the run ended; the exit code (130 when stopped, else 0)."""
    if kind in BUILT_KINDS and not result.stopped:  # the build said its size and time already
        _say(context, f"pfnn-train: model: {result.out_path}")
        return 0
    if result.stopped:
        again = " under torchrun with the same options" if context.distributed else ""
        _say(context, f"pfnn-train: stopped; resumable checkpoint saved to {result.resume_path}\n"
                      f"  resume with: pfnn-train --resume {result.resume_path}{again}")
        return 130
    best = f"{result.best_val_loss:.4f} at epoch {result.best_epoch}" if result.best_epoch else "none"
    _say(context, f"pfnn-train: {result.epochs_completed} epochs in {result.wall_s:.0f} s"
                  f"{' (early stop)' if result.early_stopped else ''}; best validation loss {best}; "
                  f"model: {result.out_path}")
    return 0


def _fit_report(result: TrainResult, data, context: distributed.Context) -> list[str]:
    """The trained PFNN's one-step fit per motion kind of its data (`kind_fit`), for the main process."""
    if data is None or result.out_path is None or result.stopped or not context.is_main:
        return []
    model = load_model(result.out_path, device="cpu", backend="torch")
    return kind_fit_lines(kind_fit(model.predict, data, model.norm_np["y_std"]))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    loaded = _load(args)
    if isinstance(loaded, int):
        return loaded
    config, context, data = loaded
    for line in _dataset_report(data, config, context) if data is not None else []:
        _say(context, line)

    bar, on_progress = _progress_bar(context, shown=args.kind not in BUILT_KINDS)
    stop = threading.Event()
    try:
        with _stop_on_signals(stop, bar, context):
            result = KINDS[args.kind](config, progress=on_progress if context.is_main else None, stop=stop, data=data)
    except (ValueError, TrainingError) as error:  # raised on every rank alike
        bar.close()
        _say(context, f"pfnn-train: error: {error}")
        distributed.shutdown(context)
        return 2 if isinstance(error, ValueError) else 1
    except KeyboardInterrupt:
        bar.close()
        _say(context, "pfnn-train: aborted; the last epoch's resumable checkpoint is kept")
        return 130  # without waiting for the other processes: torchrun ends them
    distributed.shutdown(context)
    bar.close()
    code = _finished(result, context, args.kind)
    for line in _fit_report(result, data, context) if args.kind == "pfnn" else []:
        _say(context, line)
    return code


if __name__ == "__main__":
    sys.exit(main())
