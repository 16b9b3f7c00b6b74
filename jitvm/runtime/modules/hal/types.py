"""The HAL's enumerations as IREE defines them: memory types, usages, access, element types.

Programs pass these bitfields as plain integers (the compiler bakes IREE's values in), so
the numbers here are part of the ABI. Names are kept for messages only.
"""

from __future__ import annotations

import numpy as np

WHOLE_BUFFER = (1 << 64) - 1  # IREE_HAL_WHOLE_BUFFER: -1 as an unsigned device size
INFINITE_TIMEOUT_MS = 0xFFFFFFFF
QUEUE_AFFINITY_ANY = (1 << 64) - 1

# --- memory types ------------------------------------------------------------------------------
MEMORY_TYPE_OPTIMAL = 1 << 0
MEMORY_TYPE_HOST_VISIBLE = 1 << 1
MEMORY_TYPE_HOST_COHERENT = 1 << 2
MEMORY_TYPE_HOST_CACHED = 1 << 3
MEMORY_TYPE_DEVICE_VISIBLE = 1 << 4
MEMORY_TYPE_DEVICE_LOCAL = MEMORY_TYPE_DEVICE_VISIBLE | (1 << 5)
MEMORY_TYPE_HOST_LOCAL = MEMORY_TYPE_HOST_VISIBLE | MEMORY_TYPE_HOST_COHERENT | (1 << 6)

MEMORY_TYPE_BITS = {
    "OPTIMAL": MEMORY_TYPE_OPTIMAL, "HOST_VISIBLE": MEMORY_TYPE_HOST_VISIBLE,
    "HOST_COHERENT": MEMORY_TYPE_HOST_COHERENT, "HOST_CACHED": MEMORY_TYPE_HOST_CACHED,
    "DEVICE_VISIBLE": MEMORY_TYPE_DEVICE_VISIBLE, "DEVICE_LOCAL": MEMORY_TYPE_DEVICE_LOCAL,
    "HOST_LOCAL": MEMORY_TYPE_HOST_LOCAL,
}

# --- memory access -------------------------------------------------------------------------------
ACCESS_READ = 1 << 0
ACCESS_WRITE = 1 << 1
ACCESS_DISCARD = 1 << 2
ACCESS_ALL = ACCESS_READ | ACCESS_WRITE | ACCESS_DISCARD

ACCESS_BITS = {"READ": ACCESS_READ, "WRITE": ACCESS_WRITE, "DISCARD": ACCESS_DISCARD,
               "MAY_ALIAS": 1 << 3, "UNALIGNED": 1 << 4, "ANY": 1 << 5}

# --- buffer usage --------------------------------------------------------------------------------
USAGE_TRANSFER_SOURCE = 1 << 0
USAGE_TRANSFER_TARGET = 1 << 1
USAGE_TRANSFER = USAGE_TRANSFER_SOURCE | USAGE_TRANSFER_TARGET
USAGE_DISPATCH_INDIRECT_PARAMETERS = 1 << 8
USAGE_DISPATCH_UNIFORM_READ = 1 << 9
USAGE_DISPATCH_STORAGE_READ = 1 << 10
USAGE_DISPATCH_STORAGE_WRITE = 1 << 11
USAGE_DISPATCH_STORAGE = USAGE_DISPATCH_STORAGE_READ | USAGE_DISPATCH_STORAGE_WRITE
USAGE_DISPATCH_IMAGE = (1 << 12) | (1 << 13)
USAGE_DISPATCH = (USAGE_DISPATCH_INDIRECT_PARAMETERS | USAGE_DISPATCH_UNIFORM_READ
                  | USAGE_DISPATCH_STORAGE | USAGE_DISPATCH_IMAGE)
USAGE_SHARING_IMMUTABLE = 1 << 19
USAGE_MAPPING_SCOPED = 1 << 24
USAGE_MAPPING_PERSISTENT = 1 << 25
USAGE_MAPPING_ACCESS_RANDOM = 1 << 27
USAGE_MAPPING = USAGE_MAPPING_SCOPED | USAGE_MAPPING_ACCESS_RANDOM
USAGE_DEFAULT = USAGE_TRANSFER | USAGE_DISPATCH_STORAGE

