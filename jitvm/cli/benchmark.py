"""`jitvm benchmark`: time one function the way iree-benchmark-module does.

Same inputs as `jitvm run` (built once, reused by every call), same output: Google
Benchmark console lines `BM_<function>/process_time/real_time  <real> ms  <cpu> ms  <iters>`
with mean/median/stddev/cv rows when repeated, so numbers from both tools line up. The
iteration count grows until one repetition lasts --benchmark_min_time, as Google
Benchmark does; one warm-up call (JIT compilation, first-touch) is excluded.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable

from ..errors import ArgumentError

MAX_ITERATIONS = 1_000_000_000


@dataclass(frozen=True)
class Run:
    """One repetition: `iterations` calls taking `real` wall and `cpu` process seconds in all."""

    iterations: int
    real: float
    cpu: float


def _timed(call: Callable[[], object], iterations: int) -> Run:
    cpu0, real0 = time.process_time(), time.perf_counter()
    for _ in range(iterations):
        call()
    return Run(iterations, time.perf_counter() - real0, time.process_time() - cpu0)


def calibrated_run(call: Callable[[], object], min_time: float) -> Run:
    """Grows the iteration count like Google Benchmark until a run lasts `min_time`."""
    iterations = 1
    while True:
        run = _timed(call, iterations)
        if run.real >= min_time or iterations >= MAX_ITERATIONS:
            return run
        multiplier = min_time * 1.4 / max(run.real, 1e-9) if run.real / min_time > 0.1 else 10.0
        iterations = min(max(int(multiplier * iterations), iterations + 1), MAX_ITERATIONS)


def measure(call: Callable[[], object], repetitions: int = 1, min_time: float = 0.5,
            iterations: int | None = None) -> list[Run]:
    """`repetitions` runs; the first finds the iteration count (unless given), the rest reuse it."""
    first = _timed(call, iterations) if iterations else calibrated_run(call, min_time)
    return [first] + [_timed(call, first.iterations) for _ in range(repetitions - 1)]


def _time_text(value: float) -> str:
    """Google Benchmark's console precision: 3 decimals below 1, 2 below 10, 1 below 100."""
    digits = 3 if value < 1 else 2 if value < 10 else 1 if value < 100 else 0
    return f"{value:10.{digits}f}"


def _human(value: float) -> str:
    """A rate with an SI prefix and 6 significant digits (`429.023k`, `33.3333m`)."""
    prefixes = [(1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "u"), (1e-9, "n")]
    for scale, prefix in prefixes:
        if abs(value) >= scale:
            return f"{value / scale:.6g}{prefix}"
    return f"{value:.6g}"


def _row(name: str, width: int, real: str, cpu: str, unit: str, iterations: int, counter: str) -> str:
    return f"{name:<{width}} {real} {unit:<4} {cpu} {unit:<4} {iterations:10d} items_per_second={counter}"


def _stddev(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def format_report(function: str, runs: list[Run]) -> list[str]:
    """The table iree-benchmark-module prints, per-iteration times in milliseconds."""
    name = f"BM_{function}/process_time/real_time"
    real = [r.real / r.iterations * 1e3 for r in runs]
    cpu = [r.cpu / r.iterations * 1e3 for r in runs]
    rate = [r.iterations / r.real if r.real > 0 else math.inf for r in runs]
    width = len(name) + (len("_median") if len(runs) > 1 else 0)
    header = f"{'Benchmark':<{width}} {'Time':>13} {'CPU':>15} {'Iterations':>12} UserCounters..."
    lines = ["-" * len(header), header, "-" * len(header)]
    lines += [_row(name, width, _time_text(t), _time_text(c), "ms", r.iterations, _human(q) + "/s")
              for t, c, r, q in zip(real, cpu, runs, rate)]
    if len(runs) > 1:
        n = len(runs)
        for suffix, stat in (("mean", statistics.fmean), ("median", statistics.median), ("stddev", _stddev)):
            lines.append(_row(f"{name}_{suffix}", width, _time_text(stat(real)), _time_text(stat(cpu)), "ms", n,
                              _human(stat(rate)) + "/s"))

        def cv(values):
            mean = statistics.fmean(values)
            return _stddev(values) / mean * 100 if mean else 0.0

        lines.append(_row(f"{name}_cv", width, f"{cv(real):10.2f}", f"{cv(cpu):10.2f}", "%", n, f"{cv(rate):.2f}%"))
    return lines


def _min_time(text: str) -> tuple[float, int | None]:
    """`--benchmark_min_time`: `0.5s` / `0.5` (seconds) or `10x` (a fixed iteration count)."""
    try:
        if text.endswith("x"):
            return 0.0, max(1, int(text[:-1]))
        return float(text.removesuffix("s")), None
    except ValueError:
        raise ArgumentError(f"--benchmark_min_time={text}: write seconds (0.5s) or iterations (10x)") from None


def cmd_benchmark(args) -> int:
    from ..api import load
    from .paths import resolve_path
    from .execute import _single_function, _vm_arguments

    min_time, iterations = _min_time(args.benchmark_min_time)
    module = load(resolve_path(args.file), backend=args.backend, threads=args.threads, tier=args.tier)
    name = args.function or _single_function(module)
    fn = module.function(name)
    vm_args = _vm_arguments(fn, args.input or [])

    def call():
        fn.vm_function.call(vm_args)

    call()  # warm-up: first-touch of buffers and anything compiled lazily
    threads = args.threads or os.environ.get("JITVM_THREADS") or os.cpu_count()
    print(f"jitvm benchmark: {args.file} @{name}, backend {module.backend}"
          + (f", {threads} dispatch threads" if module.backend == "jit" else ""), file=sys.stderr)
    runs = measure(call, max(1, args.benchmark_repetitions), min_time, iterations)
    print("\n".join(format_report(name, runs)))
    return 0


def add_subcommands(sub) -> None:
    from .execute import BACKEND_HELP, TIER_HELP

    b = sub.add_parser("benchmark", help="time a function, printing lines like iree-benchmark-module")
    b.add_argument("file", help="a .vmfb path, or example:NAME for a bundled module")
    b.add_argument("--function", help="export to call (optional when there is only one)")
    b.add_argument("--input", action="append", metavar="VALUE", help="an argument, as for `jitvm run`")
    b.add_argument("--benchmark_repetitions", type=int, default=1, metavar="N",
                   help="repetitions; more than one adds mean/median/stddev/cv rows")
    b.add_argument("--benchmark_min_time", default="0.5s", metavar="0.5s|Nx",
                   help="grow iterations until one repetition lasts this long, or run exactly N")
    b.add_argument("--threads", type=int, metavar="N",
                   help="dispatch threads for the JIT (default: JITVM_THREADS, else all cores)")
    b.add_argument("--backend", default="jit", help=BACKEND_HELP)
    b.add_argument("--tier", choices=("auto", "baseline", "full"), default="full",
                   help=TIER_HELP.replace("default JITVM_TIER, else auto", "default full: optimised code is timed"))
    b.set_defaults(run=cmd_benchmark)


__all__ = ["Run", "add_subcommands", "calibrated_run", "cmd_benchmark", "format_report", "measure"]
