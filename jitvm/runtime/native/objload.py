"""Relocatable object code (what the code store keeps) mapped into this process without LLVM.

A warm load only needs stored object code made runnable: sections copied into memory,
relocations applied, symbols resolved. MCJIT does that too, but reaching it costs importing
llvmlite's bindings and loading libLLVM (35-55 ms of a ~110 ms load). This loader does the
part the JIT's objects use, and declines everything else, which then goes through MCJIT as
before (runtime.native.engine): it never loads an object it does not fully understand.

What it understands (x86_64 ELF relocatable objects as LLVM's `jitdefault` code model emits
them, the large model: every address is 64 bits wide, so sections may lie anywhere):
- sections: allocated PROGBITS and NOBITS (text, read-only data, zeroed data); `.eh_frame`
  is not loaded (MCJIT registers it for unwinders; nothing unwinds through jitvm's code: no
  C++ exceptions, traps are return values); non-allocated sections (symbols, strings,
  relocation tables, notes, address-significance tables) are read or skipped;
- relocations: R_X86_64_64 (S + A) and R_X86_64_PC64 (S + A - P), the only two in the
  store's objects (readelf -r over a store of ~1500 entries: PC64 only in `.eh_frame`, so
  code and data need R_X86_64_64 alone);
- symbols: defined in this module's objects first (a global or weak definition; two strong
  definitions of a name decline, as MCJIT refuses them), then jitvm's table and the process
  (runtime.native.symtab: MCJIT's search order).
It declines (returns None): another machine or host, ET_* other than ET_REL, SHT_REL, groups
(COMDAT), TLS, common and indirect (ifunc) symbols, initializer arrays, unknown section or
relocation kinds, an extended section index, a symbol it cannot resolve, a section aligned
beyond a page. A file that is not well-formed ELF (truncated, offsets or indices out of
range) is refused with a `jitvm.FormatError`: it is never run, and never handed to MCJIT.

Memory: one anonymous mapping per module, written while read-write, then text made
read+execute and constants read-only (never writable and executable at once); it is
unmapped when the `Image` is collected (the JitModule holding it keeps it alive).
`JITVM_OBJECT_LOADER=0` sends every object through MCJIT (for comparing the two).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform
import struct
import sys
import weakref
from collections import Counter

from ...errors import FormatError
from . import symtab
from .elf64 import (EHDR, ELFCLASS64, ELFDATA2LSB, EM_X86_64, ET_REL, EV_CURRENT, MAP_FAILED, RELA, SHDR,
                    SHN_ABS, SHN_COMMON, SHN_UNDEF, STB_GLOBAL, STB_LOCAL, STB_WEAK, SYM, libc, string_at)

ENV = "JITVM_OBJECT_LOADER"
STATS: Counter = Counter()  # mapped, declined (modules), and declined because of <reason>

SHT_PROGBITS, SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_REL, SHT_GROUP, SHT_SYMTAB_SHNDX = 1, 2, 4, 8, 9, 17, 18
SHT_X86_64_UNWIND = 0x70000001
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_GROUP, SHF_TLS = 0x1, 0x2, 0x4, 0x200, 0x400
STT_SECTION, STT_FILE, STT_COMMON, STT_TLS, STT_GNU_IFUNC = 3, 4, 5, 6, 10
SHN_LORESERVE = 0xFF00

#: machine -> {relocation type: (name, formula)}: what is applied; any other type declines
RELOCATIONS = {
    EM_X86_64: {0: ("R_X86_64_NONE", None), 1: ("R_X86_64_64", "S+A"), 24: ("R_X86_64_PC64", "S+A-P")},
}
#: platform.machine() spellings of each ELF machine this loader maps code for
HOSTS = {EM_X86_64: ("x86_64", "amd64")}
#: non-allocated section types that change what is loaded (groups: COMDAT; REL: relocations
#: without addends; extended symbol section indices): these decline, any other is passed over
#: (symbols, strings, RELA tables are read; notes, address-significance tables, debug info)
SHAPING = {SHT_GROUP: "SHT_GROUP", SHT_REL: "SHT_REL", SHT_SYMTAB_SHNDX: "SHT_SYMTAB_SHNDX"}
#: allocated section types loaded, and those passed over (unwind tables)
LOADED, SKIPPED = {SHT_PROGBITS, SHT_NOBITS}, {SHT_X86_64_UNWIND}
KINDS = ("text", "rodata", "data")  # in image order: each starts on a page of its own
PROTECTION = {"text": mmap.PROT_READ | mmap.PROT_EXEC, "rodata": mmap.PROT_READ,
              "data": mmap.PROT_READ | mmap.PROT_WRITE}
_MASK = (1 << 64) - 1
MAX_IMAGE_BYTES = 1 << 30  # a module's image larger than this is refused (a corrupt size)


class Decline(Exception):
    """A well-formed object this loader does not handle (MCJIT will)."""


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


class _Section:
    """One section header, and where the section goes in the image (plain classes here: a
    dataclass or NamedTuple costs every start milliseconds to create)."""

    __slots__ = ("index", "name", "type", "flags", "offset", "size", "align", "kind", "at")

    def __init__(self, index: int, name: str, type: int, flags: int, offset: int, size: int, align: int):
        self.index, self.name, self.type, self.flags = index, name, type, flags
        self.offset, self.size, self.align = offset, size, align
        self.kind: str | None = None  # KINDS, None when not loaded
        self.at = 0  # offset in the image


class _Object:
    """One object file, read: its sections, symbols (name, bind, type, shndx, value) and, per
    loaded section, its relocations (offset, formula, symbol index, addend)."""

    __slots__ = ("origin", "data", "sections", "symbols", "relocations")

    def __init__(self, origin: str, data: bytes, sections: list[_Section], symbols: list[tuple],
                 relocations: list[tuple[_Section, list[tuple[int, str, int, int]]]]):
        self.origin, self.data, self.sections = origin, data, sections
        self.symbols, self.relocations = symbols, relocations


class Image:
    """Code mapped by this loader: its memory and its global symbols (name -> address)."""

    def __init__(self, base: int, size: int, symbols: dict[str, int]):
        self.base = base
        self.size = size
        self.symbols = symbols
        self._unmap = weakref.finalize(self, libc().munmap, base, size)
        self._unmap.atexit = False  # at exit, native threads and late finalizers may still run it


def load(objects: list[bytes]) -> Image | None:
    """`objects` linked together into fresh memory, or None when this loader declines them
    (see the module docstring); raises FormatError for a malformed object."""
    if not enabled() or not objects:
        return None
    try:
        image = _load([_parse(bytes(data), f"object file {i} of {len(objects)}") for i, data in enumerate(objects)])
    except Decline as e:
        STATS["declined"] += 1
        STATS[f"declined: {e}"] += 1
        return None
    STATS["mapped"] += 1
    return image


# --- reading ---------------------------------------------------------------------------------

def _parse(data: bytes, origin: str) -> _Object:
    def bad(text: str) -> FormatError:
        return FormatError(f"{origin}: {text}")

    if len(data) < EHDR.size or data[:4] != b"\x7fELF":
        raise bad(f"not an ELF object ({len(data)} bytes starting {data[:4]!r})")
    h = EHDR.read(data, 0, f"{origin}: ELF header")
    if h.ident[4] != ELFCLASS64 or h.ident[5] != ELFDATA2LSB:
        raise Decline("not little-endian ELF64")
    if h.ident[6] != EV_CURRENT or h.version != EV_CURRENT:
        raise bad(f"ELF version {h.ident[6]}/{h.version}, expected 1")
    if h.type != ET_REL:
        raise Decline(f"ELF type {h.type}, not a relocatable object")
    if h.machine not in RELOCATIONS or platform.machine().lower() not in HOSTS[h.machine] or \
            not sys.platform.startswith("linux"):
        raise Decline(f"ELF machine {h.machine} on {platform.machine()} {sys.platform}")
    if h.shentsize != SHDR.size or not h.shnum:
        raise bad(f"section header entries of {h.shentsize} bytes (expected {SHDR.size}), {h.shnum} of them")
    if h.shnum >= SHN_LORESERVE or h.shstrndx >= h.shnum:
        raise Decline("extended section numbering")
    if h.shoff + h.shnum * SHDR.size > len(data):
        raise bad(f"the section header table [{h.shoff:#x}, {h.shoff + h.shnum * SHDR.size:#x}) exceeds the "
                  f"{len(data)}-byte file")
    headers = [SHDR.read(data, h.shoff + i * SHDR.size, f"{origin}: section header {i}") for i in range(h.shnum)]
    for i, s in enumerate(headers):
        if s.type != SHT_NOBITS and s.offset + s.size > len(data):
            raise bad(f"section {i} [{s.offset:#x}, {s.offset + s.size:#x}) exceeds the {len(data)}-byte file")
    names = _bytes(data, headers[h.shstrndx])
    sections = []
    for i, s in enumerate(headers):
        name = string_at(names, s.name)
        if name is None:
            raise bad(f"section {i}'s name (offset {s.name:#x}) is outside the section name table")
        sections.append(_Section(i, name, s.type, s.flags, s.offset, s.size, max(1, s.addralign)))
    symtabs = [s for s in sections if s.type == SHT_SYMTAB]
    if len(symtabs) > 1:
        raise Decline("more than one symbol table")
    for s in sections:
        _classify(s)
    symbols = _symbols(data, headers, symtabs[0], sections, bad) if symtabs else []
    relocations = []
    for i, s in enumerate(headers):
        if s.type != SHT_RELA:
            continue
        if s.info >= len(sections) or s.link >= len(sections) or (symtabs and s.link != symtabs[0].index):
            raise bad(f"relocation section {i} names section {s.info} and symbol table {s.link}")
        target = sections[s.info]
        if target.kind is None:
            continue  # relocations of a section not loaded (unwind tables)
        if s.entsize != RELA.size or s.size % RELA.size:
            raise bad(f"relocation section {i} has {s.size} bytes of {s.entsize}-byte entries")
        relocs = []
        kinds = RELOCATIONS[h.machine]
        for offset, info, addend in struct.iter_unpack("<QQq", _bytes(data, s)):
            rtype, sym = info & 0xFFFFFFFF, info >> 32
            if rtype not in kinds:
                raise Decline(f"relocation type {rtype}")
            if kinds[rtype][1] is None:
                continue
            if sym == 0 or sym >= len(symbols):
                raise bad(f"a relocation of section {target.name} names symbol {sym} of {len(symbols)}")
            if offset + 8 > target.size:
                raise bad(f"a relocation writes 8 bytes at {offset:#x}, outside section {target.name} "
                          f"({target.size} bytes)")
            relocs.append((offset, kinds[rtype][1], sym, addend))
        relocations.append((target, relocs))
    return _Object(origin, data, sections, symbols, relocations)


def _bytes(data: bytes, header) -> bytes:
    return data[header.offset:header.offset + header.size]


def _classify(s: _Section) -> None:
    """Which part of the image section `s` goes to (its `kind`), or a decline."""
    if s.type in SHAPING:
        raise Decline(f"{SHAPING[s.type]} section {s.name}")
    if not s.flags & SHF_ALLOC:
        return
    if s.flags & (SHF_TLS | SHF_GROUP):
        raise Decline(f"TLS or grouped section {s.name}")
    if s.type in SKIPPED:
        return
    if s.type not in LOADED:
        raise Decline(f"allocated section type {s.type:#x} ({s.name})")
    if s.align > mmap.PAGESIZE or s.align & (s.align - 1):
        raise Decline(f"section {s.name} aligned to {s.align}")
    s.kind = "text" if s.flags & SHF_EXECINSTR else "data" if s.flags & SHF_WRITE else "rodata"
    if s.kind == "text" and s.flags & SHF_WRITE:
        raise Decline(f"writable code section {s.name}")


def _symbols(data, headers, table: _Section, sections, bad) -> list:
    header = headers[table.index]
    if header.entsize != SYM.size or header.size % SYM.size or header.link >= len(headers):
        raise bad(f"symbol table of {header.size} bytes in {header.entsize}-byte entries, strings in section "
                  f"{header.link}")
    strings = _bytes(data, headers[header.link])
    out = []
    for k, (name_at, info, _other, shndx, value, size) in enumerate(struct.iter_unpack("<IBBHQQ", _bytes(data, header))):
        bind, stype = info >> 4, info & 0xF
        name = string_at(strings, name_at) if name_at else ""
        if name is None:
            raise bad(f"symbol {k}'s name (offset {name_at:#x}) is outside the string table")
        if k == 0 or stype == STT_FILE:
            out.append((name, STB_LOCAL, stype, SHN_UNDEF, 0))
            continue
        if stype in (STT_TLS, STT_GNU_IFUNC, STT_COMMON) or shndx == SHN_COMMON:
            raise Decline(f"symbol {name} of type {stype}")
        if bind not in (STB_LOCAL, STB_GLOBAL, STB_WEAK):
            raise Decline(f"symbol {name} of binding {bind}")
        if shndx not in (SHN_UNDEF, SHN_ABS):
            if shndx >= len(sections):
                if shndx >= SHN_LORESERVE:
                    raise Decline(f"symbol {name} in special section {shndx:#x}")
                raise bad(f"symbol {name or k} is in section {shndx} of {len(sections)}")
            if value + size > sections[shndx].size:
                raise bad(f"symbol {name or k} [{value:#x}, {value + size:#x}) lies outside section "
                          f"{sections[shndx].name} ({sections[shndx].size} bytes)")
        elif shndx == SHN_UNDEF and bind == STB_LOCAL:
            raise bad(f"symbol {name or k} is local and undefined")
        out.append((name, bind, stype, shndx, value))
    return out


# --- loading ---------------------------------------------------------------------------------

def _load(objects: list[_Object]) -> Image:
    page = mmap.PAGESIZE
    size = 0
    for kind in KINDS:
        size = (size + page - 1) & ~(page - 1)
        for o in objects:
            for s in o.sections:
                if s.kind == kind:
                    size = (size + s.align - 1) & ~(s.align - 1)
                    s.at = size
                    size += s.size
    size = max(page, (size + page - 1) & ~(page - 1))
    if size > MAX_IMAGE_BYTES:
        raise FormatError(f"{objects[0].origin}: the sections need {size} bytes, more than the "
                          f"{MAX_IMAGE_BYTES}-byte limit of a module's image")
    image = bytearray(size)
    for o in objects:
        for s in o.sections:
            if s.kind is not None and s.type == SHT_PROGBITS:
                image[s.at:s.at + s.size] = o.data[s.offset:s.offset + s.size]
    c = libc()
    base = c.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if base in (None, MAP_FAILED):
        raise Decline(f"no memory for {size} bytes (errno {ctypes.get_errno()})")
    try:
        globals_ = _link(objects, base, image)
        ctypes.memmove(base, (ctypes.c_char * size).from_buffer(image), size)
        _protect(objects, base, c)
    except BaseException:
        c.munmap(base, size)
        raise
    return Image(base, size, globals_)


def _address(o: _Object, sym, base: int) -> int | None:
    """Where a defined symbol of `o` lives, or None for an undefined one (a decline for one in a
    section not loaded)."""
    name, _bind, _stype, shndx, value = sym
    if shndx == SHN_ABS:
        return value
    if shndx == SHN_UNDEF:
        return None
    section = o.sections[shndx]
    if section.kind is None:
        raise Decline(f"symbol {name or section.name} is in section {section.name}, not loaded")
    return base + section.at + value


def _link(objects: list[_Object], base: int, image: bytearray) -> dict[str, int]:
    """The module's global symbols, and every relocation applied to `image` (mapped at `base`)."""
    strong: dict[str, int] = {}
    weak: dict[str, int] = {}
    for o in objects:
        for sym in o.symbols:
            name, bind, _stype, shndx, _value = sym
            if bind == STB_LOCAL or shndx == SHN_UNDEF or not name:
                continue
            addr = _address(o, sym, base)
            if bind == STB_GLOBAL:
                if name in strong:
                    raise Decline(f"symbol {name} defined twice")
                strong[name] = addr
            else:
                weak.setdefault(name, addr)
    exported = {**weak, **strong}
    pack = struct.Struct("<Q").pack_into
    for o in objects:
        resolved: dict[int, int] = {}
        for target, relocs in o.relocations:
            start = base + target.at
            for offset, formula, k, addend in relocs:
                s = resolved.get(k)
                if s is None:
                    s = resolved[k] = _resolve(o, o.symbols[k], base, exported)
                value = s + addend if formula == "S+A" else s + addend - (start + offset)
                pack(image, target.at + offset, value & _MASK)
    return exported


