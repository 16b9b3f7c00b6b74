"""What a compiled module's entry in the code store (runtime.native.cache) is keyed on.

The module's FlatBuffer bytes, jitvm's version and the sources that decide what gets
compiled, the LLVM version, the target CPU and features, and the compile options: every
change to any of them makes a new key.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

import llvmlite

from ...runtime.native import target as targets
from ...runtime.native.cache import FORMAT
from ...version import __version__


@lru_cache(maxsize=1)
def sources_digest() -> str:
    """A digest of the code that decides what gets compiled: the reader, the verifier, the
    lowering, and the runtime's layouts and native helpers the code links against, with
    their IR templates (the native modules do not shape compiled code)."""
    root = str(Path(__file__).resolve().parents[2])
    h = hashlib.sha256()
    for sub in ("lower", "runtime/native", "runtime/vm", "runtime/exec", "frontend", "verify"):
        for relative in sorted(_source_files(root, sub)):  # strings, not Paths: read at every start
            h.update(relative.encode())
            with open(os.path.join(root, relative), "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def _source_files(root: str, sub: str):
    """The .py and .ll files under `sub` of `root`, as paths relative to `root` with "/"."""
    for folder, dirs, files in os.walk(os.path.join(root, sub)):
        base = os.path.relpath(folder, root).replace(os.sep, "/")
        for name in files:
            if name.endswith((".py", ".ll")):
                yield f"{base}/{name}"


def key(flatbuffer: bytes | memoryview, target, options: dict) -> str:
    h = hashlib.sha256()
    for part in (FORMAT, __version__, sources_digest(), llvmlite.__version__,
                 targets.llvm_version(), target.triple, target.cpu, target.features,
                 json.dumps(options, sort_keys=True)):
        h.update(str(part).encode())
        h.update(b"\0")
    h.update(flatbuffer)
    return h.hexdigest()
