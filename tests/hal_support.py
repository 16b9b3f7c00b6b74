"""Helpers shared by the HAL/API/CLI tests: which backend runs them, and IREE as the oracle.

Programs run on the reference interpreter (the backend these tests are about); until that
backend is importable they run on the JIT instead, so the HAL is exercised end to end either
way. `JITVM_TEST_BACKEND=jit|interp` forces one.
"""

from __future__ import annotations

import math
import os
import struct

import numpy as np


def interpreter_available() -> bool:
    from jitvm import UnsupportedError
    from jitvm.api import get_backend

    try:
        get_backend("interp")
    except UnsupportedError:
        return False
    return True


def backend_under_test() -> str:
    forced = os.environ.get("JITVM_TEST_BACKEND")
    if forced:
        return forced
    return "interp" if interpreter_available() else "jit"


def backends_under_test() -> list[str]:
    """Both backends (the JIT and the reference interpreter), or the one JITVM_TEST_BACKEND names."""
    forced = os.environ.get("JITVM_TEST_BACKEND")
    if forced:
        return [forced]
    return ["interp", "jit"] if interpreter_available() else ["jit"]


def iree_session(vmfb, with_check: bool):
    """An IREE context (local-sync) holding the module (and a check module): (module, keepalive)."""
    import iree.runtime as rt

    from jitvm.fuzz.oracles.iree import make_check_module

    config = rt.Config("local-sync")
    vm = rt.VmModule.mmap(config.vm_instance, str(vmfb))
    mods = ([make_check_module(config)] if with_check else []) + [vm]
    ctx = rt.SystemContext(vm_modules=mods, config=config)
    return getattr(ctx.modules, vm.name), (config, vm, ctx)


def iree_call(module, function: str, args):
    """(trapped, message, results as numpy arrays / Python scalars) of one IREE call."""
    from jitvm.fuzz.oracles.iree import iree_argument

    args = [iree_argument(a) for a in args]
    try:
        r = module[function](*args)
    except Exception as e:  # noqa: BLE001 - IREE raises RuntimeError/ValueError for traps
        return True, str(e), []
    out = [] if r is None else list(r) if isinstance(r, tuple) else [r]
    return False, "", [np.asarray(x.to_host()) if hasattr(x, "to_host") else x for x in out]


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance in units in the last place between two float arrays (NaN == NaN;
    f16 and ml_dtypes' bfloat16 and float8 too)."""
    ints = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]

    def ordered(x):
        i = x.view(ints).astype(np.int64)
        return np.where(i < 0, np.iinfo(ints).min - i, i)

    both_nan = np.isnan(a) & np.isnan(b)
    d = np.abs(ordered(a) - ordered(b))
    d[both_nan] = 0
    return int(d.max()) if d.size else 0


def same_result(got, want, max_ulps: int = 0) -> str | None:
    from jitvm.runtime.modules.hal.types import is_float_dtype

    """None if `got` (jitvm) equals `want` (IREE), else a description of the difference."""
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"expected an array, got {type(got).__name__}"
        if got.dtype != want.dtype or got.shape != want.shape:
            return f"{got.dtype}{list(got.shape)} vs IREE {want.dtype}{list(want.shape)}"
        if is_float_dtype(got.dtype):
            d = ulps(got, want)
            if d > max_ulps:
                return f"{d} ulps apart (allowed {max_ulps})"
            return None
        return None if np.array_equal(got, want) else "values differ"
    if isinstance(want, float):
        if not isinstance(got, float):
            return f"expected a float, got {type(got).__name__}"
        if math.isnan(want) and math.isnan(got):
            return None
        if max_ulps == 0:
            return None if struct.pack("<d", got) == struct.pack("<d", want) else f"{got!r} vs {want!r}"
        return None if ulps(np.array([got]), np.array([want])) <= max_ulps else f"{got!r} vs {want!r}"
    if type(got) is not type(want) or got != want:
        return f"{got!r} ({type(got).__name__}) vs IREE {want!r} ({type(want).__name__})"
    return None


def corpus_calls_differ_from_iree(module, corpus_module, vmfb, allowed_ulps: int = 0) -> list[str]:
    """Runs the corpus program's CALL list twice in ONE jitvm module (loaded already) and ONE
    IREE context (module state, memoized command buffers and executables persist), and names
    every call whose trap or results differ."""
    from jitvm import Trap
    from jitvm.fuzz.corpus import make_inputs

    oracle, keep = iree_session(vmfb, corpus_module.check_tests)
    problems = []
    for round_ in (1, 2):
        for i, call in enumerate(corpus_module.calls):
            args = make_inputs(corpus_module, i)
            trapped, message, want = iree_call(oracle, call.function, args)
            where = f"round {round_} {call}"
            try:
                r = module[call.function](*args)
            except Trap as e:
                if not trapped:
                    problems.append(f"{where}: jitvm trapped, IREE did not: {e}")
                continue
            if trapped:
                problems.append(f"{where}: IREE trapped ({message.splitlines()[0][:200]}), jitvm returned {r!r}")
                continue
            got = [] if r is None else list(r) if isinstance(r, tuple) else [r]
            if len(got) != len(want):
                problems.append(f"{where}: {len(got)} results, IREE {len(want)}")
                continue
            for k, (g, w) in enumerate(zip(got, want)):
                diff = same_result(g, w, allowed_ulps)
                if diff:
                    problems.append(f"{where} result {k}: {diff}")
    del keep
    return problems
