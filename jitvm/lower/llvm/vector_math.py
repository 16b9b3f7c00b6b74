"""Whether this host's libm is the one runtime.native.vecmath reproduces: checked by running
the vector forms and the scalar calls over a probe set, bit for bit, once per host: the
answer is kept in the code store, keyed on the libm file's bytes, jitvm's sources, LLVM
and the target (`known()` reads it without probing: what a baseline compile asks).

The vector forms follow glibc's float functions as its x86_64 FMA build computes them; on
another libc, another glibc build, a CPU without FMA (glibc then takes its plain variant) or
another machine, some probe differs and lowering keeps one libm call per element.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
from functools import lru_cache
from pathlib import Path

import numpy as np

from ...runtime.native import cache as store, engine, mathlib, target as targets, vecmath

_MAP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def probe_inputs(count: int = 1 << 16, seed: int = 22) -> np.ndarray:
    """Special values, each binade's ends, the functions' range boundaries and random bits."""
    special = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF,
               0x00000001, 0x807FFFFF, 0x3F800000, 0xBF800000, 0x42B00000, 0xC2B00000, 0x42B17218,
               0x42B17217, 0xC2CFF1B4, 0xC2CFF1B5, 0xC2CE8ED0, 0x7F7FFFFF, 0xFF7FFFFF]
    edges = [(e << 23) + d for e in range(256) for d in (0, 1, 0x7FFFFF)]
    rng = np.random.default_rng(seed)
    bits = np.concatenate([np.array(special + edges, dtype=np.uint32),
                           np.array(edges, dtype=np.uint32) | np.uint32(0x80000000),
                           rng.integers(0, 1 << 32, count, dtype=np.uint64).astype(np.uint32),
                           # dense where the functions' fast paths live: |x| < 128
                           rng.integers(0, 0x43000000, count, dtype=np.uint32)
                           | (rng.integers(0, 2, count, dtype=np.uint32) << 31)])
    return bits.view(np.float32)


class Maps:
    """Compiled loops out[i] = f(in[i]) over float32 arrays: through each width's vector form
    ("vector4", "vector8", ...) and through the scalar libm call ("scalar"). Their object code
    is kept in the code store, so a later process pays only for running the probe. `wide`:
    the AVX-512 forms (vecmath's `wide`), which only a host with AVX-512 can run."""

    def __init__(self, names=vecmath.FUNCTIONS, wide: bool = False):
        mathlib.register_symbols()
        ir = vecmath.definitions(names, wide=wide)
        widths = vecmath.widths(wide)
        self.kinds = ["scalar"] + [f"vector{w}" for w in widths]
        for name in names:
            ir += vecmath.map_function(name, f"scalar_{name}")
            ir += "".join(vecmath.map_function(name, f"vector{w}_{name}", w) for w in widths)
        self.code = engine.jit_module(ir)
        self._fns = {(kind, name): self.code.function(f"{kind}_{name}", _MAP) for name in names for kind in self.kinds}
        self._pad = max(widths)

    def run(self, kind: str, name: str, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """`name` of every element of `x` through `kind` ("vector": the widest form)."""
        kind = f"vector{self._pad}" if kind == "vector" else kind
        x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        if x.size % self._pad:
            x = np.concatenate([x, np.zeros(self._pad - x.size % self._pad, np.float32)])
            out = None
        out = np.empty_like(x) if out is None else out
        self._fns[(kind, name)](x.ctypes.data, out.ctypes.data, x.size)
        return out

    def differences(self, name: str, x: np.ndarray) -> np.ndarray:
        """The inputs where some vector form's bits differ from the scalar call's."""
        x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        want = self.run("scalar", name, x).view(np.uint32)[:x.size]
        bad = np.zeros(x.size, bool)
        for kind in self.kinds[1:]:
            bad |= self.run(kind, name, x).view(np.uint32)[:x.size] != want
        return x[bad]


REPRODUCED_HOSTS = {("x86_64", "glibc")}  # (machine, libc) whose libm the forms follow


def _libm_digest() -> str | None:
    """sha256 of the libm this process has mapped, or None when it cannot be read."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "/libm." in line or "/libm-" in line}
        if len(paths) != 1:
            return None
        return hashlib.sha256(Path(paths.pop()).read_bytes()).hexdigest()
    except (OSError, IndexError):
        return None


@lru_cache(maxsize=None)
def _answer_key() -> str | None:
    libm = _libm_digest()
    if libm is None:
        return None
    from .cache import key
    return "vm" + key(b"vector-math-probe", targets.host(), {"libm": libm})


def _switched_on() -> bool:
    return os.environ.get(vecmath.ENV_SWITCH, "1") != "0" and \
        (platform.machine(), platform.libc_ver()[0]) in REPRODUCED_HOSTS


def known() -> bool | None:
    """`available()` when it costs no probe (switched off, another host, or answered
    before on this host); else None."""
    if available.cache_info().currsize or not _switched_on():
        return available()
    k = _answer_key()
    hit = store.load(k) if k else None
    return None if hit is None else bool(hit[1].get("available"))


@lru_cache(maxsize=None)
def available() -> bool:
    """Vector math is on (JITVM_VECTOR_MATH unset or not "0"), this is a host whose libm the
    forms follow (elsewhere, e.g. aarch64 glibc, the same sources are contracted differently
    and a probe need not see every difference) and every probe matches."""
    if not _switched_on():
        return False
    k = _answer_key()
    hit = store.load(k) if k else None
    if hit is not None:
        return bool(hit[1].get("available"))
    try:  # the forms lowering may use here: the AVX-512 ones too where the host has it
        all_maps = [Maps(wide=wide) for wide in sorted({False, targets.wide_vectors(targets.host())})]
    except Exception:  # a host LLVM cannot build them for (e.g. no vector registers): plain calls
        return False
    x = probe_inputs()
    answer = all(maps.differences(name, x).size == 0 for maps in all_maps for name in vecmath.FUNCTIONS)
    if k:
        store.store(k, [], {"what": "vector math probe", "available": answer})
    return answer