"""Runs corpus modules under IREE's own runtime (iree.runtime, driver "local-sync").

This is the reference side of the differential tests: what IREE's C interpreter returns for a
corpus CALL (or that it traps). jitvm's backends are compared against it.

    >>> from jitvm.fuzz.corpus import Corpus
    >>> from jitvm.fuzz.oracles.iree import run_module
    >>> for outcome in run_module(Corpus("tests/corpus").build(names=["mlir/matmul"])[0]):
    ...     print(outcome.call, outcome.trapped, [r.shape for r in outcome.results])

All calls of one module run in order in ONE context, so module state (mutable globals) carries
over from call to call exactly as the CALL lines are listed.

``check`` dialect modules import the ``check`` module; IREE's Python package does not ship it,
so :func:`make_check_module` (iree_check.py) provides one. A failed expectation raises inside
the call, so the call reports ``trapped=True`` with the failure message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..corpus import Call, CorpusModule, make_inputs
from .iree_check import CheckFailure, make_check_module

DRIVER = "local-sync"


@dataclass
class Outcome:
    call: Call
    index: int
    trapped: bool
    error: str = ""
    results: list = field(default_factory=list)  # numpy arrays and Python scalars


def _rt():
    import iree.runtime as rt

    return rt


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


def iree_argument(value):
    """A call argument as iree.runtime takes it: numpy scalars as Python numbers, f16/bf16
    ones as their bit patterns (the VM passes them in an i32; a Python float would be
    truncated to an integer)."""
    if not isinstance(value, np.generic):
        return value
    if value.dtype.itemsize == 2 and value.dtype.name in ("float16", "bfloat16"):
        return int(np.asarray(value).view(np.uint16))
    return value.item()


def run_module(module: CorpusModule) -> list[Outcome]:
    """Runs every CALL of ``module`` in order in one fresh context; never raises for traps."""
    outcomes: list[Outcome] = []
    if module.kind == "mlir":
        mod, keep = _mlir_session(module)
        for i, call in enumerate(module.calls):
            args = [iree_argument(a) for a in make_inputs(module, i)]
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


# The child gets the module itself (pickled), so it needs no corpus directory and builds nothing.
_SUBPROCESS_SCRIPT = r"""
import pickle
import sys
sys.path.insert(0, sys.argv[1])
from jitvm.fuzz.corpus import make_inputs
from jitvm.fuzz.oracles.iree import _vmasm_session, call_vmasm
m, i = pickle.loads(bytes.fromhex(sys.argv[2]))
vm, ctx, inst = _vmasm_session(m)
try:
    print(repr(call_vmasm(vm, ctx, m.calls[i], make_inputs(m, i))))
except Exception as e:
    print("TRAP", type(e).__name__, e)
    sys.exit(3)
"""


def run_call_in_subprocess(module: CorpusModule, index: int) -> Outcome:
    """Runs one vmasm call in a fresh interpreter (for calls that crash IREE's runtime).

    Outcome.trapped is True if the call trapped or the process died from a signal; the error
    text says which ("killed by signal 8" for SIGFPE).
    """
    import pickle
    import signal
    import subprocess
    import sys
    from pathlib import Path

    import jitvm

    root = str(Path(jitvm.__file__).resolve().parent.parent)  # where the child imports jitvm from
    r = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS_SCRIPT, root, pickle.dumps((module, index)).hex()],
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
    """``python -m jitvm.fuzz.oracles.iree CORPUS_DIR [name ...]``: prints what IREE returns for
    each CALL of the corpus in CORPUS_DIR (jitvm's own: tests/corpus)."""
    import sys

    from ..corpus import Corpus

    args = argv if argv is not None else sys.argv[1:]
    if not args or args[0].startswith("-"):
        print("usage: python -m jitvm.fuzz.oracles.iree CORPUS_DIR [name ...]", file=sys.stderr)
        return 2
    names = args[1:] or None
    bad = 0
    np.set_printoptions(threshold=12, precision=6)
    for m in Corpus(args[0]).build(names=names):
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
