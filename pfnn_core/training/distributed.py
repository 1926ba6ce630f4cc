"""Training on several processes and machines: PyTorch's process group as torchrun sets it up.

Owns `Context` (this process's rank, the world size, its device), `setup` / `current` / `shutdown`,
`wrap_model` (DistributedDataParallel), each rank's share of a global batch (`rank_share`), per-rank
seeds (`rank_seed`), the reductions training needs (`any_rank`, `wait_for_all`, `sum_over_ranks`,
`mean_of_means`, `gather_to_main`) and `first_on_each_machine` (the dataset is built once per machine, then read from
the cache by the other processes there).

torchrun starts one process per device and gives each RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
MASTER_PORT. Without them (or with WORLD_SIZE 1) nothing is set up: every function below then acts as
for a single process, without any communication, and training is exactly what it was without torchrun.
The backend is gloo for CPU training and nccl for CUDA (one GPU per process, cuda:LOCAL_RANK). The
nccl path follows PyTorch's documented usage but has not been run on a GPU by our tests (CPU only).
"""
from __future__ import annotations

import gc
import inspect
import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable

import numpy as np
import torch
import torch.distributed as dist

# Long enough for the first process of a machine to build a large dataset while the others wait for it.
PROCESS_GROUP_TIMEOUT = timedelta(hours=2)
MESSAGE_BYTES = 4096  # an error message sent from the failing rank to the others


@dataclass(frozen=True)
class Context:
    """Where this process stands in a (possibly one-process) training run."""
    rank: int = 0                 # 0 .. world_size - 1; rank 0 alone writes files and prints progress
    world_size: int = 1
    local_rank: int = 0           # rank among the processes of this machine
    backend: str = ""             # 'gloo' | 'nccl' | '' (not distributed)
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))  # where collectives run

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


class RankFailed(ValueError):
    """Another process of the run failed (while preparing the data); its message is this one's."""


def setup(device_name: str = "auto", environ=None) -> Context:
    """Join the process group torchrun describes in the environment; a single-process Context without it.

    `device_name` is the training device asked for ('auto', 'cpu', 'cuda'): CUDA training uses nccl
    and binds this process to cuda:LOCAL_RANK; CPU training uses gloo.
    """
    environ = os.environ if environ is None else environ
    world_size = int(environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return Context()
    if dist.is_initialized():
        return current()
    rank, local_rank = int(environ["RANK"]), int(environ.get("LOCAL_RANK", "0"))
    wants_cuda = device_name.startswith("cuda") or (device_name == "auto" and torch.cuda.is_available())
    if wants_cuda:
        # Unverified on GPU by our tests: the standard one-process-per-GPU nccl setup.
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        bind = {"device_id": device} if "device_id" in inspect.signature(dist.init_process_group).parameters else {}
        dist.init_process_group("nccl", timeout=PROCESS_GROUP_TIMEOUT, **bind)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", timeout=PROCESS_GROUP_TIMEOUT)
    return Context(rank=rank, world_size=world_size, local_rank=local_rank, backend=dist.get_backend(),
                   device=device)


def current() -> Context:
    """The Context of the process group already set up in this process, or a single-process one."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() <= 1:
        return Context()
    backend = dist.get_backend()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if backend == "nccl" else torch.device("cpu")
    return Context(rank=dist.get_rank(), world_size=dist.get_world_size(), local_rank=local_rank,
                   backend=backend, device=device)


def shutdown(context: Context) -> None:
    """Leave the process group: every rank waits for the others, objects that hold the group
    (DistributedDataParallel's reducer, in reference cycles) are collected while it still exists, then it
    is destroyed. Without the first two steps, 3 of 24 two-process test runs aborted at exit ("terminate
    called without an active exception"); none of 48 with them."""
    if context.distributed and dist.is_initialized():
        wait_for_all(context)
        gc.collect()
        dist.destroy_process_group()


def training_device(device: torch.device, context: Context) -> torch.device:
    """The device this rank trains on: its own GPU under nccl, else the one asked for."""
    return context.device if context.backend == "nccl" else device


def wrap_model(model: torch.nn.Module, context: Context) -> torch.nn.Module:
    """DistributedDataParallel around `model` in a distributed run (gradients averaged over the ranks
    during backward), the model itself otherwise. The model has no buffers to keep in sync, and ranks may
    run different numbers of forward calls per step (rollouts end at clip ends), so buffers are not
    broadcast at each forward."""
    if not context.distributed:
        return model
    from torch.nn.parallel import DistributedDataParallel

    device_ids = [context.device.index] if context.device.type == "cuda" else None
    parameters = inspect.signature(DistributedDataParallel.__init__).parameters
    no_forward_sync = ({"forward_sync_buffers": False} if "forward_sync_buffers" in parameters
                       else {"broadcast_buffers": False})  # the option's name before torch 2.13
    return DistributedDataParallel(model, device_ids=device_ids, **no_forward_sync)


def rank_seed(seed: int, rank: int) -> int:
    """The seed of rank `rank`'s random stream (dropout, feedback draws): rank 0 keeps `seed` itself, so
    a one-process run is unchanged, and every rank draws differently from the others."""
    if rank == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(rank)]).generate_state(1, np.uint64)[0] >> 1)


