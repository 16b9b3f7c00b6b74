"""Random arguments for the corpus's scalar functions: the interpreter equals IREE bit for bit.

Every exported function of the integer, bit, conversion and float programs is called with
arguments drawn from edge values (0, -0.0, extremes, NaN, infinities, denormals, ties,
values just beyond an integer range) and random bit patterns, in one jitvm instance and
one IREE context. Divisions are kept away from the divisors that crash IREE. The default
run makes a few hundred calls; `-m slow` makes many thousands.
"""

from __future__ import annotations

import random
import struct

import pytest

from jitvm.fallback_interp import floats
from jitvm.runtime.vm import semantics
from jitvm.fuzz.corpus import ArgSpec, Call
from jitvm.fuzz.oracles.calls import describe, instantiate, same_value
from jitvm.fuzz.oracles.iree import _vmasm_session, call_vmasm

PROGRAMS = ["vmasm/int_arith", "vmasm/bits_shifts", "vmasm/conversions", "vmasm/float_f32", "vmasm/float_f64"]
DTYPE = {"i": "i32", "I": "i64", "f": "f32", "F": "f64"}

_EDGE_INTS = {32: [0, 1, -1, 2, -2, 31, 32, 33, 63, 64, 255, 256, 65535, -(1 << 31), (1 << 31) - 1],
              64: [0, 1, -1, 63, 64, -(1 << 63), (1 << 63) - 1, (1 << 32), -(1 << 32), (1 << 31)]}
_EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, float("inf"), float("-inf"), float("nan"),
                1e-40, -3e-39, 1e-45, 3.4e38, -3.4e38, 1e300, 16777217.0, 2.0 ** 31, -(2.0 ** 31), 2.0 ** 32,
                2.0 ** 63, 1e19, 2e19, -1e19, 4503599627370497.0, 0.49999997, 1e-310, 0.3333]


def _int(rng: random.Random, bits: int) -> int:
    r = rng.random()
    if r < 0.3:
        return rng.choice(_EDGE_INTS[bits])
    if r < 0.5:
        return rng.randint(-100, 100)
    v = rng.getrandbits(bits)
    return v - (1 << bits) if v >> (bits - 1) else v


def _nan(rng: random.Random, code: str) -> float:
    """A NaN with a random sign and payload (f64 ones may be signalling)."""
    if code == "f":
        return floats.bits_f32((rng.getrandbits(1) << 31) | 0x7F800000 | (rng.getrandbits(23) or 1))
    return floats.bits_f64((rng.getrandbits(1) << 63) | 0x7FF0000000000000 | (rng.getrandbits(52) or 1))


def _float(rng: random.Random, code: str) -> float:
    r = rng.random()
    if r < 0.15:
        return _nan(rng, code)
    if r < 0.4:
        return rng.choice(_EDGE_FLOATS)
    if r < 0.7:
        return rng.uniform(-10, 10) * 10.0 ** rng.randint(-8, 8)
    if code == "f":
        return floats.bits_f32(rng.getrandbits(32))
    return floats.bits_f64(rng.getrandbits(64))


def _args(rng: random.Random, name: str, codes) -> list:
    out = []
    for code in codes:
        if code in ("i", "I"):
            out.append(_int(rng, 32 if code == "i" else 64))
        else:
            out.append(_float(rng, code))
    if name.startswith("divrem"):  # IREE dies with SIGFPE on these divisors
        bits = 32 if codes[0] == "i" else 64
        if out[1] == 0 or (out[1] == -1 and out[0] == -(1 << (bits - 1))):
            out[1] = 3
    return out


def _targets(cm, instance):
    for name in cm.exports:
        fn = instance.lookup(name)
        if fn.cconv.args and "trap" not in name:
            yield name, fn


def _run(corpus_by_name, calls_per_function: int, seed: int) -> list[str]:
    problems = []
    rng = random.Random(seed)
    for program in PROGRAMS:
        cm = corpus_by_name[program]
        _ctx, instance = instantiate(cm.vmfb)
        vm, ctx, _keep = _vmasm_session(cm)
        for name, fn in _targets(cm, instance):
            for _ in range(calls_per_function):
                args = _args(rng, name, fn.cconv.args)
                call = Call(name, tuple(ArgSpec(DTYPE[c], value=a) for c, a in zip(fn.cconv.args, args)))
                want = call_vmasm(vm, ctx, call, args)
                got = fn.call(args)
                if len(got) != len(want) or not all(same_value(g, w) for g, w in zip(got, want)):
                    shown = ", ".join(f"{DTYPE[c]}={describe(a)}" for c, a in zip(fn.cconv.args, args))
                    problems.append(f"{program} @{name}({shown}): jitvm [{', '.join(map(describe, got))}] "
                                    f"!= IREE [{', '.join(map(describe, want))}]")
    return problems


def test_random_scalar_calls_equal_iree(corpus_by_name):
    problems = _run(corpus_by_name, calls_per_function=100, seed=20261129)
    assert not problems, "\n".join(problems[:40])


@pytest.mark.slow
def test_many_random_scalar_calls_equal_iree(corpus_by_name):
    problems = _run(corpus_by_name, calls_per_function=10_000, seed=7)
    assert not problems, "\n".join(problems[:40])


def test_float_bit_helpers_round_like_c():
    """The helpers the interpreter converts Python values with, against C's casts."""
    assert floats.f32_bits(1e300) == 0x7F800000 and floats.f32_bits(-1e300) == 0xFF800000
    assert floats.f32_bits(3.40282356e38) == 0x7F7FFFFF  # below the midpoint: rounds down to FLT_MAX
    assert floats.f32_bits(3.4028235677973366e38) == 0x7F800000  # the midpoint: ties to even, inf
    assert floats.int_to_f32((1 << 53) + (1 << 29) + 1) == float((1 << 53) + (1 << 30))  # one rounding
    assert floats.int_to_f32(-(1 << 63)) == -(2.0 ** 63)
    assert struct.pack("<d", floats.divide_by_zero(-1.0, 0.0)) == struct.pack("<d", float("-inf"))
    assert struct.pack("<d", floats.divide_by_zero(2.0, -0.0)) == struct.pack("<d", float("-inf"))
    # 0/0 is the default NaN of the host IREE was built for: negative on x86_64, positive on arm64
    assert floats.f64_bits(floats.divide_by_zero(0.0, 0.0)) == semantics.HOST.default_nan_f64