USAGE_BITS = {
    "TRANSFER_SOURCE": USAGE_TRANSFER_SOURCE, "TRANSFER_TARGET": USAGE_TRANSFER_TARGET,
    "DISPATCH_INDIRECT_PARAMETERS": USAGE_DISPATCH_INDIRECT_PARAMETERS,
    "DISPATCH_UNIFORM_READ": USAGE_DISPATCH_UNIFORM_READ,
    "DISPATCH_STORAGE_READ": USAGE_DISPATCH_STORAGE_READ,
    "DISPATCH_STORAGE_WRITE": USAGE_DISPATCH_STORAGE_WRITE,
    "DISPATCH_IMAGE_READ": 1 << 12, "DISPATCH_IMAGE_WRITE": 1 << 13,
    "SHARING_EXPORT": 1 << 16, "SHARING_REPLICATE": 1 << 17, "SHARING_CONCURRENT": 1 << 18,
    "SHARING_IMMUTABLE": USAGE_SHARING_IMMUTABLE, "MAPPING_SCOPED": USAGE_MAPPING_SCOPED,
    "MAPPING_PERSISTENT": USAGE_MAPPING_PERSISTENT, "MAPPING_OPTIONAL": 1 << 26,
    "MAPPING_ACCESS_RANDOM": USAGE_MAPPING_ACCESS_RANDOM,
    "MAPPING_ACCESS_SEQUENTIAL_WRITE": 1 << 28,
}

# --- command buffers -----------------------------------------------------------------------------
COMMAND_BUFFER_MODE_ONE_SHOT = 1 << 0
DISPATCH_FLAG_STATIC_INDIRECT_PARAMETERS = 1 << 1  # workgroup count read at record time
DISPATCH_FLAG_DYNAMIC_INDIRECT_PARAMETERS = 1 << 2  # workgroup count read at execution time
DISPATCH_FLAG_CUSTOM_DIRECT_ARGUMENTS = 1 << 3
DISPATCH_FLAG_CUSTOM_INDIRECT_ARGUMENTS = 1 << 4

# --- element types -------------------------------------------------------------------------------
# element type = (numerical type << 24) | bit count
NUMERICAL_UNKNOWN = 0x00
NUMERICAL_INTEGER = 0x10
NUMERICAL_INTEGER_SIGNED = 0x11
NUMERICAL_INTEGER_UNSIGNED = 0x12
NUMERICAL_BOOLEAN = 0x13
NUMERICAL_FLOAT_IEEE = 0x21
NUMERICAL_FLOAT_BRAIN = 0x22
NUMERICAL_FLOAT_COMPLEX = 0x23
NUMERICAL_FLOAT_8_E5M2 = 0x24
NUMERICAL_FLOAT_8_E4M3_FN = 0x25
NUMERICAL_FLOAT_8_E5M2_FNUZ = 0x26
NUMERICAL_FLOAT_8_E4M3_FNUZ = 0x27
NUMERICAL_FLOAT_8_E8M0_FNU = 0x28

ENCODING_OPAQUE = 0
ENCODING_DENSE_ROW_MAJOR = 1


