"""Compiling a corpus into a content-keyed cache (see the package docstring).

The corpus directory is the caller's (tests/ binds its own): nothing here knows where one
lives. The cache does not depend on it either: entries are keyed by name and content.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ... import frontend
from .directives import parse_directives
from .model import CorpusError, CorpusModule, Directives
from .tools import find_tool, recorded_version, record_version, require_tool, tool_version

DEFAULT_CACHE_DIR = Path(tempfile.gettempdir()) / "jitvm-corpus-cache"

#: Flags every MLIR program is compiled with (before its own ``// FLAGS:``), by target.
VMVX_FLAGS: tuple[str, ...] = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=vmvx",
)
#: The architecture's generic CPU: a cached module runs on any machine of it (every qemu -cpu
#: model too). The triple is the machine's the tests run on: this one's, or
#: $JITVM_CORPUS_LLVM_TRIPLE when another host's corpus is built here (bench/aarch64.sh
#: builds its emulated arm64 root's); it is in the flags, so in the cache key.
LLVM_CPU_FLAGS: tuple[str, ...] = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)
TRIPLE_ENV = "JITVM_CORPUS_LLVM_TRIPLE"
_HOST_TRIPLES = {"x86_64": "x86_64-unknown-linux-gnu", "amd64": "x86_64-unknown-linux-gnu",
                 "aarch64": "aarch64-unknown-linux-gnu", "arm64": "aarch64-unknown-linux-gnu"}


def llvm_cpu_triple() -> str | None:
    """The target triple of the corpus's llvm-cpu modules (None: iree-compile's default)."""
    return os.environ.get(TRIPLE_ENV) or _HOST_TRIPLES.get(platform.machine().lower())


def target_flags(target: str) -> tuple[str, ...]:
    """The iree-compile flags every MLIR program compiled for `target` gets."""
    if target != "llvm-cpu":
        return TARGET_FLAGS[target]
    triple = llvm_cpu_triple()
    return LLVM_CPU_FLAGS + ((f"--iree-llvmcpu-target-triple={triple}",) if triple else ())


TARGET_FLAGS = {"vmvx": VMVX_FLAGS, "llvm-cpu": LLVM_CPU_FLAGS}

#: Bump when the cache layout or the way modules are compiled changes.
_CACHE_FORMAT = "corpus-cache-v1"


def cache_dir_default() -> Path:
    """``$JITVM_CORPUS_CACHE``, else ``jitvm-corpus-cache`` in the system's temporary directory
    (tests write nothing outside temporary directories)."""
    env = os.environ.get("JITVM_CORPUS_CACHE")
    return Path(env) if env else DEFAULT_CACHE_DIR


class Corpus:
    """The programs under `root` (``mlir/*.mlir``, ``vmasm/*.vmasm`` and ``vmasm/*.jvasm``)."""

    def __init__(self, root):
        self.root = Path(root)
        self.mlir_dir = self.root / "mlir"
        self.vmasm_dir = self.root / "vmasm"
        #: Number of subprocesses started by the last :meth:`build` (tests use it to prove that
        #: a warm build is free).
        self.last_build_subprocess_count = 0

    def source_files(self) -> list[tuple[str, str, Path]]:
        """(name, kind, path) of every corpus program, sorted by name."""
        out = []
        for kind, d, ext in (("mlir", self.mlir_dir, ".mlir"), ("vmasm", self.vmasm_dir, ".vmasm")):
            paths = list(d.glob("*" + ext)) + (list(d.glob("*.jvasm")) if kind == "vmasm" else [])
            for p in sorted(paths):
                out.append((f"{kind}/{p.stem}", kind, p))
        return out

    def build(
        self,
        cache_dir: Path | None = None,
        names: Iterable[str] | None = None,
        jobs: int = 2,
        target: str | None = None,
    ) -> list[CorpusModule]:
        """Compiles (or fetches from the cache) the corpus programs and returns them.

        ``names`` selects programs by name ("mlir/matmul") or bare stem ("matmul"); unknown names
        raise :class:`CorpusError`. ``target`` ("vmvx", "llvm-cpu"): only the MLIR programs
        that compile for it (their ``// TARGETS:``), all compiled for it; by default each
        program is compiled for its first target and VM assembly is included.
        """
        if target is not None and target not in TARGET_FLAGS:
            raise CorpusError(f"unknown corpus target {target!r} (have: {', '.join(TARGET_FLAGS)})")
        cache_dir = Path(cache_dir) if cache_dir is not None else cache_dir_default()
        cache_dir.mkdir(parents=True, exist_ok=True)

        files = self.source_files()
        if names is not None:
            wanted = list(names)
            by_name = {n: (n, k, p) for n, k, p in files}
            by_stem: dict[str, list] = {}
            for n, k, p in files:
                by_stem.setdefault(p.stem, []).append((n, k, p))
            sel = []
            for w in wanted:
                if w in by_name:
                    sel.append(by_name[w])
                elif w in by_stem:
                    sel.extend(by_stem[w])
                else:
                    raise CorpusError(f"no corpus program named {w!r}")
            files = list(dict.fromkeys(sel))

        spawned = 0
        versions: dict[str, str] = {}
        jobs_list: list[_Job] = []
        for name, kind, path in files:
            text = path.read_text()
            try:
                d = parse_directives(text, kind)
            except CorpusError as e:
                raise CorpusError(f"{path}: {e}") from None
            if target is not None and (kind != "mlir" or target not in d.targets):
                if names is not None:
                    raise CorpusError(f"{path}: does not compile for {target} (its TARGETS: "
                                      f"{' '.join(d.targets) if kind == 'mlir' else 'none, VM assembly'})")
                continue
            tool_name = _tool_name(kind, path)
            if tool_name == "jitvm-asm" and tool_name not in versions:
                versions[tool_name] = _jitvm_assembler_version()
            if tool_name not in versions:
                versions[tool_name], n = _version_of(tool_name, cache_dir)
                spawned += n
            chosen = (target or d.targets[0]) if kind == "mlir" else ""
            flags = (target_flags(chosen) + d.flags_for(chosen)) if kind == "mlir" else ()
            h = hashlib.sha256()
            for part in (_CACHE_FORMAT, kind, text, "\0".join(flags), versions[tool_name]):
                h.update(part.encode())
                h.update(b"\0\0")
            key = h.hexdigest()
            entry = cache_dir / (name.replace("/", "__") + "-" + key[:20])
            jobs_list.append(_Job(name, kind, path, text, d, key, entry, chosen))

        missing = [j for j in jobs_list if not _entry_valid(j)]
        if missing:
            spawned += len(missing)
            with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                errors = [e for e in pool.map(_compile_job, missing) if e]
            if errors:
                raise CorpusError("corpus compilation failed:\n" + "\n\n".join(errors))
        self.last_build_subprocess_count = spawned

        out = []
        for j in jobs_list:
            meta = json.loads((j.entry / "meta.json").read_text())
            out.append(
                CorpusModule(
                    name=j.name,
                    kind=j.kind,
                    source=j.source,
                    vmfb=j.entry / "module.vmfb",
                    executables=tuple(j.entry / "executables" / e for e in meta["executables"]),
                    flags=j.directives.flags_for(j.target),
                    calls=j.directives.calls,
                    expect_trap=j.directives.expect_trap,
                    check_tests=j.directives.check_tests,
                    exports=j.directives.exports,
                    oracle_crash=j.directives.oracle_crash,
                    oracle_quirks=j.directives.oracle_quirks,
                    target=j.target or "vmvx",
                )
            )
        return out


def _jitvm_assembler_version() -> str:
    """Identifies jitvm's assembler by the hash of the frontend sources it is made of."""
    h = hashlib.sha256()
    frontend_dir = Path(frontend.__file__).resolve().parent
    for path in sorted(frontend_dir.rglob("*.py")):
        h.update(path.relative_to(frontend_dir).as_posix().encode() + b"\0" + path.read_bytes())
    return "jitvm-asm " + h.hexdigest()[:20]


def _version_of(tool_name: str, cache_dir: Path) -> tuple[str, int]:
    """(the version of IREE tool `tool_name`, subprocesses started to ask it). Without the
    tool, the version the cache's entries were built with: compiled entries are found, and
    only a missing one fails (it needs the tool)."""
    tool = find_tool(tool_name)
    if tool is None:
        recorded = recorded_version(tool_name, cache_dir)
        if recorded is None:
            require_tool(tool_name)  # raises, naming the tool
        return recorded, 0
    memo_before = _count_files(cache_dir / "tool-versions")
    version = tool_version(tool, cache_dir)
    record_version(tool_name, version, cache_dir)
    return version, _count_files(cache_dir / "tool-versions") - memo_before


def _tool_name(kind: str, source: Path) -> str:
    if kind == "mlir":
        return "iree-compile"
    return "jitvm-asm" if source.suffix == ".jvasm" else "iree-as-module"


@dataclass
class _Job:
    name: str
    kind: str
    source: Path
    text: str
    directives: Directives
    key: str
    entry: Path
    target: str  # "" for VM assembly


def _count_files(d: Path) -> int:
    return len(list(d.iterdir())) if d.is_dir() else 0


def _entry_valid(j: _Job) -> bool:
    meta = j.entry / "meta.json"
    if not meta.is_file():
        return False
    try:
        data = json.loads(meta.read_text())
    except ValueError:
        return False
    return data.get("key") == j.key and (j.entry / "module.vmfb").is_file()


def compile_command(kind: str, source: Path, out: Path, flags: Sequence[str], exe_dir: Path | None,
                    target: str = "vmvx"):
    if kind == "mlir":
        cmd = [require_tool("iree-compile"), *target_flags(target), *flags, str(source), "-o", str(out)]
        if exe_dir is not None:
            cmd.insert(-3, f"--iree-hal-dump-executable-binaries-to={exe_dir}")
        return cmd
    if _tool_name(kind, source) == "jitvm-asm":
        return [sys.executable, "-m", "jitvm", "asm", str(source), "-o", str(out)]
    return [require_tool("iree-as-module"), f"--output={out}", str(source)]


def _compile_job(j: _Job) -> str | None:
    """Compiles one entry into a temp dir and renames it into place; returns an error or None."""
    parent = j.entry.parent
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=".build-"))
    try:
        exe_dir = tmp / "executables"
        exe_dir.mkdir()
        # Compile the real file so debug locations name it (the text was hashed just before).
        target = j.target or "vmvx"
        cmd = compile_command(j.kind, j.source, tmp / "module.vmfb", j.directives.flags_for(target), exe_dir, target)
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0 or not (tmp / "module.vmfb").is_file():
            return f"{j.name}: {shlex.join(cmd)}\n{(r.stderr or r.stdout).strip()}"
        exes = sorted(p.name for p in exe_dir.glob("*.vmfb"))  # VMVX's (llvm-cpu dumps ELF .so files)
        for p in exe_dir.iterdir():
            if p.suffix != ".vmfb":
                p.unlink()
        meta = {"key": j.key, "name": j.name, "cmd": cmd, "executables": exes}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        if j.entry.exists():
            shutil.rmtree(j.entry)
        os.replace(tmp, j.entry)
        return None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
