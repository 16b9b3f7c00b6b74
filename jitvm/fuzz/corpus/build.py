"""jitvm's own test corpus: small MLIR and VM-assembly programs plus their compiled modules.

The programs live next to this file (``mlir/*.mlir``, ``vmasm/*.vmasm``). Each one starts with
directive comments that say how the differential tests should call it:

``// FLAGS: <extra iree-compile flags>``
    Extra flags for ``iree-compile`` (MLIR only), appended to the VMVX target flags.
``// CALL @fn(2x3xf32, 3xi32, i32)``  (MLIR)
    One call with deterministic pseudo-random inputs of these shapes/dtypes (see
    :func:`make_inputs`). Scalars are written as a bare dtype. Dtypes: f32 f64 i8 i32 i64 i1.
``// CALL @fn(i32=5, f32=1.5, f64=nan, i64=-0x8000000000000000)``  (VM assembly)
    One call with these raw VM argument values.
``// EXPECT-TRAP @fn``
    Calls of ``@fn`` must fail (trap / vm.fail / failed check) instead of returning.
``// ORACLE-CRASH @fn``
    IREE's own C interpreter does not trap here but kills the process (SIGFPE on integer
    division by zero or INT_MIN / -1): the VM semantics are a trap (list ``@fn`` under
    EXPECT-TRAP too), and the oracle runs these calls in a subprocess.
``// ORACLE-QUIRK @fn``
    What IREE returns for ``@fn`` comes from a known IREE bug or from C implementation-defined
    behaviour (e.g. f32 -> i32 casts of NaN); differential tests may report a mismatch
    there instead of failing.
``// NOT-CALLED @fn``
    Exported but not called (for example because IREE's Python invoke spins forever when a
    function executes vm.yield); it is still assembled, verified and disassembled.
``// CHECK-TESTS``
    The exports are ``check`` dialect tests: every public no-argument function is called once.

VM assembly comes in two syntaxes: ``vmasm/*.vmasm`` is IREE's VM dialect, assembled by
``iree-as-module``; ``vmasm/*.jvasm`` is the syntax ``jitvm dump`` prints, assembled by
``jitvm asm`` (for what iree-as-module refuses to assemble, such as ``vm.switch.ref``). Both
are of kind ``vmasm`` and are called the same way.

VM-assembly exports that have no CALL line are called once with no arguments.

Compiled modules go to a content-keyed cache (sha256 of the source text, the flags and the tool
version), ``jitvm-corpus-cache/`` in the system's temporary directory by default (tests write
nothing outside temporary directories) or ``$JITVM_CORPUS_CACHE``. Only missing entries are
compiled, two at a time; a fully warm build starts no subprocess.

    >>> from tests.corpus import build_corpus, make_inputs
    >>> mods = build_corpus(names=["mlir/matmul"])
    >>> m = mods[0]; call = m.calls[0]
    >>> args = make_inputs(m, 0)        # numpy arrays / numpy scalars, deterministic
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

CORPUS_DIR = Path(__file__).resolve().parent
MLIR_DIR = CORPUS_DIR / "mlir"
VMASM_DIR = CORPUS_DIR / "vmasm"
DEFAULT_CACHE_DIR = Path(tempfile.gettempdir()) / "jitvm-corpus-cache"

#: Flags every MLIR program is compiled with (before its own ``// FLAGS:``).
VMVX_FLAGS: tuple[str, ...] = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=vmvx",
)

#: Bump when the cache layout or the way modules are compiled changes.
_CACHE_FORMAT = "corpus-cache-v1"

DTYPES = {
    "f32": np.float32,
    "f64": np.float64,
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
}


class CorpusError(RuntimeError):
    """A corpus file is malformed, a tool is missing, or a compile failed."""


# --------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArgSpec:
    """One argument of a CALL: a dtype plus either a shape (MLIR) or a literal value (vmasm)."""

    dtype: str
    shape: tuple[int, ...] | None = None  # None: scalar
    value: int | float | None = None  # only for vmasm literals

    @property
    def is_scalar(self) -> bool:
        return self.shape is None

    def __str__(self) -> str:
        if self.value is not None:
            return f"{self.dtype}={self.value!r}"
        if self.shape is None:
            return self.dtype
        return "x".join(str(d) for d in self.shape) + "x" + self.dtype


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[ArgSpec, ...] = ()

    def __str__(self) -> str:
        return f"@{self.function}(" + ", ".join(str(a) for a in self.args) + ")"


@dataclass(frozen=True)
class CorpusModule:
    name: str  # "mlir/matmul", "vmasm/int_arith"
    kind: str  # "mlir" | "vmasm"
    source: Path
    vmfb: Path  # compiled module
    executables: tuple[Path, ...]  # dumped VMVX executable .vmfb files (mlir only)
    flags: tuple[str, ...]  # the file's own extra flags (VMVX_FLAGS not included)
    calls: tuple[Call, ...]
    expect_trap: frozenset[str]
    check_tests: bool
    exports: tuple[str, ...] = field(default=())  # exported function names found in the source
    oracle_crash: frozenset[str] = field(default=frozenset())  # IREE dies (SIGFPE) on these
    oracle_quirks: frozenset[str] = field(default=frozenset())  # IREE bug / impl-defined

    def expects_trap(self, function: str) -> bool:
        return function in self.expect_trap


@dataclass(frozen=True)
class Directives:
    flags: tuple[str, ...]
    calls: tuple[Call, ...]
    expect_trap: frozenset[str]
    check_tests: bool
    exports: tuple[str, ...]
    oracle_crash: frozenset[str] = frozenset()
    oracle_quirks: frozenset[str] = frozenset()


# --------------------------------------------------------------------------------------------
# Directive parsing
# --------------------------------------------------------------------------------------------

_DIRECTIVE_RE = re.compile(
    r"^\s*//\s*(FLAGS|CALL|EXPECT-TRAP|ORACLE-CRASH|ORACLE-QUIRK|NOT-CALLED|CHECK-TESTS)(?![\w-]):?\s*(.*?)\s*$"
)
_CALL_RE = re.compile(r"^@([\w.$-]+)\s*\((.*)\)$")
_SHAPE_RE = re.compile(r"^((?:\d+x)*)(f32|f64|i1|i8|i16|i32|i64)$")
_MLIR_EXPORT_RE = re.compile(r"^\s*func\.func\s+@([\w$.-]+)\s*\(", re.M)
_VMASM_EXPORT_RE = re.compile(r"^\s*vm\.export\s+@([\w$.-]+)", re.M)


def _split_args(text: str) -> list[str]:
    text = text.strip()
    return [a.strip() for a in text.split(",")] if text else []


def _parse_literal(dtype: str, text: str) -> int | float:
    if dtype in ("f32", "f64"):
        t = text.lower()
        if t in ("nan", "+nan"):
            return float("nan")
        if t == "-nan":
            return -float("nan")
        if t.startswith("0x") or t.startswith("-0x"):  # raw bits
            raise CorpusError(f"float literal {text!r}: give a decimal value")
        return float(t)
    if dtype in ("i1", "i8", "i16", "i32", "i64"):
        v = int(text, 0)
        bits = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}[dtype]
        if dtype == "i1":
            return v & 1
        v &= (1 << bits) - 1  # accept unsigned spellings like 0xFFFFFFFF
        return v - (1 << bits) if v >> (bits - 1) else v
    raise CorpusError(f"unknown dtype {dtype!r}")


def parse_arg(text: str, kind: str) -> ArgSpec:
    if "=" in text:
        dtype, _, value = text.partition("=")
        dtype = dtype.strip()
        if dtype not in DTYPES:
            raise CorpusError(f"bad argument {text!r}: unknown dtype {dtype!r}")
        return ArgSpec(dtype=dtype, value=_parse_literal(dtype, value.strip()))
    if kind == "vmasm":
        raise CorpusError(f"vmasm CALL arguments need a value, like i32=5 (got {text!r})")
    m = _SHAPE_RE.match(text)
    if not m:
        raise CorpusError(f"bad argument spec {text!r} (want e.g. 2x3xf32, i32)")
    dims, dtype = m.groups()
    if not dims:
        return ArgSpec(dtype=dtype)
    return ArgSpec(dtype=dtype, shape=tuple(int(d) for d in dims.rstrip("x").split("x")))


def parse_directives(text: str, kind: str) -> Directives:
    """Parses the leading ``//`` directive comments of a corpus source file."""
    flags: list[str] = []
    calls: list[Call] = []
    traps: set[str] = set()
    crashes: set[str] = set()
    quirks: set[str] = set()
    not_called: set[str] = set()
    check_tests = False
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _DIRECTIVE_RE.match(line)
        if not m:
            continue
        key, rest = m.groups()
        try:
            if key == "FLAGS":
                flags.extend(shlex.split(rest))
            elif key == "CALL":
                cm = _CALL_RE.match(rest)
                if not cm:
                    raise CorpusError(f"bad CALL directive {rest!r}")
                fn, args = cm.groups()
                calls.append(Call(fn, tuple(parse_arg(a, kind) for a in _split_args(args))))
            elif key in ("EXPECT-TRAP", "ORACLE-CRASH", "ORACLE-QUIRK", "NOT-CALLED"):
                dest = {
                    "EXPECT-TRAP": traps,
                    "ORACLE-CRASH": crashes,
                    "ORACLE-QUIRK": quirks,
                    "NOT-CALLED": not_called,
                }[key]
                for tok in rest.split():
                    if not tok.startswith("@"):
                        raise CorpusError(f"bad {key} directive {rest!r}")
                    dest.add(tok[1:])
            elif key == "CHECK-TESTS":
                check_tests = True
        except CorpusError as e:
            raise CorpusError(f"line {lineno}: {e}") from None

    if kind == "mlir":
        exports = tuple(
            n for n in _MLIR_EXPORT_RE.findall(text) if not _is_private_mlir_func(text, n)
        )
    else:
        exports = tuple(_VMASM_EXPORT_RE.findall(text))

    if check_tests or kind == "vmasm":
        called = {c.function for c in calls} | not_called
        calls.extend(Call(n) for n in exports if n not in called)
    if crashes - traps:
        raise CorpusError(f"ORACLE-CRASH functions must also be EXPECT-TRAP: {sorted(crashes - traps)}")
    return Directives(
        tuple(flags),
        tuple(calls),
        frozenset(traps),
        check_tests,
        exports,
        frozenset(crashes),
        frozenset(quirks),
    )


