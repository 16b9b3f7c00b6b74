"""The IREE tools that compile the corpus: where they are, and a version that keys the cache."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .model import CorpusError


def find_tool(name: str) -> str | None:
    """Finds an IREE tool next to ``sys.executable`` first, then on ``PATH``, then among the
    binaries iree-base-runtime ships in its package (where ``pip install --target`` leaves
    them off every PATH, as in bench/aarch64.sh's arm64 root)."""
    here = Path(sys.executable).parent / name
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which(name)
    if found is not None:
        return found
    try:
        from importlib.util import find_spec

        spec = find_spec("iree._runtime_libs")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        packaged = Path(location) / name
        if packaged.is_file() and os.access(packaged, os.X_OK):
            return str(packaged)
    return None


def require_tool(name: str) -> str:
    tool = find_tool(name)
    if tool is None:
        raise CorpusError(
            f"{name} not found next to {sys.executable} nor on PATH; install the test extra "
            f"(pip install -e '.[test]', which brings iree-base-compiler/iree-base-runtime)"
        )
    return tool


def _package_version(dist: str) -> str:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "?"


def _tool_identity(tool: str) -> str:
    st = os.stat(tool)
    return f"{os.path.realpath(tool)}|{st.st_size}|{st.st_mtime_ns}"


def tool_version(tool: str, cache_dir: Path) -> str:
    """A version string for ``tool``, memoised on disk by the tool's path/size/mtime.

    ``iree-compile --version`` runs at most once per tool installation; ``iree-as-module`` has
    no version flag and is identified by its package version.
    """
    base = os.path.basename(tool)
    if base.startswith("iree-as-module"):
        return f"iree-as-module {_package_version('iree-base-runtime')}"
    ident = _tool_identity(tool) + "|" + _package_version("iree-base-compiler")
    memo = cache_dir / "tool-versions" / (hashlib.sha256(ident.encode()).hexdigest()[:24] + ".txt")
    if memo.is_file():
        return memo.read_text()
    out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=False)
    ver = (out.stdout + out.stderr).strip() or ident
    memo.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(memo, ver)
    return ver


def record_version(name: str, version: str, cache_dir: Path) -> None:
    """Notes in the cache which version of tool `name` keys its entries, so a machine without
    the tool (an emulated arm64 root fed by the host's cache) can still find them."""
    path = cache_dir / "built-with" / (name + ".txt")
    if path.is_file() and path.read_text() == version:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, version)


def recorded_version(name: str, cache_dir: Path) -> str | None:
    """The version :func:`record_version` noted for `name` in this cache, or None."""
    path = cache_dir / "built-with" / (name + ".txt")
    return path.read_text() if path.is_file() else None


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
