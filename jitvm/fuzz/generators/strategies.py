"""The generators under hypothesis: choices drawn from strategies, so a failing program shrinks.

Apart from the rest of the generators because only this module needs hypothesis (a test
dependency): seeded campaigns (`RandomChooser`) run without it.
"""

from __future__ import annotations

from hypothesis import strategies as st

from .emit import Chooser
from .program import generate
from .values import EDGES, WIDTH, bits_of_f32, bits_of_f64, f32_of_bits, f64_of_bits, signed


class DrawChooser(Chooser):
    """Decisions drawn by hypothesis (so failing programs shrink)."""

    def __init__(self, draw):
        self.draw = draw

    def int(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def choice(self, seq):
        return self.draw(st.sampled_from(seq))

    def bits(self, bank):
        return self.draw(bits(bank))


def bits(bank: str):
    """A strategy of raw bit patterns (unsigned) of the bank: edges first, then small values
    (for floats: small integers and simple fractions), then anything."""
    width = WIDTH[bank]
    mask = (1 << width) - 1
    if bank in ("i32", "i64"):
        small = st.integers(-300, 300)
    elif bank == "f32":
        small = st.integers(-64, 64).map(lambda n: bits_of_f32(n / 4))
    else:
        small = st.integers(-64, 64).map(lambda n: bits_of_f64(n / 4))
    return st.one_of(st.sampled_from(EDGES[bank]), small, st.integers(0, mask)).map(lambda b: b & mask)


def scalar(bank: str):
    """Python values of the bank for call arguments: signed ints, floats (from bit patterns)."""
    if bank in ("i32", "i64"):
        return bits(bank).map(lambda b: signed(b, WIDTH[bank]))
    if bank == "f32":
        return bits(bank).map(f32_of_bits)
    return bits(bank).map(f64_of_bits)


def programs(kind: str, functions: int | None = None):
    """Hypothesis strategy of `Program`s of one kind."""
    return st.composite(lambda draw: generate(DrawChooser(draw), kind, functions))()
