"""Background training: one worker thread running `run_training` (check the resume file, load the data,
then `pfnn_core.training.loop.train(config, progress, stop, data)`), a queue of progress dicts for the UI
thread, and a stop Event that is honoured at every stage (between data files, between batches).

`training_config` checks what can be checked at once (the BVH folder has files, the output can be
written, the resume file exists) before any thread starts, so a bad form fails in the same frame.
The worker limits torch to one thread so the viewer keeps its frame rate on small machines.
"""

import queue
import threading
import time
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from app.paths import resolve, resolve_existing, writable_file_problem
from app.ui.messages import user_error


class StoppedEarly(Exception):
    """The stop flag was set before training began (while checking or loading data)."""


TRAINED_KINDS = {"pfnn": "PFNN", "mvae": "Motion VAE"}  # kinds the Train section trains (matching is a build)
# The form's learning rate for each kind until the user types one: the kinds' own config defaults
# (`TrainConfig.lr`, `MVAETrainConfig.lr`; a test keeps them equal).
DEFAULT_LEARNING_RATES = {"pfnn": 1e-3, "mvae": 5e-4}


def training_config(form, resume: bool, work_dir):
    """The run's config from the Train panel (`app.ui.state.TrainPanel`): a PFNN's
    `pfnn_core.training.config.TrainConfig` or a motion VAE's `MVAETrainConfig` (its VAE and policy
    epochs, hidden size and learning rate from the form, the rest its defaults), paths resolved against
    the work folder; one torch thread so the viewer keeps its frame rate. Raises ValueError saying what
    is wrong with the form (no BVH files, an output that cannot be written, no resume file)."""
    from pfnn_core.data.dataset import bvh_paths
    from pfnn_core.models.mvae.train import MVAETrainConfig, resumed_config
    from pfnn_core.training.config import TrainConfig
    from pfnn_core.training.resume import resume_path_for, resumed_kind

    if not form.bvh_dir.strip():
        raise ValueError("choose a BVH folder")
    data = resolve_existing(form.bvh_dir, work_dir)
    bvh_paths(data)  # ValueError naming the folder when it is missing or holds no BVH file
    if not form.out.strip():
        raise ValueError("choose where to save the model ('Save to')")
    out = resolve(form.out, work_dir)
    if not out.name.endswith(".safetensors"):
        out = out.with_name(out.name + ".safetensors")
    for target in (out, resume_path_for(out)):
        problem = writable_file_problem(target)
        if problem:
            raise ValueError(f"Save to: {problem}")
    resume_from = None
    if resume:
        resume_from = resolve_existing(form.resume_path, work_dir) if form.resume_path.strip() else resume_path_for(out)
        if not resume_from.is_file():
            raise ValueError(f"nothing to resume: no resumable checkpoint at {resume_from} (a run saves one "
                             f"next to 'Save to' at every epoch and when stopped)")
    if resume_from:
        kind = resumed_kind(resume_from)
        if kind != form.kind:
            raise ValueError(f"{resume_from}: a {TRAINED_KINDS.get(kind, kind)} run's checkpoint; choose that "
                             f"Model kind to resume it")
        if kind == "mvae":  # the stopped run's own settings, as pfnn-train --resume takes them
            return replace(resumed_config(resume_from), threads=1)
    if form.kind == "mvae":
        return MVAETrainConfig(data=[str(data)], out=str(out), hidden=int(form.hidden), vae_epochs=int(form.epochs),
                               policy_epochs=int(form.policy_epochs), lr=float(form.learning_rate), threads=1)
    return TrainConfig(data=[str(data)], out=str(out), hidden_size=int(form.hidden),
                       phase_function=form.phase_function, num_kernels=int(form.kernels), beta=float(form.beta),
                       epochs=int(form.epochs), lr=float(form.learning_rate), threads=1,
                       resume=str(resume_from) if resume_from else None)


def run_training(config, progress: Callable[[dict], None], stop: threading.Event):
    """The worker's stages, each stoppable: check the resume file, load the data (the stop flag is
    read after every file), train. Raises StoppedEarly when stopped before training began. A motion VAE
    loads its own data and checks its own resume file (`pfnn_core.models.mvae.train.train`)."""
    from pfnn_core.models.mvae.train import MVAETrainConfig
    from pfnn_core.models.mvae.train import train as train_mvae
    from pfnn_core.training.dataset import load_training_data
    from pfnn_core.training.loop import train
    from pfnn_core.training.resume import resume_config

    if isinstance(config, MVAETrainConfig):
        progress({"event": "loading", "files_done": 0, "files": None})
        return train_mvae(config, progress=progress, stop=stop)
    if config.resume:
        progress({"event": "checking", "path": config.resume})
        resume_config(config.resume)  # ValueError when the file holds no training state
    if stop.is_set():
        raise StoppedEarly("checking the resume file")

    def on_file(done: int, total: int) -> None:
        progress({"event": "loading", "files_done": done, "files": total})
        if stop.is_set():
            raise StoppedEarly("loading data")

    progress({"event": "loading", "files_done": 0, "files": None})
    data = load_training_data(config, progress=on_file)  # labelled, through the dataset cache, like pfnn-train
    if stop.is_set():
        raise StoppedEarly("loading data")
    return train(config, progress=progress, stop=stop, data=data)


@dataclass
class TrainingJob:
    """Runs `work(progress, stop)` in a daemon thread; the UI polls `drain()` every frame."""
    work: Callable[[Callable[[dict], None], threading.Event], Any]
    stop_event: threading.Event = field(default_factory=threading.Event)
    updates: queue.Queue = field(default_factory=queue.Queue)
    thread: threading.Thread | None = None
    result: Any = None
    error: str | None = None
    started_at: float = 0.0
    finished: bool = False

    def start(self) -> None:
        self.started_at = time.perf_counter()
        self.thread = threading.Thread(target=self._run, name="pfnn-training", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            import torch
            torch.set_num_threads(1)
        except ImportError:
            pass
        try:
            with _own_cuda_stream():
                self.result = self.work(self.updates.put, self.stop_event)
        except StoppedEarly as stopped:
            self.updates.put({"event": "stopped_early", "stage": str(stopped)})
        except Exception as error:  # shown in the panel; the viewer keeps running
            self.error = user_error(error)
            self.updates.put({"error": self.error, "traceback": traceback.format_exc()})
        finally:
            self.finished = True
            self.updates.put({"finished": True})

    def stop(self) -> None:
        self.stop_event.set()

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def drain(self) -> list[dict]:
        """Progress dicts posted since the last call."""
        items = []
        while True:
            try:
                items.append(self.updates.get_nowait())
            except queue.Empty:
                return items

    def join(self, timeout: float | None = None) -> None:
        if self.thread is not None:
            self.thread.join(timeout)


def _own_cuda_stream():
    """Training's kernels on a stream of their own, so the viewer's network step (on its own stream)
    never queues behind them; a no-op without CUDA."""
    import contextlib

    try:
        import torch
    except ImportError:
        return contextlib.nullcontext()
    if not torch.cuda.is_available():
        return contextlib.nullcontext()
    return torch.cuda.stream(torch.cuda.Stream())


def eta_seconds(elapsed: float, fraction_done: float) -> float | None:
    """Remaining time assuming a constant rate; None before any progress."""
    if fraction_done <= 1e-6:
        return None
    return elapsed * (1.0 - fraction_done) / fraction_done
