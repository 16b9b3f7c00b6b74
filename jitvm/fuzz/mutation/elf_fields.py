"""Mutants of embedded ELF executables that change the structural fields a loader reads.

Byte flips rarely hit the few dozen fields that decide where an ELF loader reads and writes;
these mutants change exactly those: the ELF header, the program headers, the section
headers, the PT_DYNAMIC entries, the relocations (DT_RELA, DT_JMPREL) and the dynamic
symbols of a well-formed file, as `structural_fields` locates them. A mutant rewrites one
field (sometimes two) with a value chosen to break an assumption: 0, 1, all ones, the sign
bit, the old value off by one, eight or a page, doubled or halved, the file size and around
it, a random value of the field's width, another field's value. Machine code and the bytes
of the tables' contents are left alone: mutated code is as trusted under jitvm as under
IREE, and those bytes decide nothing about the loader's bounds.

The "elf" check (checks.py) loads each mutant in a worker process (pool.py), so a crash or a
hang is counted; `python bench/elf_mutants.py` runs a campaign.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

PAGE = 4096
GROUPS = ("ELF header", "program header", "section header", "dynamic entry", "relocation", "dynamic symbol",
          "DT_HASH")
_WIDTHS = {"B": 1, "H": 2, "I": 4, "Q": 8, "q": 8}


@dataclass(frozen=True)
class Field:
    offset: int  # in the file
    width: int  # bytes, little-endian
    what: str  # e.g. "program header 2 p_filesz"

    @property
    def group(self) -> str:
        """The table it belongs to: mutants pick a table first, so large tables (section
        headers, relocations) do not crowd out small ones (the ELF header, PT_DYNAMIC)."""
        for name in GROUPS:
            if name in self.what:
                return name
        return self.what


def _record_fields(record, base: int, owner: str, prefix: str) -> list[Field]:
    """Every field of one record (runtime.modules.hal.elf's Record) at file offset `base`,
    named `<owner> <prefix><field>`."""
    out, at = [], base
    fmt = record.struct.format.lstrip("<")
    for code, name in zip(_expand(fmt), record.tuple._fields):
        if code.endswith("s"):  # e_ident: its class, data, version and OS ABI bytes
            for k, label in ((4, "EI_CLASS"), (5, "EI_DATA"), (6, "EI_VERSION"), (7, "EI_OSABI")):
                out.append(Field(at + k, 1, f"{owner} {label}"))
            at += int(code[:-1])
            continue
        width = _WIDTHS[code]
        out.append(Field(at, width, f"{owner} {prefix}{name}"))
        at += width
    return out


def _expand(fmt: str) -> list[str]:
    """"16sHHI" -> ["16s", "H", "H", "I"]."""
    out, digits = [], ""
    for c in fmt:
        if c.isdigit():
            digits += c
        elif c == "s":
            out.append(digits + c)
            digits = ""
        else:
            out.extend([c] * int(digits or 1))
            digits = ""
    return out


def structural_fields(data: bytes) -> list[Field]:
    """The structural fields of a well-formed embedded ELF (one jitvm's loader accepts)."""
    from jitvm.runtime.modules.hal import elf as elfmod

    parsed = elfmod.read_elf(data, "<seed>")
    h = parsed.header
    fields = _record_fields(elfmod.EHDR, 0, "ELF header", "e_")
    for i in range(h.phnum):
        fields += _record_fields(elfmod.PHDR, h.phoff + i * elfmod.PHDR.size, f"program header {i}", "p_")
    for i in range(h.shnum if h.shoff else 0):
        fields += _record_fields(elfmod.SHDR, h.shoff + i * elfmod.SHDR.size, f"section header {i}", "sh_")

    def file_offset(vaddr: int) -> int | None:
        for s in parsed.segments:
            if s.vaddr <= vaddr < s.vaddr + s.filesz:
                return s.offset + vaddr - s.vaddr
        return None

    dyn_vaddr, dyn_size = parsed.dynamic[0]
    dyn_at = file_offset(dyn_vaddr)
    for k in range(dyn_size // elfmod.DYN.size):
        at = dyn_at + k * elfmod.DYN.size
        fields += _record_fields(elfmod.DYN, at, f"dynamic entry {k}", "d_")
        if struct.unpack_from("<q", data, at)[0] == 0:
            break
    tags = parsed.tags
    for table, size_tag in ((7, 8), (23, 2)):  # DT_RELA/DT_RELASZ, DT_JMPREL/DT_PLTRELSZ
        if table in tags:
            at = file_offset(tags[table])
            for k in range(tags.get(size_tag, 0) // elfmod.RELA.size):
                fields += _record_fields(elfmod.RELA, at + k * elfmod.RELA.size,
                                         f"{'DT_RELA' if table == 7 else 'DT_JMPREL'} relocation {k}", "r_")
    at = file_offset(tags[6])  # DT_SYMTAB
    for i in range(len(parsed.symbols)):
        fields += _record_fields(elfmod.SYM, at + i * elfmod.SYM.size, f"dynamic symbol {i}", "st_")
    if 4 in tags:  # DT_HASH: nbucket, nchain (the symbol count)
        at = file_offset(tags[4])
        fields += [Field(at, 4, "DT_HASH nbucket"), Field(at + 4, 4, "DT_HASH nchain")]
    return [f for f in fields if f.offset + f.width <= len(data)]


def _values(old: int, width: int, size: int, others: list[int], rng: random.Random) -> list[int]:
    top = (1 << (8 * width)) - 1
    sign = 1 << (8 * width - 1)
    candidates = [0, 1, 2, top, sign, sign - 1, old + 1, old - 1, old + 8, old - 8, old + PAGE, old - PAGE,
                  old * 2, old // 2, old ^ (1 << rng.randrange(8 * width)), size, size - 1, size + 1,
                  size - rng.randrange(1, 64), rng.randrange(64), rng.randrange(1 << min(16, 8 * width)),
                  rng.getrandbits(8 * width), rng.choice(others) if others else 0]
    return [v & top for v in candidates]


def mutate_fields(data: bytes, fields: list[Field], rng: random.Random) -> tuple[bytes, str]:
    """`data` with one structural field rewritten (two, one time in five), its table chosen
    first (GROUPS): (mutant, what changed)."""
    out = bytearray(data)
    changes = []
    groups: dict[str, list[Field]] = {}
    for f in fields:
        groups.setdefault(f.group, []).append(f)
    names = sorted(groups)
    for _ in range(2 if rng.random() < 0.2 else 1):
        f = rng.choice(groups[rng.choice(names)])
        old = int.from_bytes(out[f.offset:f.offset + f.width], "little")
        peers = [int.from_bytes(data[g.offset:g.offset + g.width], "little") for g in rng.sample(fields, 4)
                 if g.width == f.width]
        choices = [v for v in _values(old, f.width, len(data), peers, rng) if v != old] or [old ^ 1]
        new = rng.choice(choices)
        out[f.offset:f.offset + f.width] = new.to_bytes(f.width, "little")
        changes.append(f"{f.what} {old:#x} -> {new:#x}")
    return bytes(out), "; ".join(changes)


LLVM_CPU_FLAGS = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
                  "--iree-llvmcpu-target-cpu=host")


def seed_elfs(sources, out_dir) -> list[bytes]:
    """The embedded ELFs iree-compile makes of MLIR `sources` for this host (their own
    `// FLAGS:` added), dumped into `out_dir`: real executables to mutate."""
    import subprocess
    from pathlib import Path

    from jitvm.fuzz.corpus.directives import parse_directives
    from jitvm.fuzz.corpus.tools import require_tool

    out_dir = Path(out_dir)
    elfs = []
    for source in map(Path, sources):
        dump = out_dir / source.stem
        if not any(dump.glob("*.so")):
            dump.mkdir(parents=True, exist_ok=True)
            flags = parse_directives(source.read_text(), "mlir").flags
            subprocess.run([require_tool("iree-compile"), *LLVM_CPU_FLAGS, *flags,
                            f"--iree-hal-dump-executable-binaries-to={dump}", str(source),
                            "-o", str(dump / "module.vmfb")], check=True, capture_output=True)
        elfs += [p.read_bytes() for p in sorted(dump.glob("*.so"))]
    return elfs


def mutants(seeds: list[bytes], count: int, seed: int):
    """`count` mutants, round robin over `seeds`: (key, data for the "elf" check, what changed);
    the data is the seed's index (u32) and the mutant (checks.py reads it so)."""
    rng = random.Random(seed)
    fields = [structural_fields(s) for s in seeds]
    for i in range(count):
        k = i % len(seeds)
        mutant, what = mutate_fields(seeds[k], fields[k], rng)
        yield i, struct.pack("<I", k) + mutant, what
