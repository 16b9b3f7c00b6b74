"""The opt-in native workgroup trace (runtime.exec.trace): every workgroup recorded once, on the
thread that ran it, and no trace code unless asked for. Each case runs in a process of its
own: the worker code is built once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jitvm.fuzz.corpus import make_inputs

ROOT = Path(__file__).resolve().parents[1]

_SCRIPT = r"""
import json, sys
import numpy as np
import jitvm
from jitvm.runtime.exec import nativecode
from jitvm.lower.backend import JitBackend

calls = json.loads(sys.argv[2])
out = {}
for threads in (1, 2):
    backend = JitBackend(threads=threads, progress=False)
    backend.dispatch_runner().force_threads = threads
    module = jitvm.load(sys.argv[1], backend=backend)
    for function, inputs in calls:
        module[function](*np.load(inputs).values())  # compiled, warm
    trace = nativecode.workgroup_trace()
    if trace is None:
        print(json.dumps(None)); sys.exit(0)
    trace.take()
    for function, inputs in calls:
        module[function](*np.load(inputs).values())
    rows = trace.take()
    dropped = trace.dropped
    recorders = {int(r[0]) for r in rows}
    for _ in range(50):  # a helper that wakes late finds every workgroup claimed: call again
        if len(recorders) >= threads:
            break
        for function, inputs in calls:
            module[function](*np.load(inputs).values())
        recorders |= {int(r[0]) for r in trace.take()}
    out[threads] = {"rows": [[int(v) for v in r] for r in rows], "dropped": dropped, "recorders": len(recorders)}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def workgroups(corpus, tmp_path_factory):
    """(vmfb path, [(function, inputs .npz)]) of the corpus module with the widest grids."""
    m = next(m for m in corpus if m.name == "mlir/workgroups")
    calls = []
    for i, call in enumerate(m.calls):
        path = tmp_path_factory.mktemp("inputs") / f"{i}.npz"
        np.savez(path, *make_inputs(m, i))
        calls.append((call.function, str(path)))
    return str(m.vmfb), calls


def _run(workgroups, env_value: str | None):
    env = {k: v for k, v in os.environ.items() if k != "JITVM_TRACE_WORKGROUPS"}
    if env_value is not None:
        env["JITVM_TRACE_WORKGROUPS"] = env_value
    vmfb, calls = workgroups
    done = subprocess.run([sys.executable, "-c", _SCRIPT, vmfb, json.dumps(calls)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _grids(rows):
    """Per dispatch, in order: (function, sorted workgroup indices), split at a repeated index."""
    out = []
    for thread, kind, index, start, end, fn in rows:
        assert end >= start
        if kind != 0:
            continue
        if not out or out[-1][0] != fn or index in out[-1][1]:
            out.append((fn, []))
        out[-1][1].append(index)
    return [(fn, sorted(ix)) for fn, ix in out]


def test_every_workgroup_is_recorded_once_on_any_thread_count(workgroups):
    traced = _run(workgroups, "1")
    one, two = (_grids(traced[str(t)]["rows"]) for t in (1, 2))
    assert max(len(ix) for _, ix in one) >= 4, f"grids too small to test: {one}"
    assert [ix for _, ix in one] == [ix for _, ix in two]  # the same dispatches, the same grids
    for _, indices in one:
        assert indices == list(range(len(indices)))
    assert len({r[0] for r in traced["1"]["rows"]}) == 1  # one thread: one recorder
    assert traced["1"]["recorders"] == 1
    # Forced onto two, both record; on a busy machine only over several calls (a helper that
    # wakes late finds the grid claimed), so the child repeats them until it sees both.
    assert len({r[0] for r in traced["2"]["rows"]}) <= 2 and traced["2"]["recorders"] == 2
    assert traced["1"]["dropped"] == traced["2"]["dropped"] == 0


def test_records_beyond_the_capacity_are_counted_not_written(workgroups):
    traced = _run(workgroups, "3")  # a capacity of three records
    for t in ("1", "2"):
        n = len(traced[t]["rows"])
        assert n == 3 and traced[t]["dropped"] > 0


def test_no_trace_unless_asked(workgroups):
    assert _run(workgroups, None) is None


_LIBRARY_SCRIPT = r"""
import json, sys
import numpy as np
import jitvm
from jitvm.runtime.exec import nativecode
from jitvm.lower.backend import JitBackend

backend = JitBackend(threads=1, progress=False)
module = jitvm.load(sys.argv[1], backend=backend)
calls = json.loads(sys.argv[2])
for function, inputs in calls:
    module[function](*np.load(inputs).values())
trace = nativecode.workgroup_trace()
trace.take()
for function, inputs in calls:
    module[function](*np.load(inputs).values())
rows = trace.take()
adapter = nativecode.native().library_workgroup
names = {str(a): n for a, n in backend.dispatch_runner().library_exports.items()}
print(json.dumps({"functions": sorted({int(r["function"]) for r in rows if r["kind"] == 0}),
                  "adapter": adapter, "names": names}))
"""


def test_library_workgroups_name_their_exports(corpus_module, tmp_path):
    """llvm-cpu workgroups are recorded under each export's address (which the runner names),
    not under the adapter all of them go through."""
    m = corpus_module("mlir/f16_math")
    calls = []
    for i, call in enumerate(m.calls):
        path = tmp_path / f"{i}.npz"
        np.savez(path, *make_inputs(m, i))
        calls.append((call.function, str(path)))
    env = dict(os.environ, JITVM_TRACE_WORKGROUPS="1")
    done = subprocess.run([sys.executable, "-c", _LIBRARY_SCRIPT, str(m.vmfb), json.dumps(calls)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["adapter"] not in got["functions"]
    names = [got["names"].get(str(f)) for f in got["functions"]]
    assert len(names) >= len(m.calls) and all(names), got
    assert any("matmul" in n for n in names) and any("elementwise" in n or "exp" in n for n in names), names