def as_signed(value: int) -> int:
    """A 64-bit unsigned device size as the signed i64 a program wrote (for messages)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def device_size(value: int) -> int:
    """A VM i64 as an unsigned device size (so -1 becomes WHOLE_BUFFER)."""
    return value & 0xFFFFFFFFFFFFFFFF


def element_type(numerical: int, bits: int) -> int:
    return (numerical << 24) | bits


def numerical_type(etype: int) -> int:
    return (etype >> 24) & 0xFF


def bit_count(etype: int) -> int:
    return etype & 0xFF


def is_integer(etype: int) -> bool:
    return numerical_type(etype) & 0xF0 == NUMERICAL_INTEGER


def is_opaque(etype: int) -> bool:
    return numerical_type(etype) == NUMERICAL_UNKNOWN


def dense_byte_count(etype: int, count: int = 1) -> int:
    """Bytes of `count` densely packed elements (sub-byte types pack, rounding up)."""
    return (bit_count(etype) * count + 7) // 8


# The numpy dtypes of element types, both ways. Signless ints read back as signed, like
# iree.runtime does; bools travel as one byte per element.
_NUMPY = [
    (element_type(NUMERICAL_BOOLEAN, 8), np.bool_),
    (element_type(NUMERICAL_INTEGER, 8), np.int8),
    (element_type(NUMERICAL_INTEGER_SIGNED, 8), np.int8),
    (element_type(NUMERICAL_INTEGER_UNSIGNED, 8), np.uint8),
    (element_type(NUMERICAL_INTEGER, 16), np.int16),
    (element_type(NUMERICAL_INTEGER_SIGNED, 16), np.int16),
    (element_type(NUMERICAL_INTEGER_UNSIGNED, 16), np.uint16),
    (element_type(NUMERICAL_INTEGER, 32), np.int32),
    (element_type(NUMERICAL_INTEGER_SIGNED, 32), np.int32),
    (element_type(NUMERICAL_INTEGER_UNSIGNED, 32), np.uint32),
    (element_type(NUMERICAL_INTEGER, 64), np.int64),
    (element_type(NUMERICAL_INTEGER_SIGNED, 64), np.int64),
    (element_type(NUMERICAL_INTEGER_UNSIGNED, 64), np.uint64),
    (element_type(NUMERICAL_FLOAT_IEEE, 16), np.float16),
    (element_type(NUMERICAL_FLOAT_IEEE, 32), np.float32),
    (element_type(NUMERICAL_FLOAT_IEEE, 64), np.float64),
    (element_type(NUMERICAL_FLOAT_COMPLEX, 64), np.complex64),
    (element_type(NUMERICAL_FLOAT_COMPLEX, 128), np.complex128),
]

class ExtendedOnMiss(dict):
    """A table whose remaining entries `extend()` supplies on the first lookup that misses:
    the bf16 and f8 dtypes come from ml_dtypes (the package iree.runtime uses for them),
    whose import costs 0.5-0.9 s, so a load that never meets those types never imports it."""

    def __init__(self, entries, extend):
        super().__init__(entries)
        self._extend = extend

    def _complete(self) -> bool:
        if self._extend is None:
            return False
        extend, self._extend = self._extend, None
        for k, v in extend():
            self.setdefault(k, v)
        return True

    def __missing__(self, key):
        if self._complete():
            return self[key]
        raise KeyError(key)

    def get(self, key, default=None):
        if not dict.__contains__(self, key):
            self._complete()
        return dict.get(self, key, default)

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or (self._complete() and dict.__contains__(self, key))


def ml_dtypes_by_name() -> dict[str, object]:
    """bf16 and the f8 types by their MLIR names, as ml_dtypes' numpy types ({} without it)."""
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - arrays of these types are then refused
        return {}
    return {"bf16": ml_dtypes.bfloat16, "f8E5M2": ml_dtypes.float8_e5m2, "f8E4M3FN": ml_dtypes.float8_e4m3fn,
            "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz, "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
            "f8E8M0FNU": ml_dtypes.float8_e8m0fnu}


def _ml_numpy() -> list[tuple[int, object]]:
    return [(MLIR_ELEMENT_TYPES[name], dt) for name, dt in ml_dtypes_by_name().items()]  # defined below; called lazily


NUMPY_OF_ELEMENT = ExtendedOnMiss({et: np.dtype(dt) for et, dt in _NUMPY},
                                  lambda: [(et, np.dtype(dt)) for et, dt in _ml_numpy()])


def is_float_dtype(dtype: np.dtype) -> bool:
    """numpy floats and the ml_dtypes ones (bfloat16, float8_*), which numpy sees as kind 'V'."""
    return dtype.kind == "f" or dtype.name == "bfloat16" or dtype.name.startswith("float8")
ELEMENT_OF_NUMPY = ExtendedOnMiss({np.dtype(dt): et for et, dt in reversed(_NUMPY)
                                   if numerical_type(et) != NUMERICAL_INTEGER},  # arrays carry their signedness
                                  lambda: [(np.dtype(dt), et) for et, dt in _ml_numpy()])

