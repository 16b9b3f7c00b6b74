"""What the runner needs to know about a model without generating it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class ModelSpec:
    """A benchmark model: its exported function, its inputs, and how to write its MLIR.

    `exact`: results must be bit-identical between VM interpreters and the JIT (true unless
    the model calls transcendental functions whose libm implementations may differ).
    `compile_flags`: what iree-compile needs besides the target's flags (ONNX imports:
    `--iree-input-type=onnx`). `params` names the generator's arguments: together with the generator sources they key
    the caches, so `build` (which may write 200 MB) runs only when something changed.
    """

    name: str
    function: str
    inputs: tuple[tuple[tuple[int, ...], str], ...]
    build: Callable[[], str] = field(compare=False, repr=False)
    params: dict = field(default_factory=dict, compare=False)
    exact: bool = True
    flops: int = 0
    compile_flags: tuple[str, ...] = ()  # iree-compile flags of every target (e.g. the input dialect)

    def make_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Seeded standard-normal inputs, the same in every process."""
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(shape, dtype=np.float32).astype(dtype) for shape, dtype in self.inputs]
