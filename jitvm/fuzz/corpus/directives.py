"""The directive comments at the head of a corpus program (see the package docstring)."""

from __future__ import annotations

import re
import shlex

from .model import TARGETS, ArgSpec, Call, CorpusError, Directives, DTYPES

_DIRECTIVE_RE = re.compile(
    r"^\s*//\s*(FLAGS|LLVM-CPU-FLAGS|TARGETS|CALL|EXPECT-TRAP|ORACLE-CRASH|ORACLE-QUIRK|NOT-CALLED|CHECK-TESTS)(?![\w-]):?\s*(.*?)\s*$"
)
_CALL_RE = re.compile(r"^@([\w.$-]+)\s*\((.*)\)$")
_SHAPE_RE = re.compile(r"^((?:\d+x)*)(f16|bf16|f32|f64|i1|i8|i16|i32|i64)$")
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
    llvm_cpu_flags: list[str] = []
    calls: list[Call] = []
    traps: set[str] = set()
    crashes: set[str] = set()
    quirks: set[str] = set()
    not_called: set[str] = set()
    check_tests = False
    targets = TARGETS
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _DIRECTIVE_RE.match(line)
        if not m:
            continue
        key, rest = m.groups()
        try:
            if key == "FLAGS":
                flags.extend(shlex.split(rest))
            elif key == "LLVM-CPU-FLAGS":
                llvm_cpu_flags.extend(shlex.split(rest))
            elif key == "TARGETS":
                targets = tuple(rest.split())
                unknown = [t for t in targets if t not in TARGETS]
                if not targets or unknown:
                    raise CorpusError(f"bad TARGETS directive {rest!r}: the targets are {', '.join(TARGETS)}")
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
        targets,
        tuple(llvm_cpu_flags),
    )


def _is_private_mlir_func(text: str, name: str) -> bool:
    return re.search(rf"func\.func\s+(private|nested)\s+@{re.escape(name)}\b", text) is not None
