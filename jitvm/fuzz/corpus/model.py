"""The corpus's data model: a program's calls and expectations, and its compiled module.

Shared by the directive parser, the builder, the input maker and the oracles, so none of
them imports another for its types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DTYPES = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
}
try:  # bf16 arrays are ml_dtypes' (iree.runtime's dependency, which marshals them too)
    import ml_dtypes

    DTYPES["bf16"] = ml_dtypes.bfloat16
except ImportError:  # pragma: no cover - a corpus program using bf16 then fails to parse, naming it
    pass

#: The backends a corpus MLIR program can be compiled for; a program lists its own with
#: ``// TARGETS:``, else it compiles for all of them (the first listed is the default).
TARGETS = ("vmvx", "llvm-cpu")


class CorpusError(RuntimeError):
    """A corpus file is malformed, a tool is missing, or a compile failed."""


@dataclass(frozen=True)
class ArgSpec:
    """One argument of a CALL: a dtype plus either a shape (MLIR) or a literal value (vmasm)."""

    dtype: str
    shape: tuple[int, ...] | None = None  # None: scalar
    value: int | float | None = None  # only for vmasm literals

    @property
    def is_scalar(self) -> bool:
        return self.shape is None

    def __str__(self) -> str:
        if self.value is not None:
            return f"{self.dtype}={self.value!r}"
        if self.shape is None:
            return self.dtype
        return "x".join(str(d) for d in self.shape) + "x" + self.dtype


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[ArgSpec, ...] = ()

    def __str__(self) -> str:
        return f"@{self.function}(" + ", ".join(str(a) for a in self.args) + ")"


@dataclass(frozen=True)
class CorpusModule:
    name: str  # "mlir/matmul", "vmasm/int_arith"
    kind: str  # "mlir" | "vmasm"
    source: Path
    vmfb: Path  # compiled module
    executables: tuple[Path, ...]  # dumped VMVX executable .vmfb files (mlir only)
    flags: tuple[str, ...]  # the file's own extra flags (the target's flags not included)
    calls: tuple[Call, ...]
    expect_trap: frozenset[str]
    check_tests: bool
    exports: tuple[str, ...] = field(default=())  # exported function names found in the source
    oracle_crash: frozenset[str] = field(default=frozenset())  # IREE dies (SIGFPE) on these
    oracle_quirks: frozenset[str] = field(default=frozenset())  # IREE bug / impl-defined
    target: str = "vmvx"  # the backend the module's executables were compiled for (mlir only)

    def expects_trap(self, function: str) -> bool:
        return function in self.expect_trap


@dataclass(frozen=True)
class Directives:
    flags: tuple[str, ...]
    calls: tuple[Call, ...]
    expect_trap: frozenset[str]
    check_tests: bool
    exports: tuple[str, ...]
    oracle_crash: frozenset[str] = frozenset()
    oracle_quirks: frozenset[str] = frozenset()
    targets: tuple[str, ...] = TARGETS  # the backends the program compiles for, default first
    llvm_cpu_flags: tuple[str, ...] = ()  # appended to `flags` when compiled for llvm-cpu

    def flags_for(self, target: str) -> tuple[str, ...]:
        """The program's own iree-compile flags when it is compiled for `target`."""
        return self.flags + (self.llvm_cpu_flags if target == "llvm-cpu" else ())
