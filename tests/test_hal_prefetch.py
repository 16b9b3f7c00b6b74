"""Embedded executables are loaded while the host module compiles (hal.executable.Prefetch).

Each executable must be loaded once, on the prefetch thread, and the host must find it
there; a broken one must fail exactly as it fails without the prefetch: in
hal.executable.create, with the same error."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import jitvm
from jitvm.frontend.archive import parse_archive
from jitvm.frontend.module import load_module
from jitvm.fallback_interp import InterpreterBackend
from jitvm.lower.backend import JitBackend
from jitvm.runtime.modules.hal import executable


def _jit() -> JitBackend:
    return JitBackend(use_cache=False, progress=False)


def _recording_loads(monkeypatch) -> list[str]:
    threads = []
    real = executable._load_now

    def recording(key, data, loader):
        threads.append(threading.current_thread().name)
        return real(key, data, loader)

    monkeypatch.setattr(executable, "_load_now", recording)
    return threads


def test_the_executable_is_loaded_once_on_the_prefetch_thread(corpus_module, monkeypatch):
    threads = _recording_loads(monkeypatch)
    path = str(corpus_module("mlir/matmul").vmfb)
    m = jitvm.load(path, backend=_jit())
    assert threads == ["jitvm-prefetch"]
    reference = jitvm.load(path, backend=InterpreterBackend())
    a = (np.arange(32, dtype=np.float32).reshape(4, 8) - 9) / 7
    b = (np.arange(40, dtype=np.float32).reshape(8, 5) - 13) / 3
    assert np.array_equal(np.asarray(m.matmul_4x8x5(a, b)), np.asarray(reference.matmul_4x8x5(a, b)))


def test_without_the_prefetch_the_host_loads_it_itself(corpus_module, monkeypatch):
    threads = _recording_loads(monkeypatch)
    jitvm.load(str(corpus_module("mlir/matmul").vmfb), backend=InterpreterBackend())
    assert threads == ["MainThread"]


def _embedded_start(data: bytes) -> tuple[int, int]:
    """File offset and length of the module's one embedded executable."""
    for seg in load_module(data).rodata:
        try:
            parse_archive(seg.data, "<test>")
        except jitvm.Error:
            continue
        return data.find(bytes(seg.data)), seg.length
    raise AssertionError("no embedded executable")


@pytest.mark.parametrize("at", [0.3, 0.5, 0.9])
def test_a_broken_executable_fails_as_without_the_prefetch(corpus_module, monkeypatch, at):
    data = bytearray(corpus_module("mlir/matmul").vmfb.read_bytes())
    start, length = _embedded_start(bytes(data))
    where = start + int(length * at)
    data[where:where + 32] = b"\xff" * 32
    with pytest.raises(jitvm.Error) as prefetched:
        jitvm.load(bytes(data), backend=_jit())
    threads = _recording_loads(monkeypatch)
    monkeypatch.setattr(jitvm.api, "_prefetch", lambda module, be: None)
    with pytest.raises(jitvm.Error) as plain:
        jitvm.load(bytes(data), backend=_jit())
    assert type(prefetched.value) is type(plain.value)
    assert str(prefetched.value) == str(plain.value)
    assert threads == ["MainThread"]
