"""CPU thread counts of a process: torch's intra-op pool and every BLAS/OpenMP pool numpy and torch load.

Every command sets them deliberately (`--threads`). A tick's network call is small: extra BLAS
threads gain nothing at batch 1, and when other processes keep the cores busy their workers spin
and wait for each other (a drive's tick went from 1.5 ms to 30-90 ms). One thread is the default
for the viewer and the drive; training and big crowds may use more.
"""
from __future__ import annotations

import os

DEFAULT_THREADS = 1


def add_threads_argument(parser, default: int = DEFAULT_THREADS, what: str = "") -> None:
    parser.add_argument("--threads", type=int, default=default, metavar="N",
                        help=f"CPU threads for BLAS and torch (default {default}{what})")


def set_thread_counts(count: int) -> int:
    """Limit torch and the BLAS/OpenMP libraries to `count` threads (>= 1); returns the count.

    Environment variables are set too, for libraries loaded later and child processes.
    """
    count = int(count)
    if count < 1:
        raise ValueError(f"--threads must be at least 1, got {count}")
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(count)
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(count)
    threadpool_limits(limits=count)
    return count
