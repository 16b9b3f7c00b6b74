"""Calling-convention strings: `0rIrrIiiII_r`, with `C...D` around variadic tuples.

After the version digit come the argument codes, `_`, then the result codes; `v` alone
means none. Codes: i=i32, I=i64, f=f32, F=f64, r=ref. A `C...D` span is one argument
position that repeats its tuple as many times as the call's segment size says.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..errors import FormatError

VALUE_CODES = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "ref"}
CODE_OF_BANK = {v: k for k, v in VALUE_CODES.items()}
NOT_VARIADIC = 0xFFFF  # segment size written for a non-variadic argument position


@dataclass(frozen=True)
class Span:
    """A variadic argument position: a tuple of value codes repeated N times."""

    codes: tuple[str, ...]

    def __str__(self) -> str:
        return "C" + "".join(self.codes) + "D"


@dataclass(frozen=True)
class CallingConvention:
    """A parsed calling convention string: argument and result codes."""

    text: str
    args: tuple  # of str (one code) or Span
    results: tuple[str, ...]

    @property
    def is_variadic(self) -> bool:
        return any(isinstance(a, Span) for a in self.args)

    def flat_args(self, segment_sizes: tuple[int, ...] | None = None) -> tuple[str, ...]:
        """Argument codes one per register, expanding spans by their segment sizes."""
        if not self.is_variadic:
            return tuple(self.args)
        if segment_sizes is None or len(segment_sizes) != len(self.args):
            raise ValueError("segment sizes must match the argument positions")
        out: list[str] = []
        for arg, size in zip(self.args, segment_sizes):
            if isinstance(arg, Span):
                out.extend(arg.codes * size)
            else:
                out.append(arg)
        return tuple(out)

    def __str__(self) -> str:
        return self.text


def _codes(text: str, part: str, where: str, allow_spans: bool) -> tuple:
    out: list = []
    i = 0
    while i < len(part):
        c = part[i]
        if c in VALUE_CODES:
            out.append(c)
            i += 1
        elif c == "C" and allow_spans:
            end = part.find("D", i + 1)
            if end < 0:
                raise FormatError(f"{where}: calling convention {text!r} opens a variadic span that never closes")
            codes = tuple(part[i + 1:end])
            bad = [x for x in codes if x not in VALUE_CODES]
            if bad or not codes:
                raise FormatError(f"{where}: calling convention {text!r} has an invalid variadic span")
            out.append(Span(codes))
            i = end + 1
        else:
            raise FormatError(f"{where}: calling convention {text!r} has unknown type code {c!r}")
    return tuple(out)


@lru_cache(maxsize=4096)
def parse_cconv(text: str, where: str = "signature") -> CallingConvention:
    if not text or text[0] != "0":
        raise FormatError(f"{where}: calling convention {text!r} does not start with version 0")
    body = text[1:]
    if body.count("_") != 1:
        raise FormatError(f"{where}: calling convention {text!r} must have one '_' between arguments and results")
    args_text, results_text = body.split("_")
    args = () if args_text in ("", "v") else _codes(text, args_text, where, allow_spans=True)
    results = () if results_text in ("", "v") else _codes(text, results_text, where, allow_spans=False)
    return CallingConvention(text, args, results)


def make_cconv(args, results) -> str:
    """The string for argument codes/spans and result codes (inverse of parse_cconv)."""
    a = "".join(str(x) for x in args) or "v"
    r = "".join(results) or "v"
    return f"0{a}_{r}"


def argument_registers(codes) -> list[tuple[str, int]]:
    """(bank, register) receiving each argument of an internal function, in order.

    i32/f32 take the next i32 register, i64/f64 the next even-aligned pair, refs the next
    ref register; the bytecode relies on exactly this assignment.
    """
    i32 = ref = 0
    out: list[tuple[str, int]] = []
    for c in codes:
        if c in ("i", "f"):
            out.append((VALUE_CODES[c], i32))
            i32 += 1
        elif c in ("I", "F"):
            i32 += i32 & 1
            out.append((VALUE_CODES[c], i32))
            i32 += 2
        else:
            out.append(("ref", ref))
            ref += 1
    return out


def register_demand(codes) -> tuple[int, int]:
    """(i32 registers, ref registers) needed to hold `codes` laid out by argument_registers."""
    regs = argument_registers(codes)
    i32 = max((r + (2 if b in ("i64", "f64") else 1) for b, r in regs if b != "ref"), default=0)
    ref = sum(1 for b, _ in regs if b == "ref")
    return i32, ref
