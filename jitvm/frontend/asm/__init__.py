"""The VM assembler: text in `jitvm dump` syntax -> a .vmfb (see `parser` for the grammar)."""

from __future__ import annotations

from .parser import assemble_builder, parse_into


def assemble(text: str, source: str = "<vmasm>") -> bytes:
    """Assembles a whole module (`vm.module @name ...` first) into .vmfb bytes."""
    return assemble_builder(text, source).to_bytes()


__all__ = ["assemble", "assemble_builder", "parse_into"]
