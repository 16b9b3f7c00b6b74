"""The host C math library, shared by both backends so their results agree bit for bit.

IREE's runtime evaluates VM math ops with libm (expf, atan2, lroundf, remainderf, ...).
jitvm does the same: the interpreter calls these functions through ctypes and JIT-compiled
code calls the very same symbols.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache

_C = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
      "long": ctypes.c_long, "llong": ctypes.c_longlong}

# name -> (result type, argument types); "long"/"llong" are C's long / long long.
FUNCTIONS: dict[str, tuple[str, tuple[str, ...]]] = {}
for _suffix, _t in (("f", "f32"), ("", "f64")):
    for _name in ("atan", "cos", "sin", "exp", "exp2", "expm1", "log", "log10", "log1p", "log2",
                  "tanh", "erf", "round", "ceil", "floor", "sqrt"):
        FUNCTIONS[_name + _suffix] = (_t, (_t,))
    for _name in ("atan2", "pow", "remainder", "fmod"):
        FUNCTIONS[_name + _suffix] = (_t, (_t, _t))
    FUNCTIONS["fma" + _suffix] = (_t, (_t, _t, _t))
    FUNCTIONS["lround" + _suffix] = ("long", (_t,))
    FUNCTIONS["llround" + _suffix] = ("llong", (_t,))


@lru_cache(maxsize=None)
def _libm():
    path = ctypes.util.find_library("m")
    return ctypes.CDLL(path) if path else ctypes.CDLL(None)


@lru_cache(maxsize=None)
def function(name: str):
    """The libm function `name` as a ctypes callable with the right prototype."""
    result, args = FUNCTIONS[name]
    fn = getattr(_libm(), name)
    fn.restype = _C[result]
    fn.argtypes = [_C[a] for a in args]
    return fn


def address(name: str) -> int:
    return ctypes.cast(function(name), ctypes.c_void_p).value