def rank_share(batch: np.ndarray, context: Context) -> tuple[np.ndarray, float]:
    """This rank's rows of a global batch (every world_size-th one) and the factor its mean loss is
    scaled by, len(share) * world_size / len(batch), so that DistributedDataParallel's average over
    ranks weighs each row as the one-process mean over the whole batch would (uneven shares included).
    A rank left without rows (a batch smaller than the world) gets the batch's first row with weight 0:
    every rank must run forward and backward for the gradient average."""
    if not context.distributed:
        return batch, 1.0
    share = batch[context.rank::context.world_size]
    if len(share) == 0:
        return batch[:1], 0.0
    return share, len(share) * context.world_size / max(len(batch), 1)


# --- collectives (no communication in a single process) ----------------------------------------------

def any_rank(flag: bool, context: Context) -> bool:
    """True on every rank when `flag` is true on at least one (a stop request, a failure)."""
    if not context.distributed:
        return bool(flag)
    value = torch.tensor([1 if flag else 0], dtype=torch.int32, device=context.device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


def wait_for_all(context: Context) -> None:
    """Return when every rank got here (after rank 0 wrote a file the others may read next)."""
    any_rank(False, context)


def sum_over_ranks(values, context: Context) -> np.ndarray:
    """Element-wise sum of a float vector over the ranks (float64), the vector itself in one process."""
    values = np.asarray(values, np.float64)
    if not context.distributed:
        return values
    tensor = torch.as_tensor(values, device=context.device)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor.cpu().numpy()


def mean_of_means(means: dict, count: int, context: Context) -> dict:
    """Means over each rank's `count` rows -> means over all rows of all ranks (validation losses)."""
    if not context.distributed:
        return means
    names = sorted(means)
    totals = sum_over_ranks([means[name] * count for name in names] + [count], context)
    rows = max(totals[-1], 1.0)
    return {name: float(total / rows) for name, total in zip(names, totals[:-1])}


def gather_to_main(tensors: dict, context: Context) -> dict:
    """Rank 0 gets every rank's tensors (rank r > 0's under '<name>.rank<r>'); other ranks get {}.
    All ranks must pass the same names and shapes (random-generator states)."""
    if not context.distributed:
        return dict(tensors)
    gathered = {}
    for name in sorted(tensors):
        local = tensors[name].to(context.device)
        parts = [torch.empty_like(local) for _ in range(context.world_size)]
        dist.all_gather(parts, local)
        if context.is_main:
            for rank, part in enumerate(parts):
                gathered[name if rank == 0 else f"{name}.rank{rank}"] = part.cpu()
    return gathered


def _broadcast_text(text: str, source: int, context: Context) -> str:
    buffer = torch.zeros(MESSAGE_BYTES, dtype=torch.uint8, device=context.device)
    encoded = text.encode("utf-8")[:MESSAGE_BYTES]
    if context.rank == source and encoded:
        buffer[:len(encoded)] = torch.frombuffer(bytearray(encoded), dtype=torch.uint8).to(context.device)
    dist.broadcast(buffer, src=source)
    return bytes(buffer.cpu().numpy()).rstrip(b"\0").decode("utf-8", errors="replace")


def _raise_if_any_failed(error: Exception | None, context: Context) -> None:
    """Every rank raises when one failed: the failing rank its own error, the others RankFailed with its
    message, so no process waits forever for a peer that has given up."""
    rank_flag = torch.tensor([context.rank if error is not None else context.world_size], device=context.device)
    dist.all_reduce(rank_flag, op=dist.ReduceOp.MIN)
    failed = int(rank_flag.item())
    if failed == context.world_size:
        return
    message = _broadcast_text(str(error) if context.rank == failed else "", failed, context)
    if error is not None:
        raise error
    raise RankFailed(message)


def first_on_each_machine(action: Callable[[], object], context: Context):
    """`action()` on each machine's first process (local rank 0), then on the others of that machine.

    For the dataset: the first process builds it into the cache, the others read it back. An error on
    any rank is raised on every rank (see `_raise_if_any_failed`).
    """
    if not context.distributed:
        return action()
    result = None
    for first_turn in (True, False):
        error = None
        if (context.local_rank == 0) == first_turn:
            try:
                result = action()
            except Exception as caught:  # reported on every rank below, then re-raised here
                error = caught
        _raise_if_any_failed(error, context)
    return result