def _resolve(o: _Object, sym, base: int, exported: dict[str, int]) -> int:
    name, bind, stype, shndx, _value = sym
    if stype == STT_SECTION:
        section = o.sections[shndx] if shndx < len(o.sections) else None
        if section is None or section.kind is None:
            raise Decline(f"a relocation against section {shndx}, not loaded")
        return base + section.at
    if bind != STB_LOCAL and name in exported:
        return exported[name]
    addr = _address(o, sym, base)
    if addr is None:
        addr = symtab.lookup(name)
    if not addr:
        raise Decline(f"unresolved symbol {name}")
    return addr


def _protect(objects: list[_Object], base: int, c) -> None:
    """Each kind's pages get its protection (text read+execute, constants read-only)."""
    page = mmap.PAGESIZE
    spans: dict[str, list[int]] = {}
    for o in objects:
        for s in o.sections:
            if s.kind is not None and s.size:
                lo, hi = spans.get(s.kind, (s.at, s.at + s.size))
                spans[s.kind] = [min(lo, s.at), max(hi, s.at + s.size)]
    for kind, (lo, hi) in spans.items():
        if kind == "data":
            continue  # mapped read-write already
        lo &= ~(page - 1)
        hi = (hi + page - 1) & ~(page - 1)
        if c.mprotect(base + lo, hi - lo, PROTECTION[kind]) != 0:
            raise Decline(f"mprotect {kind} failed (errno {ctypes.get_errno()}): executable memory refused")
