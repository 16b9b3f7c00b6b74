"""A bounded ELF64 reader and loader for IREE's embedded executables (`embedded-elf-*`).

iree-compile links each llvm-cpu executable into a self-contained position-independent
shared object: no DT_NEEDED libraries, no imported symbols, one exported function,
`iree_hal_executable_library_query`. Loading one is the work of a tiny dynamic linker:

1. `read_elf` parses and validates everything against the file's bounds first: the header,
   the program headers, the PT_DYNAMIC entries, the dynamic symbol and string tables and
   every relocation (its target inside a loaded segment, its type one we apply). Nothing is
   mapped until the whole file checks out; a malformed or truncated file is a
   `jitvm.FormatError` naming what and where, a well-formed file we cannot run (another
   machine, a relocation type or an import we do not provide) a `jitvm.UnsupportedError`.
2. `ElfFile.load` maps the PT_LOAD segments into one anonymous read-write reservation,
   copies their file bytes (the rest stays zero: .bss), applies the relocations, sets each
   segment's page protections (never writable and executable at once; GNU_RELRO becomes
   read-only), flushes the instruction cache where the architecture needs it and runs the
   initializers (DT_INIT, DT_INIT_ARRAY) if the file has any.

Relocations: what iree-compile 3.13 emits for x86_64 and aarch64 is R_*_RELATIVE only (the
pointers in the library's tables); the symbolic 64-bit kinds (R_X86_64_64, GLOB_DAT,
JUMP_SLOT, R_AARCH64_ABS64, ...) are applied too, since they can only name the module's own
symbols. Everything else is refused by name.

The machine code is trusted exactly as IREE trusts it: validation keeps our loader from
reading or writing outside the file and the image, it does not make the code safe to run.
"""

from __future__ import annotations

import ctypes
import mmap
import struct
import sys
from dataclasses import dataclass

from ....errors import FormatError, UnsupportedError
from ...native.elf64 import (DYN, EHDR, ELFCLASS64, ELFDATA2LSB, ET_DYN, EV_CURRENT, MACHINE_NAMES, PHDR, RELA,  # noqa: F401
                             SHDR, SHN_ABS, SHN_UNDEF, STB_GLOBAL, STB_WEAK, SYM, Record, clear_cache, libc)

QUERY_SYMBOL = "iree_hal_executable_library_query"
MAX_IMAGE_BYTES = 1 << 30  # an executable image larger than this is refused (a corrupt span)

PT_LOAD, PT_DYNAMIC, PT_GNU_RELRO = 1, 2, 0x6474E552
PF_X, PF_W, PF_R = 1, 2, 4
SHT_DYNSYM = 11

DT_NAMES = {
    0: "DT_NULL", 1: "DT_NEEDED", 2: "DT_PLTRELSZ", 4: "DT_HASH", 5: "DT_STRTAB", 6: "DT_SYMTAB", 7: "DT_RELA",
    8: "DT_RELASZ", 9: "DT_RELAENT", 10: "DT_STRSZ", 11: "DT_SYMENT", 12: "DT_INIT", 17: "DT_REL",
    18: "DT_RELSZ", 19: "DT_RELENT", 20: "DT_PLTREL", 23: "DT_JMPREL", 25: "DT_INIT_ARRAY",
    27: "DT_INIT_ARRAYSZ", 0x6FFFFEF5: "DT_GNU_HASH",
}
_DT = {v: k for k, v in DT_NAMES.items()}


@dataclass(frozen=True)
class Machine:
    name: str  # LLVM / Python architecture name
    iree_arch: str  # IREE_ARCH: the suffix of the executable formats
    relative: int  # the R_*_RELATIVE type number
    # type -> (name, value): "B+A" base plus addend, "S+A" symbol plus addend, "S" symbol
    applied: dict
    refused: dict  # type -> name, for messages only
    icache_flush: bool


