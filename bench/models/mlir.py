"""A tiny MLIR text builder: one function of tensors, SSA names handed out in order.

The models are written as linalg named ops on tensors (what a frontend such as
torch-mlir hands to iree-compile), so the benchmark exercises IREE's normal pipeline.
Weights become `arith.constant dense<"0x...">` (raw little-endian bytes in hex): the
compact form MLIR parses without building one attribute per element.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_ELEMENT = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32"}


@dataclass(frozen=True)
class Value:
    name: str
    shape: tuple[int, ...]
    element: str = "f32"

    @property
    def type(self) -> str:
        return tensor_type(self.shape, self.element)


def tensor_type(shape, element: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def dense(array: np.ndarray) -> str:
    """`dense<...>` for an array: a splat when every element is equal, else its raw bytes."""
    array = np.ascontiguousarray(array)
    element = _ELEMENT[array.dtype]
    flat = array.reshape(-1)
    if flat.size and (flat == flat[0]).all():
        return f"dense<{scalar(flat[0], element)}>"
    return 'dense<"0x' + array.astype(array.dtype.newbyteorder("<")).tobytes().hex().upper() + '">'


def scalar(value, element: str = "f32") -> str:
    """A scalar literal; floats in hex so every bit survives (-inf included)."""
    if element == "f32":
        return "0x%08X" % np.array(value, np.float32).view(np.uint32)
    return str(int(value))


class Function:
    """Collects the body of `func.func @name(args) -> results`."""

    def __init__(self, name: str):
        self.name = name
        self.args: list[Value] = []
        self.lines: list[str] = []
        self.results: list[Value] = []
        self._count = 0

    def fresh(self) -> str:
        self._count += 1
        return f"%v{self._count}"

    def arg(self, shape, element: str = "f32") -> Value:
        v = Value(f"%arg{len(self.args)}", tuple(shape), element)
        self.args.append(v)
        return v

    def op(self, text: str, shape, element: str = "f32") -> Value:
        """Emits `%new = text` and returns %new; `text` is everything after the `=`."""
        v = Value(self.fresh(), tuple(shape), element)
        self.lines.append(f"    {v.name} = {text}")
        return v

    def const(self, array: np.ndarray) -> Value:
        element = _ELEMENT[np.dtype(array.dtype)]
        return self.op(f"arith.constant {dense(array)} : {tensor_type(array.shape, element)}",
                       array.shape, element)

    def scalar_const(self, value, element: str = "f32") -> str:
        name = self.fresh()
        self.lines.append(f"    {name} = arith.constant {scalar(value, element)} : {element}")
        return name

    def ret(self, *values: Value) -> None:
        self.results = list(values)

    def text(self) -> str:
        args = ", ".join(f"{a.name}: {a.type}" for a in self.args)
        results = ", ".join(r.type for r in self.results)
        names = ", ".join(r.name for r in self.results)
        head = f"  func.func @{self.name}({args}) -> ({results}) {{"
        tail = f"    return {names} : {results}\n  }}"
        return "\n".join([head, *self.lines, tail])


def module(*functions: Function) -> str:
    return "module {\n" + "\n".join(f.text() for f in functions) + "\n}\n"
