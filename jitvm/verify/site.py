"""Where a rule failed, spelled out: module, function, pc, block and the instruction as dumped.

Every VerifyError message starts with the place, so a user can find the byte that broke
the rule with `jitvm dump` or iree-dump-module:

    module 'm' function 'matmul' (#1) at pc 42 in ^bb2: `%i3 = vm.add.i32 %i1, %i99`: i32 register %i99 is out of range (14 registers)
"""

from __future__ import annotations

from ..errors import Error, VerifyError
from ..frontend.module import BytecodeModule


def module_prefix(module: BytecodeModule) -> str:
    return f"module '{module.name}'"


def module_error(module: BytecodeModule, message: str) -> VerifyError:
    return VerifyError(f"{module_prefix(module)}: {message}")


class FunctionSite:
    """Builds the messages of one function's errors; rendering happens only on failure."""

    def __init__(self, module: BytecodeModule, ordinal: int):
        self.module = module
        self.ordinal = ordinal
        self.name = module.display_name(ordinal)
        self.instructions: list | None = None

    @property
    def prefix(self) -> str:
        return f"{module_prefix(self.module)} function '{self.name}' (#{self.ordinal})"

    def error(self, message: str) -> VerifyError:
        return VerifyError(f"{self.prefix}: {message}")

    def error_at(self, ins, block: int | None, message: str) -> VerifyError:
        where = f"at pc {ins.pc}" + (f" in ^bb{block}" if block is not None else "")
        text = f"{self.prefix} {where}: `{self.render(ins)}`: {message}"
        location = self.source_location(ins.pc)
        if location:
            text += f"; source {location}"
        return VerifyError(text)

    def render(self, ins) -> str:
        from ..frontend.disasm import Names, Renderer, block_starts  # only when a message needs it

        try:
            starts = block_starts(self.instructions or ())
            return Renderer(Names.of(self.module), starts).instruction(ins)
        except (IndexError, KeyError, ValueError, TypeError, OverflowError):
            return ins.op.mnemonic + " ..."  # the message must not fail on a mangled operand

    def source_location(self, pc: int) -> str | None:
        try:
            return self.module.source_location(self.ordinal, pc)
        except (Error, IndexError, KeyError, TypeError, RecursionError):
            return None
