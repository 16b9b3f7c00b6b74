"""The 2-D elementwise microkernels, one table entry per op, with IREE's f32 semantics.

IREE runs dispatches with denormals flushed to zero (inputs and results), so float
kernels do the same; arithmetic is single IEEE operations in float32 (rsqrt is
1/sqrtf: two roundings), exp/log are rounded from double, and integer ops wrap.
"""

from __future__ import annotations

import numpy as np

from ....errors import STATUS_CODES, Trap

_TINY = np.float32(np.finfo(np.float32).tiny)


def flush_denormals(a: np.ndarray) -> np.ndarray:
    """x86 FTZ/DAZ: subnormal float32 values become zeros of the same sign."""
    sub = (a != 0) & (np.abs(a) < _TINY)
    if sub.any():
        a = np.where(sub, np.copysign(np.float32(0), a), a).astype(np.float32)
    return a


def _divs(a, b):
    if (b == 0).any():
        raise Trap(STATUS_CODES["INVALID_ARGUMENT"], "integer division by zero in vmvx.divs.2d.i32")
    if ((a == np.iinfo(np.int32).min) & (b == -1)).any():
        raise Trap(STATUS_CODES["INVALID_ARGUMENT"], "integer overflow (INT32_MIN / -1) in vmvx.divs.2d.i32")
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return (np.sign(a.astype(np.int64)) * np.sign(b.astype(np.int64)) * q).astype(np.int32)


def _divu(a, b):
    if (b == 0).any():
        raise Trap(STATUS_CODES["INVALID_ARGUMENT"], "integer division by zero in vmvx.divu.2d.i32")
    return a // b


def _ctlz(a):
    out = np.full(a.shape, 32, dtype=np.uint32)
    nz = a != 0
    out[nz] = 31 - np.floor(np.log2(a[nz].astype(np.float64))).astype(np.uint32)
    return out


def _via_double(fn):
    return lambda a: fn(a.astype(np.float64)).astype(np.float32)


def _rsqrt(a):
    with np.errstate(divide="ignore"):
        return np.float32(1) / np.sqrt(a)


# name -> (numpy dtype the kernel computes in, function)
BINARY = {
    "add.2d.f32": (np.float32, np.add),
    "sub.2d.f32": (np.float32, np.subtract),
    "mul.2d.f32": (np.float32, np.multiply),
    "div.2d.f32": (np.float32, np.divide),
    "add.2d.i32": (np.uint32, np.add),
    "sub.2d.i32": (np.uint32, np.subtract),
    "mul.2d.i32": (np.uint32, np.multiply),
    "and.2d.i32": (np.uint32, np.bitwise_and),
    "or.2d.i32": (np.uint32, np.bitwise_or),
    "xor.2d.i32": (np.uint32, np.bitwise_xor),
    "divs.2d.i32": (np.int32, _divs),
    "divu.2d.i32": (np.uint32, _divu),
    "shl.2d.i32": (np.uint32, lambda a, b: np.left_shift(a, b & 31)),
    "shrs.2d.i32": (np.int32, lambda a, b: np.right_shift(a, b & 31)),
    "shru.2d.i32": (np.uint32, lambda a, b: np.right_shift(a, b & 31)),
}

UNARY = {
    "abs.2d.f32": (np.float32, np.abs),
    "neg.2d.f32": (np.float32, np.negative),
    "ceil.2d.f32": (np.float32, np.ceil),
    "floor.2d.f32": (np.float32, np.floor),
    "exp.2d.f32": (np.float32, _via_double(np.exp)),
    "log.2d.f32": (np.float32, _via_double(np.log)),
    "rsqrt.2d.f32": (np.float32, _rsqrt),
    "ctlz.2d.i32": (np.uint32, _ctlz),
}


def apply(fn, dtype, out: np.ndarray, *inputs: np.ndarray) -> None:
    """out[...] = fn(*inputs), with FTZ/DAZ for float kernels and errors silenced like C."""
    if dtype == np.float32:
        inputs = tuple(flush_denormals(x) for x in inputs)
    with np.errstate(all="ignore"):
        result = fn(*inputs)
    if dtype == np.float32:
        result = flush_denormals(np.asarray(result, dtype=np.float32))
    out[...] = result