MACHINES = {
    62: Machine("x86_64", "x86_64", 8, {
        1: ("R_X86_64_64", "S+A"), 6: ("R_X86_64_GLOB_DAT", "S"), 7: ("R_X86_64_JUMP_SLOT", "S"),
        8: ("R_X86_64_RELATIVE", "B+A"),
    }, {
        2: "R_X86_64_PC32", 3: "R_X86_64_GOT32", 4: "R_X86_64_PLT32", 5: "R_X86_64_COPY",
        9: "R_X86_64_GOTPCREL", 10: "R_X86_64_32", 11: "R_X86_64_32S", 16: "R_X86_64_DTPMOD64",
        17: "R_X86_64_DTPOFF64", 18: "R_X86_64_TPOFF64", 24: "R_X86_64_PC64", 37: "R_X86_64_IRELATIVE",
    }, False),
    183: Machine("aarch64", "arm_64", 1027, {
        257: ("R_AARCH64_ABS64", "S+A"), 1025: ("R_AARCH64_GLOB_DAT", "S+A"),
        1026: ("R_AARCH64_JUMP_SLOT", "S+A"), 1027: ("R_AARCH64_RELATIVE", "B+A"),
    }, {
        258: "R_AARCH64_ABS32", 260: "R_AARCH64_PREL64", 261: "R_AARCH64_PREL32", 1024: "R_AARCH64_COPY",
        1028: "R_AARCH64_TLS_DTPMOD64", 1029: "R_AARCH64_TLS_DTPREL64", 1030: "R_AARCH64_TLS_TPREL64",
        1031: "R_AARCH64_TLSDESC", 1032: "R_AARCH64_IRELATIVE",
    }, True),
}


def host_machine() -> Machine | None:
    from ...native import target

    arch = target.host().arch
    for m in MACHINES.values():
        if m.name == arch or (arch == "arm64" and m.name == "aarch64"):
            return m
    return None


@dataclass(frozen=True)
class Segment:
    index: int  # program header index
    vaddr: int
    memsz: int
    offset: int
    filesz: int
    flags: int
    align: int

    @property
    def end(self) -> int:
        return self.vaddr + self.memsz

    def describe(self) -> str:
        perms = "".join(c if self.flags & f else "-" for c, f in (("R", PF_R), ("W", PF_W), ("X", PF_X)))
        return f"program header {self.index} (PT_LOAD {perms} [{self.vaddr:#x}, {self.end:#x}))"


@dataclass(frozen=True)
class Symbol:
    index: int
    name: str
    bind: int
    type: int
    shndx: int
    value: int
    size: int


@dataclass(frozen=True)
class Relocation:
    offset: int
    type: int
    symbol: int
    addend: int
    table: str  # "DT_RELA" or "DT_JMPREL"


# --- reading -----------------------------------------------------------------------------


class ElfFile:
    """A validated ELF64 shared object: the parts a loader needs, read from `data`."""

    def __init__(self, data: bytes, origin: str):
        self.data = data
        self.origin = origin
        self.machine: Machine | None = None
        self.header = None
        self.segments: list[Segment] = []
        self.relro: list[tuple[int, int]] = []
        self.dynamic: list[tuple[int, int]] = []
        self.needed: list[str] = []
        self.symbols: list[Symbol] = []
        self.relocations: list[Relocation] = []
        self.init: int | None = None
        self.init_array: tuple[int, int] | None = None  # (vaddr, count)
        self.min_vaddr = self.max_vaddr = 0

    def error(self, text: str) -> FormatError:
        return FormatError(f"{self.origin}: {text}")

    def unsupported(self, text: str) -> UnsupportedError:
        return UnsupportedError(f"{self.origin}: {text}")

    # -- address translation, bounded --

    def segment_of(self, vaddr: int, size: int) -> Segment | None:
        """The PT_LOAD segment whose memory holds [vaddr, vaddr+size), or None."""
        for s in self.segments:
            if s.vaddr <= vaddr and vaddr + size <= s.end:
                return s
        return None

    def file_bytes(self, vaddr: int, size: int, what: str) -> bytes:
        """The file bytes that a loaded [vaddr, vaddr+size) comes from (never .bss)."""
        for s in self.segments:
            if s.vaddr <= vaddr and vaddr + size <= s.vaddr + s.filesz:
                start = s.offset + (vaddr - s.vaddr)
                return self.data[start:start + size]
        raise self.error(f"{what} [{vaddr:#x}, {vaddr + size:#x}) lies outside the file-backed part of every "
                         f"loaded segment")

    # -- the symbol the runtime needs --

    def lookup(self, name: str) -> Symbol | None:
        """A defined global (or weak) dynamic symbol called `name`; the last one wins, as in IREE."""
        for sym in reversed(self.symbols):
            if sym.name == name and sym.bind in (STB_GLOBAL, STB_WEAK) and sym.shndx != SHN_UNDEF:
                return sym
        return None

    def query_symbol(self) -> Symbol:
        sym = self.lookup(QUERY_SYMBOL)
        if sym is None:
            raise self.error(f"does not export `{QUERY_SYMBOL}` (not an IREE executable library); dynamic "
                             f"symbols: {', '.join(s.name for s in self.symbols if s.name) or 'none'}")
        seg = self.segment_of(sym.value, 1) if sym.shndx != SHN_ABS else None
        if seg is None or not seg.flags & PF_X:
            raise self.error(f"`{QUERY_SYMBOL}` at {sym.value:#x} is not inside an executable segment")
        return sym


