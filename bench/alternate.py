"""Two or more ways of running the same call, timed in alternating batches in one process.

The machine's state drifts within seconds; alternating (in reversed order every other
round) keeps a ratio between the ways honest where separate runs would not. Medians,
warm-up excluded.
"""

from __future__ import annotations

import time

import numpy as np


def alternating_medians(fns: dict, inputs, rounds: int, batch: int = 1, warm_up: int = 3,
                        clock=time.perf_counter) -> dict[str, float]:
    """Median seconds per call of each `fns[way](*inputs)`, batches of `batch` calls, timed by
    `clock` (time.thread_time: the calling thread's CPU time, for ways that run on it alone)."""
    for fn in fns.values():
        for _ in range(warm_up):
            fn(*inputs)
    ways = list(fns)
    times: dict[str, list[float]] = {way: [] for way in ways}
    for r in range(rounds):
        for way in (ways if r % 2 else ways[::-1]):
            fn = fns[way]
            start = clock()
            for _ in range(batch):
                fn(*inputs)
            times[way].append((clock() - start) / batch)
    return {way: float(np.median(t)) for way, t in times.items()}