def _is_private_mlir_func(text: str, name: str) -> bool:
    return re.search(rf"func\.func\s+(private|nested)\s+@{re.escape(name)}\b", text) is not None


# --------------------------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------------------------


def find_tool(name: str) -> str | None:
    """Finds an IREE tool next to ``sys.executable`` first, then on ``PATH``."""
    here = Path(sys.executable).parent / name
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which(name)


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


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------


def source_files() -> list[tuple[str, str, Path]]:
    """(name, kind, path) of every corpus program, sorted by name."""
    out = []
    for kind, d, ext in (("mlir", MLIR_DIR, ".mlir"), ("vmasm", VMASM_DIR, ".vmasm")):
        paths = list(d.glob("*" + ext)) + (list(d.glob("*.jvasm")) if kind == "vmasm" else [])
        for p in sorted(paths):
            out.append((f"{kind}/{p.stem}", kind, p))
    return out


def _jitvm_assembler_version() -> str:
    """Identifies jitvm's assembler by the hash of the frontend sources it is made of."""
    h = hashlib.sha256()
    frontend = CORPUS_DIR.parents[1] / "jitvm" / "frontend"
    for path in sorted(frontend.rglob("*.py")):
        h.update(path.relative_to(frontend).as_posix().encode() + b"\0" + path.read_bytes())
    return "jitvm-asm " + h.hexdigest()[:20]