def read_elf(data: bytes, origin: str = "<ELF executable>", *, need_dynamic: bool = True) -> ElfFile:
    """Parses and validates `data` (see the module docstring). `need_dynamic=False` reads the
    headers and segments only (a system library handed to the platform's loader)."""
    data = bytes(data)
    elf = ElfFile(data, origin)
    _read_header(elf)
    _read_segments(elf)
    if need_dynamic:
        _read_dynamic(elf)
        _read_symbols(elf)
        _read_relocations(elf)
        elf.query_symbol()
    return elf


def _read_header(elf: ElfFile) -> None:
    data = elf.data
    if len(data) < 4 or data[:4] != b"\x7fELF":
        raise elf.error(f"not an ELF file (starts with {bytes(data[:4])!r}, expected b'\\x7fELF')")
    if len(data) < EHDR.size:
        raise elf.error(f"truncated: {len(data)} bytes, the ELF header alone needs {EHDR.size}")
    h = EHDR.read(data, 0, "ELF header")
    ident = h.ident
    if ident[4] != ELFCLASS64:
        raise elf.unsupported(f"ELF class {ident[4]} (EI_CLASS at offset 4): only 64-bit ELF (2) is supported")
    if ident[5] != ELFDATA2LSB:
        raise elf.unsupported(f"ELF data encoding {ident[5]} (EI_DATA at offset 5): only little-endian (1) "
                              f"is supported")
    if ident[6] != EV_CURRENT or h.version != EV_CURRENT:
        raise elf.error(f"ELF version {ident[6]}/{h.version} (offsets 6 and 20), expected 1")
    if h.type != ET_DYN:
        raise elf.error(f"ELF type {h.type} (e_type at offset 16): an executable library is a shared "
                        f"object (ET_DYN, 3)")
    machine = MACHINES.get(h.machine)
    if machine is None:
        raise elf.unsupported(f"ELF machine {h.machine} ({MACHINE_NAMES.get(h.machine, 'unknown')}; "
                              f"e_machine at offset 18): only x86_64 (62) and aarch64 (183) are supported")
    elf.machine = machine
    if h.ehsize != EHDR.size:
        raise elf.error(f"e_ehsize is {h.ehsize}, expected {EHDR.size}")
    if h.phentsize != PHDR.size:
        raise elf.error(f"e_phentsize is {h.phentsize}, expected {PHDR.size}")
    if h.phnum == 0 or h.phoff == 0:
        raise elf.error("has no program headers (e_phoff/e_phnum are 0)")
    end = h.phoff + h.phnum * PHDR.size
    if end > len(data):
        raise elf.error(f"program header table [{h.phoff:#x}, {end:#x}) ({h.phnum} entries at e_phoff) "
                        f"exceeds the {len(data)}-byte file")
    if h.shoff and h.shnum:
        if h.shentsize != SHDR.size:
            raise elf.error(f"e_shentsize is {h.shentsize}, expected {SHDR.size}")
        send = h.shoff + h.shnum * SHDR.size
        if send > len(data):
            raise elf.error(f"section header table [{h.shoff:#x}, {send:#x}) ({h.shnum} entries at e_shoff) "
                            f"exceeds the {len(data)}-byte file")
    elf.header = h


