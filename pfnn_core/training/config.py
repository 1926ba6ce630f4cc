"""What a training run is asked for and what it gives back: `TrainConfig` (one comment per field; stored in
every checkpoint it writes), `TrainResult`, and `TrainingError` for a run that cannot go on."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

# Never the shipped model: a training run with no --out must not overwrite assets/models/default.safetensors.
DEFAULT_OUT = "runs/model.safetensors"


class TrainingError(RuntimeError):
    """Training cannot continue (NaN loss, data that does not fit a resumed model); the message says why."""


@dataclass
class TrainConfig:
    data: list[str] = field(default_factory=lambda: ["assets/bvh"])  # BVH folders or files
    out: str = DEFAULT_OUT        # best model; the resumable state goes next to it (*.resume.safetensors)
    hidden_size: int = 512        # units per hidden layer
    phase_function: str = "rbf"   # 'rbf' or 'cubic'
    num_kernels: int = 8          # rbf weight sets (cubic always uses 4)
    beta: float = 8.0             # rbf bandwidth (validation and the model's default)
    beta_range: tuple | None = (4.0, 16.0)  # rbf: beta drawn log-uniformly per batch from [lo, hi], so the
                                  # live knob works across that range; None = always `beta`
    dropout: float = 0.3          # drop probability [PFNN keeps 70%]
    epochs: int = 60              # upper bound; early stopping may end sooner
    batch_size: int = 256         # rollouts per optimizer step
    lr: float = 1e-3              # AdamW peak learning rate
    lr_final_fraction: float = 0.05  # cosine decay ends at lr * this
    weight_decay: float = 1e-4    # AdamW decoupled weight decay
    max_grad_norm: float = 5.0    # gradient clipping
    rollout_length: int = 4       # frames per rollout; 1 = plain one-step training
    feedback_max: float = 0.5     # final probability of feeding back the model's own pose
    feedback_ramp_epochs: int = 0  # epochs to ramp the feedback 0 -> max; 0 = half of `epochs`
    root_velocity_weight: float = 0.5  # weight of the root-velocity consistency term (m/s)
    foot_skating_weight: float = 0.5   # weight of the foot-skating term (m/s)
    val_fraction: float = 0.1     # share of clips held out for validation
    seed: int = 0                 # data split, initialisation, batches, dropout, feedback draws
    patience: int = 10            # epochs without validation improvement before stopping early
    mirror: bool = True           # add left/right mirrored clips
    device: str = "auto"          # 'auto' (cuda when present), 'cpu' or 'cuda'
    threads: int = 0              # torch CPU threads; 0 = leave torch's default
    resume: str | None = None     # resumable checkpoint to continue from
    init: str | None = None       # fine-tune: start from this model's weights and normalisation
    oversample: dict = field(default_factory=dict)  # motion kind ('side', 'back', ...) -> how many times
                                  # each of its training rows is fed per epoch (an integer >= 1)
    labels: str | None = None     # labelling rule: 'filename' (default), 'folder' or a JSON/CSV table
    workers: int = 1              # processes building the dataset's clips in parallel; 0 = one per CPU core
    cache: bool = True            # keep the built dataset in the dataset cache and reuse it
    cache_dir: str | None = None  # None: $PFNN_DATASET_CACHE, else ~/.cache/pfnn-viewer/datasets

    @classmethod
    def from_dict(cls, values: dict) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in values.items() if key in known})


@dataclass
class TrainResult:
    out_path: Path | None         # best model so far (None if no epoch finished)
    resume_path: Path             # resumable state (written at every epoch end and on stop)
    epochs_completed: int
    best_epoch: int               # 1-based; 0 if none
    best_val_loss: float
    train_losses: list[float]     # per completed epoch
    val_losses: list[float]
    stopped: bool                 # the stop flag ended the run
    early_stopped: bool
    wall_s: float