def _tool_name(kind: str, source: Path) -> str:
    if kind == "mlir":
        return "iree-compile"
    return "jitvm-asm" if source.suffix == ".jvasm" else "iree-as-module"


def cache_dir_default() -> Path:
    env = os.environ.get("JITVM_CORPUS_CACHE")
    return Path(env) if env else DEFAULT_CACHE_DIR


@dataclass
class _Job:
    name: str
    kind: str
    source: Path
    text: str
    directives: Directives
    key: str
    entry: Path


#: Number of subprocesses started by the last :func:`build_corpus` (tests use it to prove that a
#: warm build is free).
last_build_subprocess_count = 0


def build_corpus(
    cache_dir: Path | None = None,
    names: Iterable[str] | None = None,
    jobs: int = 2,
) -> list[CorpusModule]:
    """Compiles (or fetches from the cache) the corpus programs and returns them.

    ``names`` selects programs by name ("mlir/matmul") or bare stem ("matmul"); unknown names
    raise :class:`CorpusError`.
    """
    global last_build_subprocess_count
    cache_dir = Path(cache_dir) if cache_dir is not None else cache_dir_default()
    cache_dir.mkdir(parents=True, exist_ok=True)

    files = source_files()
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
        tool_name = _tool_name(kind, path)
        if tool_name == "jitvm-asm" and tool_name not in versions:
            versions[tool_name] = _jitvm_assembler_version()
        if tool_name not in versions:
            tool = require_tool(tool_name)
            memo_before = _count_files(cache_dir / "tool-versions")
            versions[tool_name] = tool_version(tool, cache_dir)
            spawned += _count_files(cache_dir / "tool-versions") - memo_before
        flags = (VMVX_FLAGS + d.flags) if kind == "mlir" else ()
        h = hashlib.sha256()
        for part in (_CACHE_FORMAT, kind, text, "\0".join(flags), versions[tool_name]):
            h.update(part.encode())
            h.update(b"\0\0")
        key = h.hexdigest()
        entry = cache_dir / (name.replace("/", "__") + "-" + key[:20])
        jobs_list.append(_Job(name, kind, path, text, d, key, entry))

    missing = [j for j in jobs_list if not _entry_valid(j)]
    if missing:
        spawned += len(missing)
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            errors = [e for e in pool.map(_compile_job, missing) if e]
        if errors:
            raise CorpusError("corpus compilation failed:\n" + "\n\n".join(errors))
    last_build_subprocess_count = spawned

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
                flags=j.directives.flags,
                calls=j.directives.calls,
                expect_trap=j.directives.expect_trap,
                check_tests=j.directives.check_tests,
                exports=j.directives.exports,
                oracle_crash=j.directives.oracle_crash,
                oracle_quirks=j.directives.oracle_quirks,
            )
        )
    return out


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


