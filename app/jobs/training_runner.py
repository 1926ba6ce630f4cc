"""The viewer's training run: a `TrainingJob` started from the Train section's form, stopped from it,
and its progress updates turned into the section's status line, progress bar, ETA and loss curves (no
stale line or bar is left once it ends)."""

from pathlib import Path

from app.jobs.training import TrainingJob, run_training, training_config
from app.paths import display_path, free_path
from app.ui.messages import user_error


def _keep_earlier_model(train, config) -> None:
    """A new run never replaces the model an earlier run saved at 'Save to': it saves to the next free
    name ('NAME-2.safetensors'), which the form then shows, and the section says so."""
    out = Path(config.out)
    target = free_path(out)
    if target == out:
        return
    config.out = str(target)
    train.out = display_path(str(target))
    train.notice = f"{out.name} holds an earlier model: this run saves to {target.name}"


class TrainingRunner:
    """At most one training job at a time, and what the Train section shows of it."""

    def __init__(self):
        self.job: TrainingJob | None = None

    @property
    def running(self) -> bool:
        return self.job is not None and self.job.running

    def start(self, train, resume: bool, work_dir) -> None:
        """Start a run from the form `train` (a `TrainPanel`); a form that cannot run says why at once and
        starts nothing."""
        if self.running:
            return
        try:
            config = training_config(train, resume, work_dir)
        except Exception as error:
            train.error, train.status, train.progress, train.eta_s = user_error(error), "", 0.0, None
            return
        train.error, train.status, train.progress, train.eta_s, train.running = "", "Starting...", 0.0, None, True
        train.notice = ""
        if not resume:
            _keep_earlier_model(train, config)
        if not resume:
            train.epochs_x, train.train_loss, train.val_loss, train.term_loss = [], [], [], {}
        train.plot_epochs = int(config.epochs)
        self.job = TrainingJob(lambda progress, stop: run_training(config, progress, stop))
        self.job.start()

    def stop(self, train) -> None:
        if self.running:
            self.job.stop()
            train.status = "Stopping..."

    def poll(self, train) -> str | None:
        """The job's updates since the last call into the section; once the job has ended, its outcome.
        Returns the checkpoint to run now (a finished run with "Use the model when training finishes"
        on), else None."""
        job = self.job
        if job is None:
            return None
        stopped_early = None
        for update in job.drain():
            if update.get("event") == "stopped_early":
                stopped_early = update.get("stage", "")
            _show_update(train, update, stopping=job.stop_event.is_set())
        if not job.finished or job.running:
            return None
        self.job = None
        return _show_outcome(train, job, stopped_early)


def _show_update(train, update: dict, stopping: bool) -> None:
    """One progress update into the section (while stopping, the status keeps saying "Stopping...")."""
    event = update.get("event")
    if "error" in update:
        train.error = update["error"]
    if event != "stopped_early" and not stopping:
        if event == "checking":
            train.status = "Checking the resume file..."
        elif event == "loading":
            total = update.get("files")
            train.status = f"Loading data: {update['files_done']}/{total} files" if total else "Loading data..."
    if event == "epoch":
        train.epochs_x.append(float(update["epoch"]))
        train.train_loss.append(float(update["train_loss"]))
        if update.get("val_loss") is not None:
            train.val_loss.append(float(update["val_loss"]))
        for term, value in (update.get("terms") or {}).items():  # a motion VAE's held-out loss per term
            train.term_loss.setdefault(update.get("stage", ""), {}).setdefault(term, []).append(float(value))
    if update.get("total_steps"):
        train.progress = min(1.0, update.get("step", 0) / update["total_steps"])
        train.eta_s = update.get("eta_s")
        if not stopping:
            train.status = f"epoch {update.get('epoch')}/{update.get('epochs')}   loss {update.get('train_loss', 0.0):.4f}"


def _show_outcome(train, job: TrainingJob, stopped_early: str | None) -> str | None:
    """How an ended job ended, in the section; the checkpoint to run now or None."""
    train.running, train.progress, train.eta_s = False, 0.0, None  # no stale bar or ETA
    result = job.result
    if job.error:
        train.status = ""
    elif stopped_early is not None:
        train.status = f"Stopped while {stopped_early}; nothing was trained or saved."
    elif result is not None:
        ending = "Stopped" if getattr(result, "stopped", False) else "Done"
        if getattr(result, "out_path", None):
            train.result_path = str(result.out_path)
            train.status = run_summary(result, train.plot_epochs)
        else:
            train.status = f"{ending} before the first epoch ended; resumable state: {result.resume_path}"
        if train.auto_swap and ending == "Done" and train.result_path:
            return train.result_path
    return None


def run_summary(result, planned_epochs: int) -> str:
    """How a run ended, with its one epoch count named: the last epoch run, the best epoch (the one the
    saved model is from) and why it stopped there."""
    if getattr(result, "stopped", False):
        why = "stopped by you"
    elif getattr(result, "early_stopped", False):
        why = "stopped early: the validation loss had stopped improving"
    else:
        why = "all epochs run"
    best = getattr(result, "best_epoch", 0) or result.epochs_completed
    return (f"Ran {result.epochs_completed} of {planned_epochs} epochs ({why}). Saved the best, epoch {best} "
            f"(validation loss {result.best_val_loss:.4f}), to {result.out_path}")
