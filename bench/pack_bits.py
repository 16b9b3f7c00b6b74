"""Packing speed: jitvm.frontend.pack_bits against numpy copying the same int8 array.

    python bench/pack_bits.py [--log2n 28] [--repeat 7] [--bits 4] [--all-widths]

The target (issue 7): packing 2^28 values at 4 bits takes at most 3x the time of
`values.copy()`. Copy and pack alternate `repeat` times; prints the median of each and the
median of the per-round ratios; with
--all-widths also every width from 1 to 8 (and unpacking) for reference.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from jitvm.frontend import pack_bits, unpack_bits  # noqa: E402

TARGET_RATIO = 3.0


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(a, b, repeat: int) -> tuple[float, float, float]:
    """Median times of `a` and `b` and median of their per-round ratio b/a.

    Runs alternate, so a busy machine slows both sides alike.
    """
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(seconds(a))
        tb.append(seconds(b))
    return statistics.median(ta), statistics.median(tb), statistics.median(y / x for x, y in zip(ta, tb))


def values_for(bits: int, n: int) -> np.ndarray:
    lo = -(1 << (bits - 1))
    return ((np.arange(n, dtype=np.int64) * 2654435761) % (1 << bits) + lo).astype(np.int8)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log2n", type=int, default=28)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--bits", type=int, default=4)
    p.add_argument("--all-widths", action="store_true")
    args = p.parse_args(argv)
    n = 1 << args.log2n
    widths = range(1, 9) if args.all_widths else [args.bits]
    print(f"n = 2^{args.log2n} = {n} int8 values, median of {args.repeat} runs")
    status = 0
    for bits in widths:
        values = values_for(bits, n)
        copy, pack, ratio = interleaved(values.copy, lambda: pack_bits(values, bits), args.repeat)
        packed = pack_bits(values, bits)
        line = (f"bits={bits}: copy {copy * 1000:8.1f} ms   pack {pack * 1000:8.1f} ms   "
                f"ratio {ratio:5.2f}x")
        if args.all_widths:
            _, unpack, uratio = interleaved(values.copy, lambda: unpack_bits(packed, bits, n, True), args.repeat)
            line += f"   unpack {unpack * 1000:8.1f} ms ({uratio:5.2f}x)"
        if bits == 4:
            ok = ratio <= TARGET_RATIO
            line += f"   target <= {TARGET_RATIO}x: {'met' if ok else 'MISSED'}"
            status |= not ok
        print(line, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
