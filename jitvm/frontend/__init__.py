"""Reading .vmfb files: archive envelope, FlatBuffer tables, the ISA table, decoding and
dumping. The way back (assembly, encoding, ModuleBuilder) is the authoring side, frontend.asm."""

from .bitpack import pack_bits, unpack_bits
from .cconv import CallingConvention, Span, parse_cconv
from .decode import Instruction, Reg, decode_function
from .module import BytecodeModule, load_module

__all__ = [
    "BytecodeModule",
    "CallingConvention",
    "Instruction",
    "Reg",
    "Span",
    "decode_function",
    "load_module",
    "pack_bits",
    "parse_cconv",
    "unpack_bits",
]
