"""Deterministic call inputs for corpus programs: the same arrays in every process and run."""

from __future__ import annotations

import hashlib

import numpy as np

from .model import DTYPES, CorpusError, CorpusModule


def _seed(module_name: str, call_index: int) -> int:
    d = hashlib.sha256(f"{module_name}#{call_index}".encode()).digest()
    return int.from_bytes(d[:8], "little")


def random_array(rng: np.random.Generator, dtype: str, shape: tuple[int, ...] | None):
    """Small values: ints in [-8, 8] (i8: [-5, 5]), floats uniform in [-2, 2) (f16/bf16: f32 values rounded), bools 50/50."""
    shp = () if shape is None else shape
    if dtype == "i1":
        a = rng.integers(0, 2, size=shp).astype(np.bool_)
    elif dtype in ("i8", "i16", "i32", "i64"):
        lim = 5 if dtype == "i8" else 8
        a = rng.integers(-lim, lim + 1, size=shp).astype(DTYPES[dtype])
    elif dtype in ("f32", "f64"):
        a = (rng.random(size=shp) * 4.0 - 2.0).astype(DTYPES[dtype])
    elif dtype in ("f16", "bf16") and dtype in DTYPES:  # f32 draws rounded to the narrow type
        a = (rng.random(size=shp) * 4.0 - 2.0).astype(np.float32).astype(DTYPES[dtype])
    else:
        raise CorpusError(f"no generator for dtype {dtype}")
    return a[()] if shape is None else np.ascontiguousarray(a)


def make_inputs(module: CorpusModule, call_index: int) -> list:
    """Deterministic inputs for ``module.calls[call_index]``.

    MLIR calls: numpy arrays (tensor args) and numpy scalars (scalar args), seeded by module
    name + call index. VM-assembly calls: the literal values as numpy scalars of their dtype.
    """
    call = module.calls[call_index]
    rng = np.random.default_rng(_seed(module.name, call_index))
    out = []
    for a in call.args:
        if a.value is not None:
            out.append(DTYPES[a.dtype](a.value))
        else:
            out.append(random_array(rng, a.dtype, a.shape))
    return out
