"""Byte mutants of a real module: which regions are worth mutating, and 1-3 changed bytes.

Mutants of valid modules reach the verifier's rules (bytecode, function descriptors) far
more often than random bytes would, and the changes are listed so a finding is replayable.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from jitvm.frontend import schema
from jitvm.frontend.flatbuf import FlatBuffer
from jitvm.frontend.module import BytecodeModule, load_module

# Where mutations land: most in the bytecode and the function descriptors, where the
# verifier's rules live; the rest anywhere in the file (tables, envelope, rodata).
REGION_WEIGHTS = (("bytecode", 50), ("descriptors", 30), ("file", 20))


@dataclass(frozen=True)
class Seed:
    name: str
    data: bytes
    regions: dict = field(hash=False, compare=False)  # region name -> (start, length)
    machine_code: tuple = ()  # (start, length) spans no mutation touches (native_code_spans)

    def mutable(self, at: int) -> bool:
        return not any(start <= at < start + length for start, length in self.machine_code)


def seed_from_file(path, name: str | None = None) -> Seed:
    data = Path(path).read_bytes()
    m = load_module(data, str(path))
    regions = {"file": (0, len(data)),
               "bytecode": (m.bytecode_file_offset, len(m.bytecode)),
               "descriptors": (descriptor_table_offset(m), 20 * len(m.functions))}
    return Seed(name or str(path), data, {k: v for k, v in regions.items() if v[1] > 0}, native_code_spans(m))


def native_code_spans(m: BytecodeModule) -> tuple[tuple[int, int], ...]:
    """File spans of the executable segments of the native libraries a module embeds
    (llvm-cpu executables: ELF rodata). IREE runs that machine code as given, and so does
    jitvm's loader, so a changed byte there asks the loader and the verifier nothing: it is
    a crash of the mutated code itself (five in an 8,000-mutant campaign)."""
    from jitvm.errors import Error
    from jitvm.runtime.modules.hal.elf import PF_X, read_elf

    spans = []
    for segment in m.rodata:
        try:
            if bytes(segment.data[:4]) != b"\x7fELF":
                continue
            elf = read_elf(segment.data, need_dynamic=False)
        except Error:
            continue
        spans.extend((segment.offset + s.offset, s.filesz) for s in elf.segments if s.flags & PF_X)
    return tuple(spans)


_BYTE_CHANGES = (
    lambda old, rng: rng.randrange(256),
    lambda old, rng: old ^ (1 << rng.randrange(8)),
    lambda old, rng: (old + rng.choice((1, -1))) & 0xFF,
    lambda old, rng: rng.choice((0x00, 0xFF, 0x7F, 0x80)),
)


def mutate(seed: Seed, rng: random.Random) -> tuple[bytes, tuple[tuple[int, int, int], ...]]:
    """1-3 changed bytes; returns the mutant and its (offset, old, new) changes."""
    data = bytearray(seed.data)
    names = [n for n, _ in REGION_WEIGHTS if n in seed.regions]
    weights = [w for n, w in REGION_WEIGHTS if n in seed.regions]
    changes = []
    for _ in range(rng.randint(1, 3)):
        start, length = seed.regions[rng.choices(names, weights)[0]]
        at = start + rng.randrange(length)
        while not seed.mutable(at):
            at = start + rng.randrange(length)
        old = data[at]
        new = old
        while new == old:
            new = rng.choice(_BYTE_CHANGES)(old, rng)
        data[at] = new
        changes.append((at, old, new))
    return bytes(data), tuple(changes)


def descriptor_table_offset(module: BytecodeModule) -> int:
    """File offset of function_descriptors[0] (20-byte structs: offset, length, requirements,
    reserved, block_count, i32 count, ref count)."""
    fb = FlatBuffer(module.archive.flatbuffer)
    slot = schema.BYTECODE_MODULE.slot("function_descriptors")
    start, _ = fb.root().vector_span(slot, schema.FUNCTION_DESCRIPTOR.size, "function_descriptors")
    return module.archive.flatbuffer_offset + start
