"""Parsing `iree.abi.declaration` reflection: what a function's arguments and results are.

iree-compile records each public function's source-level signature, e.g.
`sync func @f(%input0: tensor<2x?xf32>, %input1: i32) -> (%output0: tensor<2xi1>)`.
The API uses it to marshal numpy arrays and scalars and to name arguments in errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..runtime.modules.hal.types import ExtendedOnMiss, ml_dtypes_by_name

# MLIR element type -> numpy dtype of the host-side value (bf16 and f8: ml_dtypes', imported when met)
ELEMENT_DTYPES = ExtendedOnMiss({
    "i1": np.bool_, "i8": np.int8, "si8": np.int8, "ui8": np.uint8, "i16": np.int16, "si16": np.int16,
    "ui16": np.uint16, "i32": np.int32, "si32": np.int32, "ui32": np.uint32, "i64": np.int64,
    "si64": np.int64, "ui64": np.uint64, "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "index": np.int64, "complex<f32>": np.complex64, "complex<f64>": np.complex128,
}, lambda: ml_dtypes_by_name().items())

# scalar MLIR type -> (kind, bits): kind "int" or "float"
SCALAR_TYPES = {"i1": ("int", 1), "i8": ("int", 8), "i16": ("int", 16), "i32": ("int", 32), "i64": ("int", 64),
                "si8": ("int", 8), "si16": ("int", 16), "si32": ("int", 32), "si64": ("int", 64),
                "ui8": ("uint", 8), "ui16": ("uint", 16), "ui32": ("uint", 32), "ui64": ("uint", 64),
                "index": ("int", 64), "f16": ("float", 16), "bf16": ("float", 16), "f32": ("float", 32),
                "f64": ("float", 64)}


@dataclass(frozen=True)
class ValueDecl:
    """One argument or result of an `iree.abi.declaration`."""

    name: str  # "%input0"
    type: str  # as written: "tensor<2x?xf32>", "i32", "!hal.fence"
    shape: tuple[int | None, ...] | None = None  # tensors only; None dims are dynamic
    element: str | None = None  # tensors: the MLIR element type

    @property
    def is_tensor(self) -> bool:
        return self.shape is not None

    @property
    def is_scalar(self) -> bool:
        return self.type in SCALAR_TYPES

    @property
    def dtype(self) -> np.dtype | None:
        key = self.element if self.is_tensor else self.type
        dt = ELEMENT_DTYPES.get(key)
        return None if dt is None else np.dtype(dt)

    def __str__(self) -> str:
        return f"{self.name}: {self.type}"


@dataclass(frozen=True)
class Declaration:
    """A function's parsed `iree.abi.declaration`: its inputs and outputs."""

    text: str
    is_async: bool
    name: str
    inputs: tuple[ValueDecl, ...]
    outputs: tuple[ValueDecl, ...]


_HEAD = re.compile(r"^\s*(sync|async)\s+func\s+@(\S+?)\s*\(")
_TENSOR = re.compile(r"^tensor<(.*)>$")


def _split_top(text: str) -> list[str]:
    """Splits at commas outside <>, (), [] and {}."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    tail = text[start:]
    if tail.strip():
        parts.append(tail)
    return [p.strip() for p in parts]


def _closing(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] in "<([{":
            depth += 1
        elif text[i] in ">)]}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced brackets")


def parse_value(text: str, index: int, prefix: str) -> ValueDecl:
    name, sep, typ = text.partition(":")
    if not sep:
        name, typ = f"%{prefix}{index}", text
    typ = typ.strip()
    typ = re.sub(r"\s*\{.*\}\s*$", "", typ)  # trailing attribute dictionaries
    m = _TENSOR.match(typ)
    if not m:
        return ValueDecl(name.strip(), typ)
    body = _split_top(m.group(1))[0]  # drop an encoding after a top-level comma
    dims = body.split("x")
    element = dims.pop()
    while dims and not re.fullmatch(r"\d+|\?", dims[-1]):  # element types like complex<f32> hold no 'x'
        element = dims.pop() + "x" + element
    shape = tuple(None if d == "?" else int(d) for d in dims)
    return ValueDecl(name.strip(), typ, shape, element)


def parse_declaration(text: str | None) -> Declaration | None:
    """The parsed declaration, or None if absent or not in a form this parser knows."""
    if not text:
        return None
    m = _HEAD.match(text)
    if not m:
        return None
    try:
        close = _closing(text, m.end() - 1)
        inputs = _split_top(text[m.end():close])
        rest = text[close + 1:].strip()
        outputs: list[str] = []
        if rest.startswith("->"):
            rest = rest[2:].strip()
            if rest.startswith("("):
                outputs = _split_top(rest[1:_closing(rest, 0)])
            elif rest:
                outputs = [rest]
        return Declaration(text, m.group(1) == "async", m.group(2),
                           tuple(parse_value(a, i, "input") for i, a in enumerate(inputs)),
                           tuple(parse_value(r, i, "output") for i, r in enumerate(outputs)))
    except (ValueError, IndexError):
        return None
