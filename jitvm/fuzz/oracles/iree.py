"""Runs corpus modules under IREE's own runtime (iree.runtime, driver "local-sync").

This is the reference side of the differential tests: what IREE's C interpreter returns for a
corpus CALL (or that it traps). jitvm's backends are compared against it.

    >>> from tests.corpus import build_corpus
    >>> from tests.corpus.oracle import run_module
    >>> for outcome in run_module(build_corpus(names=["mlir/matmul"])[0]):
    ...     print(outcome.call, outcome.trapped, [r.shape for r in outcome.results])

All calls of one module run in order in ONE context, so module state (mutable globals) carries
over from call to call exactly as the CALL lines are listed.

``check`` dialect modules import the ``check`` module; IREE's Python package does not ship it,
so :func:`make_check_module` provides one written with ``iree.runtime.PyModuleInterface``
(expect_true/false/all_true/eq/almost_eq with IREE's semantics: exact equality, or
``|a - b| <= atol + rtol * |b|`` per element). A failed expectation raises inside the call, so
the call reports ``trapped=True`` with the failure message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tests.corpus import Call, CorpusModule, make_inputs

DRIVER = "local-sync"


@dataclass
class Outcome:
    call: Call
    index: int
    trapped: bool
    error: str = ""
    results: list = field(default_factory=list)  # numpy arrays and Python scalars


class CheckFailure(AssertionError):
    pass


def _rt():
    import iree.runtime as rt

    return rt


# --------------------------------------------------------------------------------------------
# check module
# --------------------------------------------------------------------------------------------


def make_check_module(config, failures: list[str] | None = None):
    """A VM module named ``check`` implementing the check dialect's imports in Python.

    Each failed expectation appends a message to ``failures`` (if given) and raises, which
    makes the calling VM function fail.
    """
    rt = _rt()
    device = config.device

    def to_numpy(ref):
        bv = ref.deref(rt.HalBufferView)
        return rt.DeviceArray(device, bv, implicit_host_transfer=True).to_host()

    def fail(msg):
        if failures is not None:
            failures.append(msg)
        raise CheckFailure(msg)

    class CheckMethods:
        def __init__(self, iface):
            self.iface = iface

        def expect_true(self, v):
            if not v:
                fail(f"expect_true: got {v}")

        def expect_false(self, v):
            if v:
                fail(f"expect_false: got {v}")

        def expect_all_true(self, dev, ref):
            a = to_numpy(ref)
            if not np.all(a != 0):
                fail(f"expect_all_true: {a!r}")

        def expect_eq(self, dev, lhs, rhs):
            a, b = to_numpy(lhs), to_numpy(rhs)
            if a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(a, b):
                fail(f"expect_eq:\n lhs={a!r}\n rhs={b!r}")

        def expect_almost_eq(self, dev, lhs, rhs, atol, rtol):
            a, b = to_numpy(lhs), to_numpy(rhs)
            if a.shape != b.shape or a.dtype != b.dtype:
                fail(f"expect_almost_eq: shape/type mismatch {a.shape}{a.dtype} vs {b.shape}{b.dtype}")
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            ok = np.abs(a64 - b64) <= atol + rtol * np.abs(b64)
            ok |= np.isnan(a64) & np.isnan(b64)
            if not np.all(ok):
                fail(f"expect_almost_eq (atol={atol}, rtol={rtol}):\n lhs={a!r}\n rhs={b!r}")

    iface = rt.PyModuleInterface("check", CheckMethods)
    iface.export("expect_true", "0i_v", CheckMethods.expect_true)
    iface.export("expect_false", "0i_v", CheckMethods.expect_false)
    iface.export("expect_all_true", "0rr_v", CheckMethods.expect_all_true)
    iface.export("expect_eq", "0rrr_v", CheckMethods.expect_eq)
    iface.export("expect_almost_eq", "0rrrff_v", CheckMethods.expect_almost_eq)
    return iface.create()


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def _to_py(v):
    if hasattr(v, "to_host"):
        return np.asarray(v.to_host())
    return v


def _mlir_session(module: CorpusModule):
    rt = _rt()
    config = rt.Config(DRIVER)
    vm = rt.VmModule.mmap(config.vm_instance, str(module.vmfb))
    mods = [vm]
    if module.check_tests:
        mods.insert(0, make_check_module(config))
    ctx = rt.SystemContext(vm_modules=mods, config=config)
    return getattr(ctx.modules, vm.name), (config, vm, ctx)


def _vmasm_session(module: CorpusModule):
    rt = _rt()
    instance = rt.VmInstance()
    vm = rt.VmModule.mmap(instance, str(module.vmfb))
    ctx = rt.VmContext(instance, [vm])
    return vm, ctx, instance


def call_vmasm(vm, ctx, call: Call, args) -> list:
    """Invokes a VM function with raw primitive args; returns Python ints/floats (refs as-is)."""
    rt = _rt()
    f = vm.lookup_function(call.function)
    if f is None:
        raise LookupError(f"no exported function @{call.function}")
    arg_list = rt.VmVariantList(len(args))
    for spec, a in zip(call.args, args):
        if spec.dtype in ("f32", "f64"):
            arg_list.push_float(float(a))
        else:
            arg_list.push_int(int(a))
    results = rt.VmVariantList(8)
    ctx.invoke(f, arg_list, results)
    return [results.get_variant(i) for i in range(results.size)]


def run_module(module: CorpusModule) -> list[Outcome]:
    """Runs every CALL of ``module`` in order in one fresh context; never raises for traps."""
    outcomes: list[Outcome] = []
    if module.kind == "mlir":
        mod, keep = _mlir_session(module)
        for i, call in enumerate(module.calls):
            args = [a.item() if isinstance(a, np.generic) else a for a in make_inputs(module, i)]
            try:
                r = mod[call.function](*args)
            except Exception as e:  # noqa: BLE001 - IREE raises RuntimeError/ValueError
                outcomes.append(Outcome(call, i, True, f"{type(e).__name__}: {e}"))
                continue
            if r is None:
                res = []
            elif isinstance(r, tuple):
                res = [_to_py(x) for x in r]
            else:
                res = [_to_py(r)]
            outcomes.append(Outcome(call, i, False, results=res))
        del keep
    else:
        vm, ctx, inst = _vmasm_session(module)
        for i, call in enumerate(module.calls):
            args = make_inputs(module, i)
            if call.function in module.oracle_crash:
                outcomes.append(run_call_in_subprocess(module, i))
                continue
            try:
                res = call_vmasm(vm, ctx, call, args)
            except Exception as e:  # noqa: BLE001
                outcomes.append(Outcome(call, i, True, f"{type(e).__name__}: {e}"))
                continue
            outcomes.append(Outcome(call, i, False, results=res))
    return outcomes


_SUBPROCESS_SCRIPT = r"""
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tests.corpus import build_corpus
from tests.corpus.oracle import _vmasm_session, call_vmasm
from tests.corpus import make_inputs
m = build_corpus(cache_dir=Path(sys.argv[2]), names=[sys.argv[3]])[0]
i = int(sys.argv[4])
vm, ctx, inst = _vmasm_session(m)
try:
    print(repr(call_vmasm(vm, ctx, m.calls[i], make_inputs(m, i))))