def compile_command(kind: str, source: Path, out: Path, flags: Sequence[str], exe_dir: Path | None):
    if kind == "mlir":
        cmd = [require_tool("iree-compile"), *VMVX_FLAGS, *flags, str(source), "-o", str(out)]
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
        cmd = compile_command(j.kind, j.source, tmp / "module.vmfb", j.directives.flags, exe_dir)
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0 or not (tmp / "module.vmfb").is_file():
            return f"{j.name}: {shlex.join(cmd)}\n{(r.stderr or r.stdout).strip()}"
        exes = sorted(p.name for p in exe_dir.glob("*.vmfb"))
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


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def _seed(module_name: str, call_index: int) -> int:
    d = hashlib.sha256(f"{module_name}#{call_index}".encode()).digest()
    return int.from_bytes(d[:8], "little")


def random_array(rng: np.random.Generator, dtype: str, shape: tuple[int, ...] | None):
    """Small values: ints in [-8, 8] (i8: [-5, 5]), floats uniform in [-2, 2), bools 50/50."""
    shp = () if shape is None else shape
    if dtype == "i1":
        a = rng.integers(0, 2, size=shp).astype(np.bool_)
    elif dtype in ("i8", "i16", "i32", "i64"):
        lim = 5 if dtype == "i8" else 8
        a = rng.integers(-lim, lim + 1, size=shp).astype(DTYPES[dtype])
    elif dtype in ("f32", "f64"):
        a = (rng.random(size=shp) * 4.0 - 2.0).astype(DTYPES[dtype])
    else:
        raise CorpusError(f"no generator for dtype {dtype}")
    return a[()] if shape is None else np.ascontiguousarray(a)


def make_inputs(module: CorpusModule, call_index: int) -> list:
    """Deterministic inputs for ``module.calls[call_index]``.

    MLIR calls: numpy arrays (tensor args) and numpy scalars (scalar args), seeded by module
    name + call index. VM-assembly calls: the literal values as numpy scalars of their dtype.
    """
    call = module.calls[call_index]
    rng = np.random.default_rng(_seed(module.name, call_index))
    out = []
    for a in call.args:
        if a.value is not None:
            out.append(DTYPES[a.dtype](a.value))
        else:
            out.append(random_array(rng, a.dtype, a.shape))
    return out


__all__ = [
    "ArgSpec",
    "Call",
    "CorpusError",
    "CorpusModule",
    "Directives",
    "VMVX_FLAGS",
    "build_corpus",
    "cache_dir_default",
    "find_tool",
    "make_inputs",
    "parse_directives",
    "random_array",
    "source_files",
]
