"""Reading and writing .vmfb files: archive envelope, FlatBuffer tables, the ISA table,
decoding, dumping; and the way back: assembly, encoding, ModuleBuilder."""

from .asm import assemble
from .bitpack import pack_bits, unpack_bits
from .cconv import CallingConvention, Span, parse_cconv
from .decode import Instruction, Reg, decode_function
from .module import BytecodeModule, load_module
from .asm.writer import ModuleBuilder

__all__ = [
    "BytecodeModule",
    "ModuleBuilder",
    "CallingConvention",
    "Instruction",
    "Reg",
    "Span",
    "assemble",
    "decode_function",
    "load_module",
    "pack_bits",
    "parse_cconv",
    "unpack_bits",
]
