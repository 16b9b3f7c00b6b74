"""What verification produces, and the only thing the interpreter and the JIT accept.

A VerifiedFunction carries the facts the verifier proved so the backends need not recheck
them: every register in range and in its bank, i64/f64 pairs aligned, blocks and branch
targets resolved, every call's callee and flattened argument/result types known.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..frontend.cconv import CallingConvention
from ..frontend.decode import Instruction
from ..frontend.module import BytecodeModule, FunctionDescriptor
from ..frontend.types import VmType

_SEAL = object()  # only the verifier constructs verified objects


@dataclass(frozen=True)
class Block:
    """A basic block: its marker and the instructions up to its terminator."""

    index: int
    pc: int  # pc of the block marker
    first: int  # index of the marker in VerifiedFunction.instructions
    last: int  # index of the block's terminator (inclusive)


@dataclass(frozen=True)
class CallSite:
    """A resolved call (call, call.variadic and their yieldable forms)."""

    is_import: bool
    callee: int  # internal function ordinal or import ordinal (import bit stripped)
    name: str  # "module.fn" for internal calls, the import's full name for imports
    cconv: CallingConvention  # the callee's declared convention
    arg_codes: tuple[str, ...]  # one value code per operand register, variadic spans expanded
    result_codes: tuple[str, ...]  # one value code per result register


@dataclass(frozen=True, eq=False)
class VerifiedFunction:
    """A function the verifier accepted: decoded, split into blocks, calls resolved."""

    module: "VerifiedModule" = field(repr=False)
    ordinal: int
    name: str  # display name: debug name, export name or "<module>:<ordinal>"
    descriptor: FunctionDescriptor
    cconv: CallingConvention
    instructions: tuple[Instruction, ...]
    blocks: tuple[Block, ...]
    block_of_pc: Mapping[int, int]  # marker pc -> block index
    calls: Mapping[int, CallSite]  # instruction index -> resolved call
    i32_registers: int
    ref_registers: int
    seal: object = field(default=None, repr=False)

    def __post_init__(self):
        if self.seal is not _SEAL:
            raise TypeError("VerifiedFunction is created by jitvm.verify only")

    @property
    def qualified_name(self) -> str:
        return f"{self.module.name}.{self.name}"


@dataclass(frozen=True, eq=False)
class VerifiedModule:
    """A module the verifier accepted, with its type table and verified functions."""

    module: BytecodeModule = field(repr=False)
    types: tuple[VmType, ...]  # the resolved type table
    features: int  # feature bits this runtime provided at verification
    functions: tuple[VerifiedFunction, ...] = ()
    seal: object = field(default=None, repr=False)

    def __post_init__(self):
        if self.seal is not _SEAL:
            raise TypeError("VerifiedModule is created by jitvm.verify only")

    @property
    def name(self) -> str:
        return self.module.name

    def function(self, ordinal: int) -> VerifiedFunction:
        return self.functions[ordinal]

    def export(self, name: str) -> VerifiedFunction | None:
        e = self.module.export(name)
        return None if e is None else self.functions[e.internal_ordinal]
