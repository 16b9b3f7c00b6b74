"""bench/: the model generators emit MLIR iree-compile accepts, and `jitvm benchmark`
prints iree-benchmark-module's line format.

Tiny configurations only (a 16x16 matmul, a ResNet-50-style net at 32x32 with its
channels divided by 16); the full suite is `python -m bench.run` (slow test below).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from bench import compare
from bench.build import compile_into
from bench.models import conv, depthwise, matmul, mlp, resnet50, softmax
from jitvm.cli import main
from jitvm.cli.benchmark import Run, format_report

TINY = {
    "matmul": matmul(16),
    "conv": conv(8, 4, 8, 3, bias_relu=True),
    "conv1x1": conv(8, 8, 16, 1, bias_relu=False),
    "depthwise": depthwise(8, 4),
    "softmax": softmax(2, 16),
    "mlp": mlp(2, (8, 16, 4)),
    "resnet50": resnet50(32, width_divisor=16, classes=10),
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Each tiny model compiled for VMVX, as path by key."""
    return compile_into(TINY, tmp_path_factory.mktemp("bench-models"))


@pytest.mark.parametrize("key", list(TINY))
def test_generated_model_runs_in_iree(compiled, key):
    """Compiles, runs in IREE's interpreter, gives finite results of the declared shape."""
    import iree.runtime as ireert

    spec = TINY[key]
    module = ireert.load_vm_flatbuffer_file(str(compiled[key]), driver="local-sync")
    result = np.asarray(getattr(module, spec.function)(*spec.make_inputs()))
    assert np.isfinite(result).all()
    if key in ("softmax", "resnet50"):
        np.testing.assert_allclose(result.sum(axis=-1), 1.0, rtol=1e-5)


def test_resnet_topology_and_seeded_weights():
    text = TINY["resnet50"].build()
    assert text == resnet50(32, width_divisor=16, classes=10).build()  # seeded: same bytes every time
    assert text.count("linalg.conv_2d_nhwc_hwcf") == 1 + 3 * (3 + 4 + 6 + 3) + 4  # stem, blocks, projections
    assert text.count("linalg.pooling_nhwc_max") == 1 and "linalg.softmax" in text
    assert resnet50(224).flops == pytest.approx(8.2e9, rel=0.03)  # ResNet-50: ~4.1 G multiply-adds at 224


BENCH_LINE = re.compile(r"^BM_matmul/process_time/real_time(_mean|_median|_stddev|_cv)? +"
                        r"\d+\.\d+ (ms|%) +\d+\.\d+ (ms|%) +\d+ items_per_second=[\d.]+[kMGmun]?(/s|%)$")


def test_jitvm_benchmark_prints_google_benchmark_lines(compiled, capsys):
    code = main(["benchmark", str(compiled["matmul"]), "--function=matmul", "--input=16x16xf32=1",
                 "--input=16x16xf32=2", "--benchmark_repetitions=3", "--benchmark_min_time=2x", "--threads=1"])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.match(r"^Benchmark +Time +CPU +Iterations UserCounters\.\.\.$", lines[1])
    assert lines[0] == lines[2] == "-" * len(lines[1])
    rows = lines[3:]
    assert [BENCH_LINE.match(r).group(1) for r in rows] == [None] * 3 + ["_mean", "_median", "_stddev", "_cv"]
    assert all(r.split()[-2] == "2" for r in rows[:3]) and all(r.split()[-2] == "3" for r in rows[3:])


def test_report_format_matches_iree_benchmark_module():
    """The lines iree-benchmark-module printed for two repetitions of a tiny VMVX function,
    reproduced from the same per-iteration times (widths, precision, SI-prefixed rates)."""
    iterations = 319902
    real = [1 / 429023.3, 1 / 321172.3]  # seconds per iteration behind its items_per_second
    cpu = [0.0019895e-3, 0.0020105e-3]
    runs = [Run(iterations, r * iterations, c * iterations) for r, c in zip(real, cpu)]
    name = "BM_add/process_time/real_time"
    assert format_report("add", runs) == [
        "-" * 95,
        "Benchmark                                     Time             CPU   Iterations UserCounters...",
        "-" * 95,
        f"{name}             0.002 ms        0.002 ms       319902 items_per_second=429.023k/s",
        f"{name}             0.003 ms        0.002 ms       319902 items_per_second=321.172k/s",
        f"{name}_mean        0.003 ms        0.002 ms            2 items_per_second=375.098k/s",
        f"{name}_median      0.003 ms        0.002 ms            2 items_per_second=375.098k/s",
        f"{name}_stddev      0.001 ms        0.000 ms            2 items_per_second=76.2622k/s",
        f"{name}_cv          20.33 %          0.74 %             2 items_per_second=20.33%",
    ]


def test_compare_verdicts():
    a = np.array([1.0, 2.0, np.inf], np.float32)
    assert compare.check([a], [a.copy()], exact=True, rtol=0).text() == "bit-exact"
    b = a.copy()
    b[0] = np.nextafter(np.float32(1), np.float32(2))
    assert not compare.check([a], [b], exact=True, rtol=1).ok
    near = compare.check([a], [b], exact=False, rtol=1e-6)
    assert near.ok and near.max_rel == pytest.approx(2 ** -23 / 2)
    assert compare.check([a], [np.array([1.0, np.nan, np.inf], np.float32)], exact=False, rtol=1).text() \
        .startswith("MISMATCH")


@pytest.mark.slow
def test_quick_suite_runs(tmp_path):
    from bench.run import main as bench_main

    assert bench_main(["--quick", "--models", "matmul128", "softmax1x1000", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "RESULTS.md").read_text()
    assert "| matmul128 |" in text and "MISMATCH" not in text


def _records(rows):
    from jitvm.runtime.exec.trace import RECORD

    return np.array([tuple(r) for r in rows], dtype=RECORD)


def test_thread_trace_counts_work_once_and_the_wait_for_split_helpers_as_idle():
    from bench.thread_trace import work_intervals

    # (thread, kind, index, start, end, function): thread 1 runs a workgroup whose loop is
    # split; it runs two chunks itself, thread 2 two more, ending 20 ns after thread 1's last.
    rows = _records([(1, 0, 0, 0, 100, 7), (1, 1, 0, 10, 40, 9), (2, 1, 8, 10, 45, 9),
                     (1, 1, 16, 40, 70, 9), (2, 1, 24, 45, 90, 9)])
    assert work_intervals(rows) == {1: 80.0, 2: 80.0}


def test_thread_trace_splits_dispatches_at_a_repeated_workgroup():
    from bench.thread_trace import dispatches

    rows = _records([(1, 0, 0, 0, 10, 7), (2, 0, 1, 0, 12, 7), (1, 0, 0, 20, 30, 7), (1, 0, 1, 30, 41, 7),
                     (1, 0, 0, 50, 55, 8)])
    assert dispatches(rows, {7: "a", 8: "b"}) == [("a", 12, 22.0), ("a", 21, 21.0), ("b", 5, 5.0)]


@pytest.mark.parametrize("tier", ["baseline", "jammed_slp"])
def test_tier_costs_measures_every_looped_kernel_of_the_cnn_on_the_forced_tier(tier):
    """bench.tier_costs stands in for the compiler's job runner and the lazy executable's
    compile: a change of either's signature broke it unseen (it is not in the default run)."""
    from bench import tier_costs

    rows = tier_costs.measure("cnn", tier)
    assert len(rows) >= 3
    for row in rows.values():
        assert row["tier"] == tier and row["compile"] > 0 and row["run"] > 0 and row["accesses"] > 0
