"""Which VM feature bits this runtime provides, and the refusal when a module needs more.

A module declares what it needs (module and per-function requirement bits); the verifier
compares that against `available_features()` so a module that needs f64 on a host without
it is refused at load time with a message naming the missing bits, not at the first
f64 instruction. `JITVM_DISABLE_FEATURES` takes features away so tests can exercise the
refusal on any host.
"""

from __future__ import annotations

import os
import platform
from functools import lru_cache

from ..errors import Error, UnsupportedError, VerifyError
from ..frontend.module import FEATURE_BITS, feature_names

DISABLE_ENV = "JITVM_DISABLE_FEATURES"

EXT_F32 = FEATURE_BITS["EXT_F32"]
EXT_F64 = FEATURE_BITS["EXT_F64"]
YIELD = FEATURE_BITS["YIELD"]
UNWIND = FEATURE_BITS["UNWIND"]

# Provided by the runtime itself on every host: coroutines and unwinding are ours to implement.
ALWAYS_AVAILABLE = YIELD | UNWIND

# Architectures whose every implementation has IEEE f32 and f64 in hardware.
_HARDWARE_FLOAT_MACHINES = frozenset({"x86_64", "amd64", "aarch64", "arm64", "i386", "i686",
                                      "ppc64le", "s390x"})

# Elsewhere, the LLVM host-CPU feature names that mean hardware f32 / f64 support.
_FLOAT_CPU_FEATURES = {
    EXT_F32: ("f", "fp", "fpu", "vfp2", "vfp3", "vfp4", "fp-armv8", "hard-float", "sse"),
    EXT_F64: ("d", "fp64", "vfp2", "vfp3", "vfp4", "fp-armv8", "hard-float", "sse2"),
}


class FeatureError(VerifyError, UnsupportedError):
    """A module needs VM features (ISA extensions) this runtime configuration lacks."""


class FeatureConfigError(Error):
    """`JITVM_DISABLE_FEATURES` names something that is not a VM feature."""


def format_features(bits: int) -> str:
    """`EXT_F32|YIELD`, the spelling IREE uses in its feature messages."""
    return "|".join(feature_names(bits))


@lru_cache(maxsize=1)
def hardware_features() -> int:
    """EXT_F32/EXT_F64 when this CPU computes them in hardware (the JIT emits native ops)."""
    if platform.machine().lower() in _HARDWARE_FLOAT_MACHINES:
        return EXT_F32 | EXT_F64
    try:
        import llvmlite.binding as llvm

        enabled = {name for name, on in llvm.get_host_cpu_features().items() if on}
    except (ImportError, RuntimeError):
        return 0
    bits = 0
    for bit, names in _FLOAT_CPU_FEATURES.items():
        if enabled.intersection(names):
            bits |= bit
    return bits


def disabled_features(text: str | None = None) -> int:
    """The bits named in `JITVM_DISABLE_FEATURES` (comma-separated: `EXT_F64,YIELD`)."""
    if text is None:
        text = os.environ.get(DISABLE_ENV, "")
    bits = 0
    for name in (part.strip().upper() for part in text.split(",")):
        if not name:
            continue
        if name not in FEATURE_BITS:
            raise FeatureConfigError(
                f"{DISABLE_ENV} names unknown feature {name!r}; known features: "
                f"{', '.join(FEATURE_BITS)}")
        bits |= FEATURE_BITS[name]
    return bits


def available_features() -> int:
    """The feature bits modules may require here: hardware floats plus YIELD|UNWIND."""
    return (hardware_features() | ALWAYS_AVAILABLE) & ~disabled_features()


def missing_features_message(required: int, available: int) -> str | None:
    """IREE's refusal text when `required` is not covered by `available`, else None."""
    missing = required & ~available
    if not missing:
        return None
    return (f"required module features [{format_features(missing)}] are not available in this "
            f"runtime configuration; have [{format_features(available)}]")
