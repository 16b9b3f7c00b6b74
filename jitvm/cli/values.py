"""iree-run-module's text conventions: `--input` values in, `result[i]: ...` lines out.

Inputs: `2x2xf32=1,2,3,4`, `2x2xf32=[1 2][3 4]`, `4xf32=0.5` (one value fills the
tensor), `2x3xi8` (zeros), `2xf32=@raw.bin` (bytes from a file), `@x.npy` (a numpy file),
and bare scalars (`5`, `2.5`) typed by the function's declaration or calling convention.
Outputs print as iree-run-module prints them: `i32=7`, `f32=3.5`, and buffer views as
`hal.buffer_view` followed by `2x2xf32=[1 4][9 16]`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ..errors import ArgumentError
from ..api.declaration import ELEMENT_DTYPES, SCALAR_TYPES, ValueDecl
from ..api.marshal import HALF_SCALARS
from ..runtime.modules.hal.buffer_view import HalBufferView, format_float_lower
from ..runtime.modules.hal.types import is_float_dtype
from ..runtime.vm.objects import Ref

_SHAPED = re.compile(r"^((?:\d+x)*)([a-z]+\d*)(?:=(.*))?$", re.S)
_SEPARATORS = re.compile(r"[\s,\[\]]+")
_CODE_TYPES = {"i": "i32", "I": "i64", "f": "f32", "F": "f64"}


def parse_element(token: str, dtype: np.dtype):
    t = token.strip().lower()
    if dtype.kind == "b":
        if t in ("true", "false"):
            return t == "true"
        return int(t, 0) != 0
    if is_float_dtype(dtype):
        return float(t)
    return int(t, 0)


def parse_elements(text: str, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    count = math.prod(shape)
    tokens = [t for t in _SEPARATORS.split(text) if t]
    if not tokens:
        return np.zeros(shape, dtype=dtype)
    try:
        values = [parse_element(t, dtype) for t in tokens]
    except ValueError as e:
        raise ArgumentError(f"cannot parse {text!r} as {dtype.name} values: {e}") from None
    if len(values) == 1 and count > 1:
        values = values * count
    if len(values) != count:
        raise ArgumentError(f"{len(values)} values given for a tensor of shape {shape} ({count} elements)")
    with np.errstate(all="ignore"):
        return np.array(values, dtype=dtype).reshape(shape)


def parse_input(text: str, decl: ValueDecl | None, code: str):
    """One `--input` value for an argument with declaration `decl` and VM code `code`."""
    if text.startswith("@"):
        value = _read(lambda: np.load(Path(text[1:]), allow_pickle=False), text[1:])
        return value[()] if (decl is not None and decl.is_scalar) or (decl is None and code != "r") else value
    m = _SHAPED.match(text.strip())
    if m and m.group(2) in ELEMENT_DTYPES and (m.group(1) or m.group(3) is not None):
        dims, element, data = m.groups()
        dtype = np.dtype(ELEMENT_DTYPES[element])
        shape = tuple(int(d) for d in dims.rstrip("x").split("x")) if dims else ()
        scalar_wanted = (decl.is_scalar if decl is not None else code != "r")
        if not dims and scalar_wanted:
            return _scalar(data or "0", element)
        if data and data.startswith("@"):
            raw = _read(lambda: np.fromfile(Path(data[1:]), dtype=dtype), data[1:])
            if raw.size != math.prod(shape):
                raise ArgumentError(f"{data[1:]} holds {raw.size} {dtype.name} values, the tensor needs "
                                    f"{math.prod(shape)}")
            return raw.reshape(shape)
        return parse_elements(data or "", dtype, shape)
    if decl is not None and decl.is_tensor:
        raise ArgumentError(f"input {text!r} for {decl} must be written SHAPExTYPE=VALUES (e.g. "
                            f"{'x'.join(str(d or 1) for d in decl.shape)}{'x' if decl.shape else ''}{decl.element}=...)")
    typ = decl.type if decl is not None and decl.is_scalar else _CODE_TYPES.get(code)
    if typ in HALF_SCALARS:  # a bare number is the VM i32's bit pattern, as iree-run-module reads it
        typ = _CODE_TYPES.get(code, "i32")
    if typ is None:
        raise ArgumentError(f"input {text!r} cannot be passed to a ref argument; give SHAPExTYPE=VALUES")
    return _scalar(text, typ)


def _read(load, path: str):
    """What `load()` reads from `path`, or ArgumentError naming the file (never OSError)."""
    try:
        return load()
    except OSError as e:
        raise ArgumentError(f"cannot read input file {path}: {e.strerror or e}") from None
    except ValueError as e:  # not a .npy file, or a raw file whose size does not fit the type
        raise ArgumentError(f"cannot read input file {path}: {e}") from None


def _scalar(text: str, typ: str):
    kind, _ = SCALAR_TYPES.get(typ, ("int", 32))
    try:
        if typ in HALF_SCALARS:  # passed as its bits: marshal's f16/bf16 scalar rule
            return np.dtype(ELEMENT_DTYPES[typ]).type(float(text))
        if kind == "float":
            return float(text)
        if text.strip().lower() in ("true", "false"):
            return int(text.strip().lower() == "true")
        return int(text, 0)
    except ValueError:
        raise ArgumentError(f"cannot parse {text!r} as {typ}") from None


def format_result(index: int, code: str, value) -> str:
    """`result[i]: ...` as iree-run-module prints it."""
    head = f"result[{index}]: "
    if code == "i":
        return f"{head}i32={value}"
    if code == "I":
        return f"{head}i64={value}"
    if code == "f":
        return f"{head}f32={format_float_lower(value)}"
    if code == "F":
        return f"{head}f64={format_float_lower(value)}"
    if value is None:
        return f"{head}(null)"
    if isinstance(value, Ref) and isinstance(value.payload, HalBufferView):
        return f"{head}hal.buffer_view\n{value.payload.format()}"
    if isinstance(value, Ref):
        return f"{head}{value.type_name}"
    return f"{head}{value!r}"
