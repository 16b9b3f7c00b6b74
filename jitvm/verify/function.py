"""One function: features, decoding, block structure, then every operand of every instruction.

Two linear passes over the decoded instructions: the first finds the blocks (so branch
targets can be resolved whatever their direction), the second applies the per-op operand
plans of `operands` and the signature rules of `calls`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import DecodeError, VerifyError
from ..frontend.decode import decode_function
from ..frontend.module import BytecodeModule
from ..frontend.types import VmType
from . import model
from .blocks import BLOCK_OP, find_blocks
from .calls import RULES
from .features import FeatureError, format_features, missing_features_message
from .operands import PLANS
from .site import FunctionSite


@dataclass
class ModuleFacts:
    """What every function's rules look up in the module, computed once per module."""

    module: BytecodeModule
    types: tuple[VmType, ...]
    features: int
    internal_names: dict[int, str] = field(default_factory=dict)

    def internal_name(self, ordinal: int) -> str:
        name = self.internal_names.get(ordinal)
        if name is None:
            name = self.internal_names[ordinal] = f"{self.module.name}.{self.module.display_name(ordinal)}"
        return name


class FunctionVerifier:
    """The state the operand rules read (counts, tables) and the error builder they call."""

    def __init__(self, facts: ModuleFacts, ordinal: int):
        m = facts.module
        self.facts = facts
        self.module = m
        self.ordinal = ordinal
        self.site = FunctionSite(m, ordinal)
        self.descriptor = m.functions[ordinal]
        self.cconv = m.signatures[ordinal].cconv
        self.length = self.descriptor.bytecode_length
        self.i32_count = self.descriptor.i32_register_count
        self.ref_count = self.descriptor.ref_register_count
        self.types = facts.types
        self.global_bytes = m.global_bytes
        self.global_refs = m.global_refs
        self.rodata_count = len(m.rodata)
        self.import_count = len(m.imports)
        self.function_count = len(m.functions)
        self.instructions: list = []
        self.block_of_pc: dict[int, int] = {}
        self.calls: dict[int, model.CallSite] = {}
        self.block: int | None = None

    def internal_name(self, ordinal: int) -> str:
        return self.facts.internal_name(ordinal)

    def fail(self, ins, message: str) -> VerifyError:
        return self.site.error_at(ins, self.block, message)

    def run(self, verified_module: model.VerifiedModule) -> model.VerifiedFunction:
        self._check_features()
        self._decode()
        blocks, self.block_of_pc = find_blocks(self)
        self._check_instructions()
        return model.VerifiedFunction(
            module=verified_module, ordinal=self.ordinal, name=self.site.name,
            descriptor=self.descriptor, cconv=self.cconv, instructions=tuple(self.instructions),
            blocks=blocks, block_of_pc=MappingProxyType(self.block_of_pc), calls=MappingProxyType(self.calls),
            i32_registers=self.i32_count, ref_registers=self.ref_count, seal=model._SEAL)

    def _check_features(self) -> None:
        message = missing_features_message(self.descriptor.requirements, self.facts.features)
        if message:
            raise FeatureError(f"{self.site.prefix}: {message}")

    def _decode(self) -> None:
        try:
            self.instructions = decode_function(self.module.function_bytes(self.ordinal), self.site.prefix)
        except DecodeError as e:
            raise VerifyError(str(e)) from e
        self.site.instructions = self.instructions

    def _check_instructions(self) -> None:
        plans, rules = PLANS, RULES
        required = self.descriptor.requirements
        block = -1
        for index, ins in enumerate(self.instructions):
            op = ins.op
            if op is BLOCK_OP:
                block += 1
                self.block = block
                continue
            if op.feature & ~required:
                raise self.fail(ins, f"{op.mnemonic} needs feature {format_features(op.feature)} but the "
                                     f"function declares only [{format_features(required)}]")
            args = ins.args
            for i, fld, check in plans[op]:
                check(self, ins, fld, args[i])
            rule = rules.get(op)
            if rule is not None:
                rule(self, index, ins)


def verify_function(facts: ModuleFacts, verified_module: model.VerifiedModule, ordinal: int) -> model.VerifiedFunction:
    return FunctionVerifier(facts, ordinal).run(verified_module)
