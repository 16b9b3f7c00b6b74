"""The host C math library, shared by both backends so their results agree bit for bit.

IREE's runtime evaluates VM math ops with libm (expf, atan2, lroundf, remainderf, ...).
jitvm does the same: the interpreter calls these functions through ctypes and JIT-compiled
code calls the very same addresses (registered with LLVM by `register_symbols`).

Which libm: glibc keeps old versions of a few functions next to new ones, and they differ
on domain errors (the old wrappers return a positive NaN, log(-1) = 0x7FF8..., the new ones
the FPU's negative NaN). IREE's runtime wheel (manylinux_2_28) links the versions that
were current in glibc 2.28: the old exp, exp2, log, log2 and pow (the f32 ones are already
the new GLIBC_2.27 versions). `PINNED_VERSIONS` binds the same ones with dlvsym; elsewhere
(another libc, or a glibc without them) the default versions are used.
"""

from __future__ import annotations

import ctypes
import platform
from functools import lru_cache

from . import clib, engine

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

# vm.fpowi.f32/f64 (IREE 3.13): x to an int32 power by repeated squaring, the compiler
# runtime's __powisf2/__powidf2 (libgcc_s; compiler-rt on other systems). IREE's results
# match them bit for bit, its i64 exponent truncated to int32.
POWI = {"f32": "__powisf2", "f64": "__powidf2"}
FUNCTIONS[POWI["f32"]] = ("f32", ("f32", "i32"))
FUNCTIONS[POWI["f64"]] = ("f64", ("f64", "i32"))


# Symbol versions IREE's runtime wheel binds where glibc has several (readelf --dyn-syms on
# iree/_runtime_libs/_runtime*.so of iree-base-runtime 3.13.0), by machine.
_OLD_DOUBLE = ("exp", "exp2", "log", "log2", "pow")
PINNED_VERSIONS: dict[str, dict[str, str]] = {
    "x86_64": {name: "GLIBC_2.2.5" for name in _OLD_DOUBLE},
    "aarch64": {name: "GLIBC_2.17" for name in _OLD_DOUBLE},
}


@lru_cache(maxsize=None)
def _libm():
    """glibc's libm by its soname (what find_library answers there, without running
    `ldconfig -p` in a subprocess at every start), else whatever find_library finds."""
    try:
        return ctypes.CDLL("libm.so.6")
    except OSError:
        from ctypes.util import find_library

        path = find_library("m")
        return ctypes.CDLL(path) if path else ctypes.CDLL(None)


def _versioned(name: str) -> int | None:
    """The address of `name` at the version IREE binds, if this libc has it."""
    version = PINNED_VERSIONS.get(platform.machine(), {}).get(name)
    if version is None:
        return None
    dlvsym = clib.function("dlvsym", ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p])
    if dlvsym is None:  # not glibc
        return None
    return dlvsym(_libm()._handle, name.encode(), version.encode()) or None


@lru_cache(maxsize=None)
def _compiler_runtime():
    """The library holding the compiler's support routines (__powisf2 ...)."""
    for name in ("libgcc_s.so.1", None):
        try:
            lib = ctypes.CDLL(name)
            getattr(lib, POWI["f32"])
            return lib
        except (OSError, AttributeError):
            continue
    raise OSError("no library provides __powisf2 (libgcc_s or compiler-rt), needed by vm.fpowi")


@lru_cache(maxsize=None)
def address(name: str) -> int:
    """Where the libm function `name` that both backends call lives."""
    if name in POWI.values():
        return ctypes.cast(getattr(_compiler_runtime(), name), ctypes.c_void_p).value
    addr = _versioned(name)
    if addr is None:
        addr = ctypes.cast(getattr(_libm(), name), ctypes.c_void_p).value
    return addr


@lru_cache(maxsize=None)
def function(name: str):
    """The libm function `name` as a ctypes callable with the right prototype."""
    result, args = FUNCTIONS[name]
    return ctypes.CFUNCTYPE(_C[result], *(_C[a] for a in args))(address(name))


def register_symbols() -> None:
    """Makes JIT-compiled code's libm calls resolve to the same addresses as `function`."""
    engine.provide({name: address(name) for name in FUNCTIONS})
