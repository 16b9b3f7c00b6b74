"""What every ELF64 reader and loader in jitvm shares: the record layouts, read within bounds,
and the C library's memory calls (anonymous mappings, protections, instruction cache).

Two loaders use it: IREE's llvm-cpu shared objects (runtime.modules.hal.elf) and the code
store's relocatable objects (runtime.native.objload).
"""

from __future__ import annotations

import ctypes
import struct
from collections import namedtuple

from ...errors import FormatError
from . import clib


class Record:
    """One fixed-size ELF record: its struct format and field names."""

    def __init__(self, name: str, fmt: str, fields: str):
        self.name = name
        self.struct = struct.Struct("<" + fmt)
        self.size = self.struct.size
        self.tuple = namedtuple(name.replace(" ", "_"), fields)

    def read(self, data: bytes, offset: int, what: str):
        if offset < 0 or offset + self.size > len(data):
            raise FormatError(f"{what} at offset {offset:#x} needs {self.size} bytes, but the file has "
                              f"{len(data)}")
        return self.tuple._make(self.struct.unpack_from(data, offset))


# little-endian ELF64, described once
EHDR = Record("ELF header", "16sHHIQQQIHHHHHH",
              "ident type machine version entry phoff shoff flags ehsize phentsize phnum shentsize shnum "
              "shstrndx")
PHDR = Record("program header", "IIQQQQQQ", "type flags offset vaddr paddr filesz memsz align")
SHDR = Record("section header", "IIQQQQIIQQ", "name type flags addr offset size link info addralign entsize")
DYN = Record("dynamic entry", "qQ", "tag val")
SYM = Record("symbol", "IBBHQQ", "name info other shndx value size")
RELA = Record("relocation", "QQq", "offset info addend")

ELFCLASS64, ELFDATA2LSB, EV_CURRENT = 2, 1, 1
ET_REL, ET_DYN = 1, 3
EM_X86_64, EM_AARCH64 = 62, 183
SHN_UNDEF, SHN_ABS, SHN_COMMON = 0, 0xFFF1, 0xFFF2
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
MACHINE_NAMES = {3: "x86 (32-bit)", 40: "arm (32-bit)", 243: "riscv", 62: "x86_64", 183: "aarch64"}


def string_at(table: bytes, offset: int) -> str | None:
    """The NUL-terminated string at `offset` of a string table, or None when it is not inside."""
    if offset >= len(table):
        return None
    end = table.find(b"\0", offset)
    return None if end < 0 else table[offset:end].decode("utf-8", "replace")


# --- the C library's memory calls ----------------------------------------------------------

_libc = None


def libc():
    """libc with mmap, munmap and mprotect typed (errno kept for messages)."""
    global _libc
    if _libc is None:
        lib = clib.process()
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                             ctypes.c_long]
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _libc = lib
    return _libc


MAP_FAILED = ctypes.c_void_p(-1).value


def clear_cache():
    """`__clear_cache(begin, end)` of the C runtime (aarch64 needs it after writing code), or None."""
    import ctypes.util

    for name in (None, ctypes.util.find_library("gcc_s"), "libgcc_s.so.1"):
        try:
            fn = getattr(clib.process() if name is None else ctypes.CDLL(name), "__clear_cache")
        except (OSError, AttributeError):
            continue
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        fn.restype = None
        return fn
    return None
