"""Background training: one worker thread running `pfnn_core.train.train(config, progress, stop)`, a
queue of progress dicts for the UI thread, and a stop Event.

The worker limits torch to one thread so the viewer keeps its frame rate on small machines.
"""

import queue
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable


def train_config_from_form(form, resume: bool = False):
    """`pfnn_core.train.TrainConfig` from the Train panel (`ui.TrainPanel`); one torch thread so the
    viewer keeps its frame rate; `resume` continues from the resumable state saved next to `form.out`."""
    from pfnn_core.train import TrainConfig, resume_path_for

    return TrainConfig(data=[form.bvh_dir], out=form.out, hidden_size=int(form.hidden),
                       phase_function=form.phase_function, num_kernels=int(form.kernels), beta=float(form.beta),
                       epochs=int(form.epochs), lr=float(form.learning_rate), threads=1,
                       resume=str(resume_path_for(form.out)) if resume else None)


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
        except Exception as error:  # shown in the panel; the viewer keeps running
            self.error = f"{type(error).__name__}: {error}"
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
