"""Modules carried inside a module's rodata: the VMVX executables of a compiled program.

iree-compile stores each VMVX executable (format `vmvx-bytecode-fb`) as a rodata segment
holding a complete .vmfb. The runtime will load and run them, so `jitvm verify` checks them
too; a segment is taken for a module when its header parses as a module envelope with the
`IREE` identifier, whatever the format string next to it says.
"""

from __future__ import annotations

import re
from typing import Iterator

from ..errors import FormatError
from ..frontend.archive import parse_archive
from ..frontend.module import BytecodeModule


def looks_like_module(data) -> bool:
    """True when `data` opens as a ZIP-wrapped or bare size-prefixed FlatBuffer of identifier IREE."""
    try:
        parse_archive(memoryview(data).cast("B"), "rodata probe")
    except FormatError:
        return False
    return True


def embedded_modules(module: BytecodeModule) -> Iterator[tuple[int, memoryview]]:
    """(rodata ordinal, bytes) of every segment that holds a module of its own."""
    for segment in module.rodata:
        try:
            data = segment.data
        except FormatError:
            continue  # a segment outside the file is the module verifier's finding, not ours
        if looks_like_module(data):
            yield segment.ordinal, data


FORMAT_QUERY = b"hal.executable.format"
# IREE's executable format names (what a program asks the device with hal.device.query.i64)
_FORMAT_NAME = re.compile(rb"(vmvx-bytecode-fb|(embedded|system)-(elf|dll|dylib)-[a-z0-9_]+|static|"
                          rb"[a-z]+-[a-z0-9]+-fb)")
MAX_FORMAT_LENGTH = 64


def executable_formats(module: BytecodeModule) -> list[str]:
    """The executable formats a compiled program can use, one of which the device must load:
    the format names among its rodata strings, when it queries `hal.executable.format`."""
    strings = []
    for segment in module.rodata:
        if segment.length > MAX_FORMAT_LENGTH:
            continue
        try:
            strings.append(bytes(segment.data))
        except FormatError:
            continue
    if FORMAT_QUERY not in strings:
        return []
    return list(dict.fromkeys(s.decode() for s in strings if _FORMAT_NAME.fullmatch(s)))
