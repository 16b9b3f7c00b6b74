"""Generates and compiles the benchmark models, caching both steps in bench/.cache/.

MLIR files are keyed by the model's name, its generator parameters and the generator
sources (so a 200 MB ResNet text is written once); .vmfb files by the MLIR's content,
the target flags and iree-compile's version. Entries are written to a temporary name
and renamed, so an interrupted build never leaves a truncated file behind.

    python -m bench.build [--models NAME ...] [--targets vmvx llvm-cpu] [--resolution 64] [--suite exported]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path

from bench.models import ModelSpec, suite

CACHE = Path(__file__).resolve().parent / ".cache"
MODELS_DIR = Path(__file__).resolve().parent / "models"
LOCAL = ["--iree-hal-target-device=local"]
TARGETS = {
    "vmvx": LOCAL + ["--iree-hal-local-target-device-backends=vmvx"],
    "llvm-cpu": LOCAL + ["--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host"],
}


def iree_compile() -> str:
    """iree-compile next to this Python (the venv's), else the one on PATH."""
    local = Path(sys.executable).with_name("iree-compile")
    return str(local) if local.exists() else (shutil.which("iree-compile") or "iree-compile")


@lru_cache(maxsize=1)
def compiler_version() -> str:
    out = subprocess.run([iree_compile(), "--version"], capture_output=True, text=True, check=True).stdout
    return " ".join(out.split())


@lru_cache(maxsize=1)
def _generator_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(MODELS_DIR.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def mlir_file(spec: ModelSpec, log=print) -> Path:
    """The model's MLIR text, generated on first use."""
    key = hashlib.sha256(json.dumps([spec.name, spec.params, _generator_digest()], sort_keys=True).encode())
    path = CACHE / "mlir" / f"{spec.name}-{key.hexdigest()[:16]}.mlir"
    if not path.exists():
        start = time.perf_counter()
        _atomic_write(path, lambda p: p.write_text(spec.build()))
        log(f"generated {path.name} ({path.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - start:.1f} s")
    return path


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    return h.hexdigest()


def compile_key(source: Path, flags: list[str]) -> str:
    return hashlib.sha256(json.dumps([_file_digest(source), flags, compiler_version()]).encode()).hexdigest()


def _iree_compile(source: Path, flags: list[str], output: Path, what: str) -> None:
    done = subprocess.run([iree_compile(), str(source), *flags, "-o", str(output)], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"iree-compile failed for {what}:\n{done.stderr[-4000:]}")


def compile_file(source: Path, flags: list[str], name: str, log=print) -> Path:
    """`source` compiled with `flags` into the cache as NAME-KEY.vmfb."""
    path = CACHE / "vmfb" / f"{name}-{compile_key(source, flags)[:16]}.vmfb"
    if not path.exists():
        start = time.perf_counter()
        _atomic_write(path, lambda tmp: _iree_compile(source, flags, tmp, name))
        log(f"compiled {path.name} in {time.perf_counter() - start:.1f} s")
    return path


def compile_into(specs: dict[str, ModelSpec], out: Path, target: str = "vmvx") -> dict[str, Path]:
    """Each spec built and compiled for `target` into `out`, by key: the tests' way (their
    files stay in a temporary folder, never in the cache)."""
    paths = {}
    for key, spec in specs.items():
        source = out / f"{key}.mlir"
        source.write_text(spec.build())
        paths[key] = out / f"{key}.vmfb"
        _iree_compile(source, TARGETS[target] + list(spec.compile_flags), paths[key], key)
    return paths


def compile_model(spec: ModelSpec, target: str, extra_flags: tuple[str, ...] = (), log=print) -> Path:
    """The model compiled for `target` ("vmvx" or "llvm-cpu"), from the cache when possible."""
    flags = TARGETS[target] + list(spec.compile_flags) + list(extra_flags)
    return compile_file(mlir_file(spec, log), flags, f"{spec.name}-{target}", log)


def dump(spec: ModelSpec, target: str, kind: str, log=print) -> Path:
    """A cached directory of what iree-compile writes besides the module: `kind` is
    "binaries" (each executable as its own .vmfb, for `jitvm dump`), "benchmarks" (each
    executable as a standalone MLIR benchmark module) or "stream" (the program after
    dispatch formation, weights elided: which executable runs how often)."""
    source = mlir_file(spec, log)
    extra = {"binaries": ["--iree-hal-dump-executable-binaries-to={dir}"],
             "benchmarks": ["--iree-hal-dump-executable-benchmarks-to={dir}"],
             "stream": ["--compile-to=stream", "--mlir-elide-elementsattrs-if-larger=16"]}[kind]
    flags = TARGETS[target] + list(spec.compile_flags) + extra
    out = CACHE / "dumps" / f"{spec.name}-{target}-{kind}-{compile_key(source, flags)[:16]}"
    if not out.exists():
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            resolved = [f.format(dir=tmp) for f in flags]
            _iree_compile(source, resolved, tmp / "stream.mlir" if kind == "stream" else Path(os.devnull),
                          f"{spec.name} ({target}, {kind})")
            tmp.replace(out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log(f"dumped {kind} of {spec.name} ({target}) to {out.name}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.build", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", help="model names (default: the whole suite)")
    p.add_argument("--targets", nargs="*", default=list(TARGETS), choices=list(TARGETS))
    p.add_argument("--resolution", type=int, default=64, help="resnet50 input size (default 64)")
    p.add_argument("--suite", choices=("kernels", "exported"), default="kernels",
                   help="exported: the PyTorch models of bench/exported (needs torch)")
    args = p.parse_args(argv)
    from bench.exported import exported_suite

    specs = exported_suite() if args.suite == "exported" else suite(args.resolution)
    for name in args.models or specs:
        for target in args.targets:
            print(compile_model(specs[name], target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
