"""The VM assembler: text in `jitvm dump` syntax -> a .vmfb (see `parser` for the grammar)."""

from __future__ import annotations

from .parser import assemble_builder, parse_into
from .writer import ModuleBuilder


def assemble(text: str, source: str = "<vmasm>") -> bytes:
    """Assembles a whole module (`vm.module @name ...` first) into .vmfb bytes."""
    return assemble_builder(text, source).to_bytes()


def add_functions(builder, text: str, source: str = "<vmasm>") -> None:
    """Assembles vm.type/vm.import/vm.global/vm.rodata/vm.export/vm.func text into `builder`
    (a writer.ModuleBuilder)."""
    parse_into(builder, text, source, allow_module=False)


__all__ = ["ModuleBuilder", "add_functions", "assemble", "assemble_builder", "parse_into"]