# MLIR element type spellings (declarations, iree-run-module inputs) -> element type.
MLIR_ELEMENT_TYPES = {
    "i1": element_type(NUMERICAL_BOOLEAN, 8),
    "i4": element_type(NUMERICAL_INTEGER, 4),
    "i8": element_type(NUMERICAL_INTEGER, 8), "si8": element_type(NUMERICAL_INTEGER_SIGNED, 8),
    "ui8": element_type(NUMERICAL_INTEGER_UNSIGNED, 8),
    "i16": element_type(NUMERICAL_INTEGER, 16), "si16": element_type(NUMERICAL_INTEGER_SIGNED, 16),
    "ui16": element_type(NUMERICAL_INTEGER_UNSIGNED, 16),
    "i32": element_type(NUMERICAL_INTEGER, 32), "si32": element_type(NUMERICAL_INTEGER_SIGNED, 32),
    "ui32": element_type(NUMERICAL_INTEGER_UNSIGNED, 32),
    "i64": element_type(NUMERICAL_INTEGER, 64), "si64": element_type(NUMERICAL_INTEGER_SIGNED, 64),
    "ui64": element_type(NUMERICAL_INTEGER_UNSIGNED, 64),
    "f16": element_type(NUMERICAL_FLOAT_IEEE, 16), "f32": element_type(NUMERICAL_FLOAT_IEEE, 32),
    "f64": element_type(NUMERICAL_FLOAT_IEEE, 64), "bf16": element_type(NUMERICAL_FLOAT_BRAIN, 16),
    "f8E5M2": element_type(NUMERICAL_FLOAT_8_E5M2, 8), "f8E4M3FN": element_type(NUMERICAL_FLOAT_8_E4M3_FN, 8),
    "f8E5M2FNUZ": element_type(NUMERICAL_FLOAT_8_E5M2_FNUZ, 8),
    "f8E4M3FNUZ": element_type(NUMERICAL_FLOAT_8_E4M3_FNUZ, 8),
    "f8E8M0FNU": element_type(NUMERICAL_FLOAT_8_E8M0_FNU, 8),
}

_PREFIXES = {
    NUMERICAL_BOOLEAN: "i", NUMERICAL_INTEGER: "i", NUMERICAL_INTEGER_SIGNED: "si",
    NUMERICAL_INTEGER_UNSIGNED: "ui", NUMERICAL_FLOAT_IEEE: "f", NUMERICAL_FLOAT_BRAIN: "bf",
    NUMERICAL_FLOAT_COMPLEX: "cf",
}


_F8_NAMES = {NUMERICAL_FLOAT_8_E5M2: "f8E5M2", NUMERICAL_FLOAT_8_E4M3_FN: "f8E4M3FN",
             NUMERICAL_FLOAT_8_E5M2_FNUZ: "f8E5M2FNUZ", NUMERICAL_FLOAT_8_E4M3_FNUZ: "f8E4M3FNUZ",
             NUMERICAL_FLOAT_8_E8M0_FNU: "f8E8M0FNU"}


def element_type_name(etype: int) -> str:
    """IREE's spelling: i32, si8, f32, i1 for booleans, *8 for opaque bytes."""
    num = numerical_type(etype)
    if num == NUMERICAL_BOOLEAN:
        return "i1"
    if num in _F8_NAMES and bit_count(etype) == 8:
        return _F8_NAMES[num]
    return f"{_PREFIXES.get(num, '*')}{bit_count(etype)}"


def element_types_compatible(actual: int, expected: int) -> bool:
    """IREE's buffer_view.assert rule: opaque matches anything, same-width ints match."""
    if is_opaque(actual):
        return True
    if is_integer(actual) and is_integer(expected) and bit_count(actual) == bit_count(expected):
        return True
    return actual == expected


def format_bits(value: int, names: dict[str, int]) -> str:
    """A bitfield as NAME|NAME (composite names first), or hex if nothing matches."""
    parts, rest = [], value
    for name, bits in sorted(names.items(), key=lambda kv: -bin(kv[1]).count("1")):
        if bits and rest & bits == bits:
            parts.append(name)
            rest &= ~bits
    if rest:
        parts.append(f"0x{rest:X}")
    return "|".join(parts) or "NONE"