except Exception as e:
    print("TRAP", type(e).__name__, e)
    sys.exit(3)
"""


def run_call_in_subprocess(module: CorpusModule, index: int, cache_dir=None) -> Outcome:
    """Runs one vmasm call in a fresh interpreter (for calls that crash IREE's runtime).

    Outcome.trapped is True if the call trapped or the process died from a signal; the error
    text says which ("killed by signal 8" for SIGFPE).
    """
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from tests.corpus import CORPUS_DIR

    if cache_dir is None:
        cache_dir = module.vmfb.parent.parent
    root = str(Path(CORPUS_DIR).parent.parent)
    r = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS_SCRIPT, root, str(cache_dir), module.name, str(index)],
        capture_output=True,
        text=True,
        check=False,
    )
    call = module.calls[index]
    if r.returncode < 0:
        try:
            sig = signal.Signals(-r.returncode).name
        except ValueError:
            sig = str(-r.returncode)
        return Outcome(call, index, True, f"killed by signal {-r.returncode} ({sig})")
    if r.returncode == 3:
        return Outcome(call, index, True, r.stdout.strip())
    if r.returncode != 0:
        raise RuntimeError(f"oracle subprocess failed ({r.returncode}): {r.stderr.strip()}")
    import ast

    return Outcome(call, index, False, results=ast.literal_eval(r.stdout.strip().splitlines()[-1]))


__all__ = ["CheckFailure", "DRIVER", "Outcome", "call_vmasm", "make_check_module", "run_call_in_subprocess",
           "run_module"]


def main(argv=None) -> int:
    """``python -m tests.corpus.oracle [name ...]``: prints what IREE returns for each CALL."""
    import sys

    from tests.corpus import build_corpus

    names = (argv if argv is not None else sys.argv[1:]) or None
    bad = 0
    np.set_printoptions(threshold=12, precision=6)
    for m in build_corpus(names=names):
        for o in run_module(m):
            want = o.call.function in m.expect_trap
            mark = "ok " if want == o.trapped else "BAD"
            bad += mark == "BAD"
            if o.trapped:
                what = "TRAP " + o.error.strip().splitlines()[-1][:160] if o.error else "TRAP"
            else:
                what = ", ".join(
                    repr(r) if not isinstance(r, np.ndarray) else f"{r.dtype}{list(r.shape)}"
                    for r in o.results
                )
            print(f"{mark} {m.name} {o.call} -> {what}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
