"""Property-based differential fuzzing: random valid VM programs, JIT vs reference interpreter.

Hypothesis draws whole modules (jitvm.fuzz.generators: straight-line arithmetic on edge values, control
flow with remap lists, loops, calls and recursion, buffers/lists/globals, VMVX-shaped loop
nests over aliasing buffers), assembles them with jitvm's own assembler, runs every call
under both backends and compares results bit for bit, traps by status and message, and the
module state after each call. The only tolerance, for float values computed in loops with
buffer accesses, is documented in jitvm/fuzz/oracles/differential.py.

The default run is derandomized (the same examples every time, about a minute on two
cores); `-m slow` runs thousands of random programs per kind. For longer or reproducible
campaigns outside pytest: `python -m jitvm.fuzz.campaign --help`.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings

from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend import isa
from jitvm.fuzz.generators import ops as fuzz_ops
from jitvm.fuzz.generators.emit import RandomChooser
from jitvm.fuzz.generators.program import generate
from jitvm.fuzz.generators.strategies import programs
from jitvm.fuzz.oracles.differential import run_program
from jitvm.lower.backend import JitBackend

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")

# The JIT on two threads, its direct calls splitting loop nests of 4 innermost iterations
# or more across a pool (lower.loops.parallel): kernels with larger trip counts run split, smaller
# ones in the single-threaded fast copy.
SPLIT_FROM = 4
BACKENDS = {"interp": InterpreterBackend(),
            "jit": JitBackend(use_cache=False, progress=False, threads=2, split_calls_from=SPLIT_FROM)}
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
           HealthCheck.filter_too_much]


STATS = Counter()  # programs, calls and traps run by this module (printed at its end)


@pytest.fixture(scope="module", autouse=True)
def _totals(request):
    from jitvm.lower.backend import STATS as JIT_STATS

    blocked_before = JIT_STATS["blocked_nests"]

    def report():
        if STATS["programs"]:
            pool = BACKENDS["jit"].call_pool()
            print(f"\nfuzz: {STATS['programs']} programs, {STATS['calls']} calls ({STATS['traps']} traps) under "
                  f"both backends, {STATS['mismatching']} mismatching; "
                  f"{pool.state.splits if pool else 0} loop nests split across threads, "
                  f"{JIT_STATS['blocked_nests'] - blocked_before} compiled register-blocked")
    request.config.add_cleanup(report)  # after the run, when output is no longer captured
    yield


def _check(program) -> None:
    report = run_program(program, BACKENDS)
    STATS.update(programs=1, calls=report.calls, traps=report.traps, mismatching=int(bool(report.problems)))
    assert not report.problems, ("JIT and interpreter disagree:\n" + "\n".join(report.problems[:5]) +
                                 "\n\nprogram:\n" + program.listing())


def _fuzz(kind: str, examples: int, slow: bool = False):
    opts = dict(max_examples=examples, deadline=None, suppress_health_check=_HEALTH)
    if not slow:
        opts.update(derandomize=True, database=None)

    @settings(**opts)
    @given(program=programs(kind))
    def test(program):
        _check(program)

    test.__name__ = f"test_{kind}_programs" + ("_campaign" if slow else "")
    test.__doc__ = f"{examples} {'random' if slow else 'fixed'} {kind} programs agree under both backends."
    return pytest.mark.slow(test) if slow else test


# The default run: about 60 s on two cores (kernels compile with the full LLVM pipeline).
test_scalar_programs = _fuzz("scalar", 100)
test_control_programs = _fuzz("control", 60)
test_memory_programs = _fuzz("memory", 80)
test_kernel_programs = _fuzz("kernel", 80)
test_mixed_programs = _fuzz("mixed", 40)

# `-m slow`: the campaign.
test_scalar_programs_campaign = _fuzz("scalar", 2000, slow=True)
test_control_programs_campaign = _fuzz("control", 1500, slow=True)
test_memory_programs_campaign = _fuzz("memory", 2000, slow=True)
test_kernel_programs_campaign = _fuzz("kernel", 2000, slow=True)
test_mixed_programs_campaign = _fuzz("mixed", 1000, slow=True)


def test_kernel_programs_run_split_loops():
    """The kernel programs reach the JIT's split loops (lower.loops.parallel), and agree there."""
    pool = BACKENDS["jit"].call_pool()
    if pool is None:
        pytest.skip("no thread pool on this host")
    before = pool.state.splits
    for seed in range(12):
        _check(generate(RandomChooser(f"split/{seed}"), "kernel"))
    assert pool.state.splits > before


def test_every_op_is_generated():
    """Every opcode of the ISA table appears in generated programs, except the few that
    fuzz/generators/ops.py lists with a reason (so a new opcode cannot be silently left out)."""
    seen = Counter()
    for kind in ("scalar", "control", "memory", "kernel"):
        for seed in range(40):
            text = generate(RandomChooser(f"coverage/{kind}/{seed}"), kind).text
            seen.update(m.group(1) for m in re.finditer(r"\bvm\.([a-z_0-9.]+)", text))
    names = {op.name for op in isa.OPS.values()}
    missing = sorted(names - set(seen) - set(fuzz_ops.NOT_GENERATED))
    assert not missing, f"ops never generated: {missing}"
    assert set(fuzz_ops.NOT_GENERATED) <= names


def test_generated_programs_can_fail():
    """The comparison is not vacuous: a program whose two runs differ is reported."""
    program = generate(RandomChooser("can-fail"), "scalar")
    fn = program.functions[0]
    fn.calls = [[]] if not fn.sig.args else fn.calls
    report = run_program(program, {"interp": BACKENDS["interp"], "jit": BACKENDS["interp"]})
    assert not report.problems  # the interpreter agrees with itself

    class Skewed:  # an "interpreter" whose float and integer results are off by one bit
        name = "skewed"

        def prepare(self, loaded):
            inner = BACKENDS["interp"].prepare(loaded)

            class Exe:
                def __getattr__(self, attr):
                    return getattr(inner, attr)

                def call(self, instance, ordinal, args):
                    out = inner.call(instance, ordinal, args)
                    return [v ^ 1 if isinstance(v, int) and not isinstance(v, bool) else v for v in out]
            return Exe()

    report = run_program(program, {"interp": BACKENDS["interp"], "jit": Skewed()})
    assert report.problems
