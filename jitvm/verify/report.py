"""Verdicts for a file and the modules embedded in it, as `jitvm verify` prints them.

A file yields one verdict for itself (`FILE`) and one per module found in its rodata
(`FILE[rodata 4]`, nested ones as `FILE[rodata 4][rodata 2]`); each verdict is None for
success or the first error's message.
"""

from __future__ import annotations

from typing import Iterator

from ..errors import Error
from ..frontend.module import BytecodeModule, load_module
from .embedded import embedded_modules
from .verifier import verify_module

MAX_NESTING = 4  # executables inside executables: deeper nesting is not verified


def verdicts(source, label: str, features: int | None = None, depth: int = 0) -> Iterator[tuple[str, str | None]]:
    """(label, None or error message) for the module at `source` and every embedded module."""
    try:
        module: BytecodeModule = load_module(source, label)
    except Error as e:
        yield label, str(e)
        return
    try:
        verify_module(module, features)
    except Error as e:
        yield label, str(e)
    else:
        yield label, None
    if depth >= MAX_NESTING:
        return
    for ordinal, data in embedded_modules(module):
        yield from verdicts(data, f"{label}[rodata {ordinal}]", features, depth + 1)
