"""Assembled modules behave like the originals: IREE's runtime and jitvm on dump -> asm output.

Each corpus module is dumped and reassembled; every CALL directive then runs on the original
under iree.runtime (the reference) and on the reassembled module under iree.runtime and
under jitvm, and all results must agree. Calls that crash IREE's process (ORACLE-CRASH) are
left to the corpus tests. """

from __future__ import annotations

import dataclasses
import math
import struct

import numpy as np
import pytest

import jitvm
from jitvm.frontend.asm import assemble
from jitvm.frontend.dump import dump_text
from jitvm.frontend.module import load_module
from jitvm.fuzz.corpus import make_inputs
from jitvm.fuzz.oracles.iree import iree_argument, run_module
from tests.corpus import source_files

VMASM = [name for name, kind, _ in source_files() if kind == "vmasm"]
MLIR = [name for name, kind, _ in source_files() if kind == "mlir"]

# The backends a reassembled module must also run under (besides iree.runtime).
JITVM_BACKENDS = ("jit", "interp")


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or struct.pack("<d", a) == struct.pack("<d", b)
    if hasattr(a, "deref") or hasattr(b, "deref") or hasattr(a, "addr") or hasattr(b, "addr"):
        return (a is None) == (b is None)  # refs: only presence is comparable across runtimes
    return type(a) is type(b) and a == b


def reassembled(cm, tmp_path):
    path = tmp_path / (cm.name.replace("/", "__") + ".vmfb")
    path.write_bytes(assemble(dump_text(load_module(cm.vmfb), summary=False), str(cm.vmfb)))
    return path


def runnable(cm):
    """The module without the calls that kill IREE's process (run in subprocesses elsewhere)."""
    return dataclasses.replace(cm, calls=tuple(c for c in cm.calls if c.function not in cm.oracle_crash))


def compare(cm, expected, got) -> list[str]:
    bad = []
    for want, have in zip(expected, got):
        if want.trapped != have.trapped:
            bad.append(f"{want.call}: trapped {want.trapped} vs {have.trapped} ({want.error or have.error})")
        elif len(want.results) != len(have.results) or not all(map(same, want.results, have.results)):
            bad.append(f"{want.call}: {want.results} vs {have.results}")
    return bad


def bare_instance(path, backend):
    """The module alone in a context, as the oracle runs VM-assembly modules (no hal module)."""
    from jitvm.api import get_backend
    from jitvm.runtime.vm.bytecode import LoadedModule
    from jitvm.runtime.vm.context import Context

    context = Context()
    return context, context.add(LoadedModule(jitvm.verify_module(load_module(path)), get_backend(backend)))


def run_under_jitvm(cm, path, backend):
    """Outcomes of the CALLs on `path` under a jitvm backend, shaped like the oracle's."""
    from jitvm.fuzz.oracles.iree import Outcome

    if cm.kind == "vmasm":
        _context, instance = bare_instance(path, backend)
    else:
        module = jitvm.load(str(path), backend)
    out = []
    for i, call in enumerate(cm.calls):
        try:
            if cm.kind == "vmasm":
                results = list(instance.lookup(call.function).call([a.value for a in call.args]))
            else:
                fn = module.function(call.function)
                args = [iree_argument(a) for a in make_inputs(cm, i)]
                r = fn(*args)
                results = [] if r is None else [np.asarray(x) if hasattr(x, "shape") else x
                                                for x in (r if isinstance(r, tuple) else (r,))]
        except jitvm.Trap as e:
            out.append(Outcome(call, i, True, str(e)))
            continue
        out.append(Outcome(call, i, False, results=results))
    return out


def check_module(cm, tmp_path):
    cm = runnable(cm)
    path = reassembled(cm, tmp_path)
    expected = run_module(cm)
    problems = compare(cm, expected, run_module(dataclasses.replace(cm, vmfb=path)))
    assert not problems, "iree.runtime, original vs reassembled:\n" + "\n".join(problems)
    for backend in JITVM_BACKENDS:
        if cm.oracle_quirks:
            continue  # IREE's results there are not the VM's semantics; the JIT tests cover them
        problems = compare(cm, expected, run_under_jitvm(cm, path, backend))
        assert not problems, f"jitvm ({backend}) on the reassembled module vs IREE:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", VMASM + MLIR)
def test_reassembled_module_runs_like_the_original(corpus_by_name, tmp_path, name):
    check_module(corpus_by_name[name], tmp_path)
