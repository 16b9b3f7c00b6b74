"""jitvm.load keeps freed call buffers in the C heap (runtime/heap.py): repeated calls take
no fresh pages from the kernel. Each check runs in a fresh process (the settings are
process-wide and the symptom depends on the heap's layout)."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc malloc settings")

ROUNDS = """
import json, os, resource
from jitvm.runtime import heap
from jitvm.runtime.objects import VmBuffer
if os.environ.get("TUNE") == "1":
    heap.tune()
VmBuffer.allocate(64, 64)  # the native runtime is compiled on first use
def call():  # a call's transient buffers: allocated, filled, all freed
    bufs = [VmBuffer.allocate(1 << 20, 64) for _ in range(3)]
    del bufs
for _ in range(3):
    call()
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    call()
print(json.dumps({"faults": (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / 50}))
"""

CALLS = """
import json, resource, sys
import numpy as np
import jitvm
m = jitvm.load(sys.argv[1])
fn = m.function("predict")
x = np.random.default_rng(0).standard_normal((1, 28, 28, 1), dtype=np.float32)
for _ in range(10):
    fn(x)
r0 = resource.getrusage(resource.RUSAGE_SELF)
for _ in range(100):
    fn(x)
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"faults": (r1.ru_minflt - r0.ru_minflt) / 100}))
"""

RETAINED = """
import json, os
from jitvm.runtime import heap
from jitvm.runtime.objects import VmBuffer
tuned = heap.tune() if os.environ.get("TUNE") == "1" else False
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
VmBuffer.allocate(64, 64)  # the native runtime is compiled on first use: not part of the measure
before = rss()
b = VmBuffer.allocate(16 << 20, 64)  # zeroed by hand at this alignment: every page touched
del b
print(json.dumps({"tuned": tuned, "kept": rss() - before}))
"""


def _run(code: str, *args, env=None) -> dict:
    import os

    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_freeing_a_calls_buffers_does_not_hand_pages_back():
    """Three 1 MB buffers per call, all freed: untuned, glibc trims its heap after every call
    and the next call faults every page back in (about 490 faults); tuned, next to none."""
    assert _run(ROUNDS, env={"TUNE": "1"})["faults"] < 50
    assert _run(ROUNDS, env={"TUNE": "0"})["faults"] > 100  # the symptom is real here


def test_model_calls_take_no_fresh_pages():
    from pathlib import Path

    import jitvm

    got = _run(CALLS, str(Path(jitvm.__file__).parent / "examples" / "cnn.vmfb"))
    assert got["faults"] < 5, got


def test_freed_blocks_stay_in_the_heap_only_when_tuned():
    """16 MB freed: kept by the heap when tuned, returned to the kernel otherwise."""
    tuned = _run(RETAINED, env={"TUNE": "1"})
    plain = _run(RETAINED, env={"TUNE": "0"})
    assert tuned["tuned"] and tuned["kept"] >= 15 << 20, tuned
    assert plain["kept"] < 1 << 20, plain