def _read_segments(elf: ElfFile) -> None:
    h, data = elf.header, elf.data
    for i in range(h.phnum):
        p = PHDR.read(data, h.phoff + i * PHDR.size, f"program header {i}")
        if p.type == PT_LOAD:
            where = f"program header {i} (PT_LOAD)"
            if p.offset + p.filesz > len(data):
                raise elf.error(f"{where} file range [{p.offset:#x}, {p.offset + p.filesz:#x}) exceeds the "
                                f"{len(data)}-byte file")
            if p.filesz > p.memsz:
                raise elf.error(f"{where} has p_filesz {p.filesz:#x} larger than p_memsz {p.memsz:#x}")
            if p.align > 1 and p.align & (p.align - 1):
                raise elf.error(f"{where} has p_align {p.align:#x}, not a power of two")
            if p.vaddr + p.memsz > MAX_IMAGE_BYTES:
                raise elf.error(f"{where} ends at {p.vaddr + p.memsz:#x}, beyond the {MAX_IMAGE_BYTES:#x}-byte "
                                f"limit of an executable image")
            if p.flags & PF_W and p.flags & PF_X:
                raise elf.unsupported(f"{where} is both writable and executable; refused, as IREE refuses it")
            seg = Segment(i, p.vaddr, p.memsz, p.offset, p.filesz, p.flags, p.align)
            for other in elf.segments:
                if seg.vaddr < other.end and other.vaddr < seg.end:
                    raise elf.error(f"{seg.describe()} overlaps {other.describe()}")
            elf.segments.append(seg)
        elif p.type == PT_DYNAMIC:
            elf.dynamic.append((p.vaddr, p.filesz))
        elif p.type == PT_GNU_RELRO:
            elf.relro.append((p.vaddr, p.memsz))
    if not elf.segments:
        raise elf.error("has no PT_LOAD segment")
    elf.min_vaddr = min(s.vaddr for s in elf.segments)
    elf.max_vaddr = max(s.end for s in elf.segments)
    for vaddr, size in elf.relro:
        if size and elf.segment_of(vaddr, size) is None:
            raise elf.error(f"PT_GNU_RELRO [{vaddr:#x}, {vaddr + size:#x}) lies outside every loaded segment")


