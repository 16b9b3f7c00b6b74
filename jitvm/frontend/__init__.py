"""Reading .vmfb files: archive envelope, FlatBuffer tables, the ISA table, decoding, dumping."""

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
    "parse_cconv",
]