def _read_dynamic(elf: ElfFile) -> None:
    if not elf.dynamic:
        raise elf.error("has no PT_DYNAMIC segment (.dynamic)")
    vaddr, size = elf.dynamic[0]
    if size < DYN.size:
        raise elf.error(f"PT_DYNAMIC is {size} bytes, less than one {DYN.size}-byte entry")
    raw = elf.file_bytes(vaddr, size - size % DYN.size, "PT_DYNAMIC")
    tags: dict[int, int] = {}
    for k in range(len(raw) // DYN.size):
        d = DYN.read(raw, k * DYN.size, f"dynamic entry {k}")
        if d.tag == 0:
            break
        if d.tag == _DT["DT_NEEDED"]:
            elf.needed.append(d.val)
        else:
            tags.setdefault(d.tag, d.val)
    elf.tags = tags
    if elf.needed:
        names = ", ".join(_string(elf, tags, off, "DT_NEEDED name") for off in elf.needed) \
            if _DT["DT_STRTAB"] in tags and _DT["DT_STRSZ"] in tags else f"{len(elf.needed)} libraries"
        raise elf.unsupported(f"needs shared libraries ({names}); an embedded executable must be "
                              f"self-contained")
    for tag in ("DT_REL", "DT_RELSZ"):
        if _DT[tag] in tags:
            raise elf.unsupported(f"uses {tag} relocations; only DT_RELA is supported")
    if _DT["DT_PLTREL"] in tags and tags[_DT["DT_PLTREL"]] != _DT["DT_RELA"]:
        raise elf.unsupported(f"DT_PLTREL is {tags[_DT['DT_PLTREL']]}; only DT_RELA (7) is supported")
    for tag, want in (("DT_SYMENT", SYM.size), ("DT_RELAENT", RELA.size)):
        if _DT[tag] in tags and tags[_DT[tag]] != want:
            raise elf.error(f"{tag} is {tags[_DT[tag]]}, expected {want}")
    for tag in ("DT_STRTAB", "DT_STRSZ", "DT_SYMTAB"):
        if _DT[tag] not in tags:
            raise elf.error(f"the dynamic section has no {tag}")
    strtab, strsz = tags[_DT["DT_STRTAB"]], tags[_DT["DT_STRSZ"]]
    elf.strtab = elf.file_bytes(strtab, strsz, "the dynamic string table (DT_STRTAB, DT_STRSZ)")
    if _DT["DT_INIT"] in tags and tags[_DT["DT_INIT"]]:
        elf.init = tags[_DT["DT_INIT"]]
        seg = elf.segment_of(elf.init, 1)
        if seg is None or not seg.flags & PF_X:
            raise elf.error(f"DT_INIT {elf.init:#x} is not inside an executable segment")
    if _DT["DT_INIT_ARRAY"] in tags:
        at, size = tags[_DT["DT_INIT_ARRAY"]], tags.get(_DT["DT_INIT_ARRAYSZ"], 0)
        if size % 8:
            raise elf.error(f"DT_INIT_ARRAYSZ {size} is not a multiple of 8")
        if size and elf.segment_of(at, size) is None:
            raise elf.error(f"DT_INIT_ARRAY [{at:#x}, {at + size:#x}) lies outside every loaded segment")
        if size:
            elf.init_array = (at, size // 8)


def _string(elf: ElfFile, tags, offset: int, what: str) -> str:
    table = elf.strtab if hasattr(elf, "strtab") else \
        elf.file_bytes(tags[_DT["DT_STRTAB"]], tags[_DT["DT_STRSZ"]], "the dynamic string table")
    if offset >= len(table):
        raise elf.error(f"{what} at string offset {offset:#x} is outside the {len(table)}-byte string table")
    end = table.find(b"\0", offset)
    if end < 0:
        raise elf.error(f"{what} at string offset {offset:#x} is not NUL-terminated inside the string table")
    return table[offset:end].decode("utf-8", "replace")


def _symbol_count(elf: ElfFile) -> int:
    tags = elf.tags
    if _DT["DT_HASH"] in tags:
        raw = elf.file_bytes(tags[_DT["DT_HASH"]], 8, "the symbol hash table (DT_HASH)")
        return struct.unpack_from("<I", raw, 4)[0]  # nchain: one chain entry per symbol
    h = elf.header
    for i in range(h.shnum if h.shoff else 0):
        s = SHDR.read(elf.data, h.shoff + i * SHDR.size, f"section header {i}")
        if s.type == SHT_DYNSYM:
            return s.size // SYM.size
    raise elf.unsupported("has no DT_HASH table and no .dynsym section header: cannot count its dynamic symbols")


def _read_symbols(elf: ElfFile) -> None:
    count = _symbol_count(elf)
    symtab = elf.tags[_DT["DT_SYMTAB"]]
    if count * SYM.size > len(elf.data):
        raise elf.error(f"claims {count} dynamic symbols, more than the {len(elf.data)}-byte file can hold")
    raw = elf.file_bytes(symtab, count * SYM.size, f"the dynamic symbol table ({count} symbols at DT_SYMTAB)")
    for i in range(count):
        s = SYM.read(raw, i * SYM.size, f"dynamic symbol {i}")
        name = _string(elf, elf.tags, s.name, f"the name of dynamic symbol {i}") if s.name else ""
        sym = Symbol(i, name, s.info >> 4, s.info & 0xF, s.shndx, s.value, s.size)
        if i and sym.shndx == SHN_UNDEF and (name or sym.bind != 0):
            raise elf.unsupported(f"imports the symbol `{name or f'#{i}'}`; an embedded executable must be "
                                  f"self-contained (IREE's platform-agnostic loader refuses imports too)")
        if i and sym.shndx not in (SHN_UNDEF, SHN_ABS) and sym.type == 2 and \
                elf.segment_of(sym.value, max(1, sym.size)) is None:  # STT_FUNC
            raise elf.error(f"function symbol `{name}` [{sym.value:#x}, {sym.value + sym.size:#x}) lies "
                            f"outside every loaded segment")
        elf.symbols.append(sym)


def _read_relocations(elf: ElfFile) -> None:
    tags, machine = elf.tags, elf.machine
    for table, size_tag in (("DT_RELA", "DT_RELASZ"), ("DT_JMPREL", "DT_PLTRELSZ")):
        if _DT[table] not in tags:
            continue
        at, size = tags[_DT[table]], tags.get(_DT[size_tag], 0)
        if size % RELA.size:
            raise elf.error(f"{size_tag} {size} is not a multiple of the {RELA.size}-byte relocation size")
        raw = elf.file_bytes(at, size, f"the relocation table ({table}, {size_tag})")
        for k in range(size // RELA.size):
            r = RELA.read(raw, k * RELA.size, f"{table} relocation {k}")
            rtype, sym = r.info & 0xFFFFFFFF, r.info >> 32
            where = f"{table} relocation {k} (offset {r.offset:#x})"
            if rtype == 0:
                continue  # R_*_NONE
            if rtype not in machine.applied:
                name = machine.refused.get(rtype, "unknown")
                raise elf.unsupported(f"{where} has type {rtype} ({name}), which this loader does not apply "
                                      f"(supported on {machine.name}: "
                                      f"{', '.join(n for n, _ in machine.applied.values())})")
            if sym >= len(elf.symbols):
                raise elf.error(f"{where} names symbol {sym}, but the dynamic symbol table has "
                                f"{len(elf.symbols)}")
            if elf.segment_of(r.offset, 8) is None:
                raise elf.error(f"{where} writes 8 bytes at [{r.offset:#x}, {r.offset + 8:#x}), outside every "
                                f"loaded segment")
            elf.relocations.append(Relocation(r.offset, rtype, sym, r.addend, table))


# --- loading -------------------------------------------------------------------------------

class LoadedElf:
    """An ELF image mapped into this process; `close()` unmaps it (nothing may run it after)."""

    def __init__(self, elf: ElfFile, base: int, size: int, bias: int):
        self.elf = elf
        self.base = base
        self.size = size
        self.bias = bias  # runtime address = bias + vaddr

    def address(self, symbol: str) -> int:
        sym = self.elf.lookup(symbol)
        if sym is None:
            raise self.elf.error(f"does not export `{symbol}`")
        return sym.value if sym.shndx == SHN_ABS else self.bias + sym.value

    def contains(self, address: int, size: int) -> bool:
        return self.base <= address and address + size <= self.base + self.size

    def readable(self, address: int) -> int:
        """Bytes of the image from `address` to its end (0 outside it)."""
        return self.base + self.size - address if self.base <= address < self.base + self.size else 0

    def close(self) -> None:
        if self.base:
            libc().munmap(self.base, self.size)
            self.base = 0


def load(elf: ElfFile, run_initializers: bool = True) -> LoadedElf:
    """Maps a validated embedded ELF (see the module docstring). The ELF must be for this host.
    `run_initializers=False` maps, relocates and protects it without running any of its code
    (the ELF mutant campaign: code an initializer entry points at is trusted, not checked)."""
    host = host_machine()
    if host is None or elf.machine is not host:
        raise elf.unsupported(f"is an {elf.machine.name} executable; this host is "
                              f"{host.name if host else sys.platform + ' on an unsupported architecture'}")
    image = map_image(elf)
    try:
        _protect(elf, image, mmap.PAGESIZE)
        if run_initializers:
            _run_initializers(elf, image)
    except BaseException:
        image.close()
        raise
    return image


def map_image(elf: ElfFile) -> LoadedElf:
    """The segments copied into fresh read-write memory and relocated, nothing run (any
    machine: `load` adds the protections and initializers of an image for this host)."""
    page = mmap.PAGESIZE
    lo = elf.min_vaddr & ~(page - 1)
    hi = (elf.max_vaddr + page - 1) & ~(page - 1)
    size = hi - lo
    c = libc()
    addr = c.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        err = ctypes.get_errno()
        raise UnsupportedError(f"{elf.origin}: cannot map {size} bytes for the executable image (errno {err})")
    image = LoadedElf(elf, addr, size, addr - lo)
    try:
        for s in elf.segments:
            if s.filesz:
                ctypes.memmove(image.bias + s.vaddr, elf.data[s.offset:s.offset + s.filesz], s.filesz)
        _relocate(elf, image)
    except BaseException:
        image.close()
        raise
    return image


def _relocate(elf: ElfFile, image: LoadedElf) -> None:
    bias = image.bias
    mask = (1 << 64) - 1
    for r in elf.relocations:
        _, formula = elf.machine.applied[r.type]
        if formula == "B+A":
            value = bias + r.addend
        else:
            sym = elf.symbols[r.symbol]
            s = 0 if r.symbol == 0 else (sym.value if sym.shndx == SHN_ABS else bias + sym.value)
            value = s + r.addend if formula == "S+A" else s
        ctypes.c_uint64.from_address(bias + r.offset).value = value & mask


def _protect(elf: ElfFile, image: LoadedElf, page: int) -> None:
    """Each page gets the union of its segments' permissions; GNU_RELRO pages become read-only."""
    pages: dict[int, int] = {}
    for s in elf.segments:
        start = (image.bias + s.vaddr) & ~(page - 1)
        for p in range(start, image.bias + s.end, page):
            pages[p] = pages.get(p, 0) | s.flags
    for p, flags in pages.items():
        if flags & PF_W and flags & PF_X:
            raise elf.unsupported(f"writable and executable segments share the page at image offset "
                                  f"{p - image.base:#x}; refused")
    for vaddr, size in elf.relro:
        start = (image.bias + vaddr) & ~(page - 1)
        end = (image.bias + vaddr + size) & ~(page - 1)
        for p in range(start, end, page):
            if p in pages:
                pages[p] &= ~PF_W
    c = libc()
    for p in sorted(pages):
        flags = pages[p]
        prot = (mmap.PROT_READ if flags & (PF_R | PF_W | PF_X) else 0) | \
               (mmap.PROT_WRITE if flags & PF_W else 0) | (mmap.PROT_EXEC if flags & PF_X else 0)
        if c.mprotect(p, page, prot or mmap.PROT_READ) != 0:
            raise UnsupportedError(f"{elf.origin}: mprotect of the page at image offset {p - image.base:#x} "
                                   f"failed (errno {ctypes.get_errno()}); the system may forbid executable "
                                   f"memory")
    if elf.machine.icache_flush:
        flush = clear_cache()
        if flush is None:
            raise UnsupportedError(f"{elf.origin}: no __clear_cache in this process to make the loaded code "
                                   f"visible to instruction fetch")
        for s in elf.segments:
            if s.flags & PF_X:
                flush(image.bias + s.vaddr, image.bias + s.end)


_VOID_FN = ctypes.CFUNCTYPE(None)


def _run_initializers(elf: ElfFile, image: LoadedElf) -> None:
    if elf.init is not None:
        _VOID_FN(image.bias + elf.init)()
    if elf.init_array is not None:
        at, count = elf.init_array
        for k in range(count):
            fn = ctypes.c_uint64.from_address(image.bias + at + 8 * k).value  # relocated: absolute
            if fn in (0, (1 << 64) - 1):
                continue
            seg = elf.segment_of(fn - image.bias, 1)
            if seg is None or not seg.flags & PF_X:
                raise elf.error(f"DT_INIT_ARRAY entry {k} points at image offset {fn - image.base:#x}, outside "
                                f"every executable segment")
            _VOID_FN(fn)()
