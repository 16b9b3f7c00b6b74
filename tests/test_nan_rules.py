"""The per-host NaN rules (runtime.vm.semantics.FLOAT_RULES) against what IREE's builds return.

MEASURED holds what iree-base-runtime 3.13 returned for tests/corpus/vmasm/nan_rules.vmasm's
NaN cases on x86_64 (natively) and on aarch64 (under qemu-aarch64 7.2, bench/aarch64.sh):
(type, op, operand bits, x86_64 result bits, aarch64 result bits). Both hosts' rules are
rendered here on any host through the interpreter's rule functions (fallback_interp.floats),
so a wrong row of the table fails on x86 too; test_corpus compares the same program's
results live with IREE on whichever host runs it, and tests/test_aarch64.py on emulated arm64.
"""

from __future__ import annotations

import struct

import pytest

from jitvm.fallback_interp import floats
from jitvm.runtime.vm import semantics
from jitvm.runtime.vm.semantics import FLOAT_RULES

MEASURED = [
    ("f32", "add", (0x7FC00005, 0x3F800000), 0x7FC00005, 0x7FC00005),
    ("f32", "sub", (0x7FC00005, 0x3F800000), 0x7FC00005, 0x7FC00005),
    ("f32", "mul", (0x7FC00005, 0x3F800000), 0x7FC00005, 0x7FC00005),
    ("f32", "div", (0x7FC00005, 0x3F800000), 0x7FC00005, 0x7FC00005),
    ("f32", "add", (0x3F800000, 0x7FC00005), 0x7FC00005, 0x7FC00005),
    ("f32", "sub", (0x3F800000, 0x7FC00005), 0x7FC00005, 0x7FC00005),
    ("f32", "mul", (0x3F800000, 0x7FC00005), 0x7FC00005, 0x7FC00005),
    ("f32", "div", (0x3F800000, 0x7FC00005), 0x7FC00005, 0x7FC00005),
    ("f32", "add", (0x7FC00005, 0xFFC00007), 0x7FC00005, 0x7FC00005),
    ("f32", "sub", (0x7FC00005, 0xFFC00007), 0x7FC00005, 0x7FC00005),
    ("f32", "mul", (0x7FC00005, 0xFFC00007), 0x7FC00005, 0x7FC00005),
    ("f32", "div", (0x7FC00005, 0xFFC00007), 0x7FC00005, 0x7FC00005),
    ("f32", "add", (0xFFC00007, 0x7FC00005), 0xFFC00007, 0xFFC00007),
    ("f32", "sub", (0xFFC00007, 0x7FC00005), 0xFFC00007, 0xFFC00007),
    ("f32", "mul", (0xFFC00007, 0x7FC00005), 0xFFC00007, 0xFFC00007),
    ("f32", "div", (0xFFC00007, 0x7FC00005), 0xFFC00007, 0xFFC00007),
    ("f32", "add", (0x7F800001, 0x7FC00005), 0x7FC00001, 0x7FC00001),
    ("f32", "sub", (0x7F800001, 0x7FC00005), 0x7FC00001, 0x7FC00001),
    ("f32", "mul", (0x7F800001, 0x7FC00005), 0x7FC00001, 0x7FC00001),
    ("f32", "div", (0x7F800001, 0x7FC00005), 0x7FC00001, 0x7FC00001),
    ("f32", "add", (0x7FC00005, 0x7F800001), 0x7FC00005, 0x7FC00001),
    ("f32", "sub", (0x7FC00005, 0x7F800001), 0x7FC00005, 0x7FC00001),
    ("f32", "mul", (0x7FC00005, 0x7F800001), 0x7FC00005, 0x7FC00001),
    ("f32", "div", (0x7FC00005, 0x7F800001), 0x7FC00005, 0x7FC00001),
    ("f32", "add", (0x7F800001, 0xFF800123), 0x7FC00001, 0x7FC00001),
    ("f32", "sub", (0x7F800001, 0xFF800123), 0x7FC00001, 0x7FC00001),
    ("f32", "mul", (0x7F800001, 0xFF800123), 0x7FC00001, 0x7FC00001),
    ("f32", "div", (0x7F800001, 0xFF800123), 0x7FC00001, 0x7FC00001),
    ("f32", "add", (0xFF800123, 0x7F800001), 0xFFC00123, 0xFFC00123),
    ("f32", "sub", (0xFF800123, 0x7F800001), 0xFFC00123, 0xFFC00123),
    ("f32", "mul", (0xFF800123, 0x7F800001), 0xFFC00123, 0xFFC00123),
    ("f32", "div", (0xFF800123, 0x7F800001), 0xFFC00123, 0xFFC00123),
    ("f32", "add", (0x3F800000, 0x7F800001), 0x7FC00001, 0x7FC00001),
    ("f32", "sub", (0x3F800000, 0x7F800001), 0x7FC00001, 0x7FC00001),
    ("f32", "mul", (0x3F800000, 0x7F800001), 0x7FC00001, 0x7FC00001),
    ("f32", "div", (0x3F800000, 0x7F800001), 0x7FC00001, 0x7FC00001),
    ("f32", "add", (0x7F800000, 0xFF800000), 0xFFC00000, 0x7FC00000),
    ("f32", "div", (0x7F800000, 0xFF800000), 0xFFC00000, 0x7FC00000),
    ("f32", "div", (0x0, 0x0), 0xFFC00000, 0x7FC00000),
    ("f32", "fma", (0x0, 0x7F800000, 0x7FC00005), 0xFFC00000, 0x7FC00000),
    ("f32", "fma", (0x7F800000, 0x0, 0xFFC00007), 0xFFC00000, 0x7FC00000),
    ("f32", "fma", (0x7FC00005, 0x3F800000, 0xFFC00007), 0x7FC00005, 0xFFC00007),
    ("f32", "fma", (0x7FC00005, 0xFFC00007, 0x3F800000), 0x7FC00005, 0x7FC00005),
    ("f32", "fma", (0x3F800000, 0x7FC00005, 0xFFC00007), 0x7FC00005, 0xFFC00007),
    ("f32", "fma", (0x7F800001, 0x7FC00005, 0xFFC00007), 0x7FC00001, 0x7FC00001),
    ("f32", "fma", (0x7FC00005, 0x7F800001, 0xFFC00007), 0x7FC00005, 0x7FC00001),
    ("f32", "fma", (0x7FC00005, 0xFFC00007, 0x7F800001), 0x7FC00005, 0x7FC00001),
    ("f32", "fma", (0x0, 0x7F800000, 0x3F800000), 0xFFC00000, 0x7FC00000),
    ("f32", "fma", (0x7FC00005, 0x3F800000, 0x3F800000), 0x7FC00005, 0x7FC00005),
    ("f32", "fma", (0x3F800000, 0x3F800000, 0x7FC00005), 0x7FC00005, 0x7FC00005),
    ("f64", "add", (0x7FF8000000000001, 0xFFF8000000000002), 0x7FF8000000000001, 0x7FF8000000000001),
    ("f64", "mul", (0x7FF8000000000001, 0xFFF8000000000002), 0x7FF8000000000001, 0x7FF8000000000001),
    ("f64", "add", (0x7FF0000000000001, 0x7FF8000000000002), 0x7FF8000000000001, 0x7FF8000000000001),
    ("f64", "mul", (0x7FF0000000000001, 0x7FF8000000000002), 0x7FF8000000000001, 0x7FF8000000000001),
    ("f64", "add", (0x7FF8000000000002, 0x7FF0000000000001), 0x7FF8000000000002, 0x7FF8000000000001),
    ("f64", "mul", (0x7FF8000000000002, 0x7FF0000000000001), 0x7FF8000000000002, 0x7FF8000000000001),
    ("f64", "add", (0x7FF0000000000000, 0xFFF0000000000000), 0xFFF8000000000000, 0x7FF8000000000000),
]

_PYTHON_OP = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
              "div": lambda x, y: x / y if y else (float("nan") if x == 0 else x / 1e-300)}


def _as_float(ty: str, bits: int) -> float:
    return floats.bits_f32(bits) if ty == "f32" else floats.bits_f64(bits)


def _made(ty: str, op: str, a: int, b: int) -> bool:
    """True when `a op b` of NaN-free operands is a NaN (inf - inf, 0 * inf, 0 / 0)."""
    r = _PYTHON_OP[op](_as_float(ty, a), _as_float(ty, b))
    return r != r


def rendered(rules, ty: str, op: str, operands: tuple[int, ...]) -> int:
    """The result bits of a NaN-producing op by `rules`."""
    if op == "fma":
        a, b, c = operands
        if rules.fused_fma:
            nan = floats.fma_nan(rules, ty, a, b, c)
            return rules.default_nan(ty) if nan is None else nan
        product = rendered(rules, ty, "mul", (a, b)) if (
            floats.is_nan(a, ty) or floats.is_nan(b, ty) or _made(ty, "mul", a, b)) else None
        if product is None:  # a finite or infinite product: only c can be the NaN
            nan = floats.nan_operand(rules, ty, (c,))
            return rules.default_nan(ty) if nan is None else nan
        return floats.nan_operand(rules, ty, (product, c))
    nan = floats.nan_operand(rules, ty, operands)
    assert nan is not None or _made(ty, op, *operands)
    return rules.default_nan(ty) if nan is None else nan


@pytest.mark.parametrize("arch,column", [("x86_64", 3), ("aarch64", 4)])
def test_rules_render_what_iree_returned(arch, column):
    rules = FLOAT_RULES[arch]
    wrong = [(row[:3], hex(rendered(rules, *row[:3])), hex(row[column]))
             for row in MEASURED if rendered(rules, *row[:3]) != row[column]]
    assert not wrong, f"{arch}: (case, rendered, measured): {wrong}"


def test_the_hosts_differ_where_the_table_says():
    # Guards the table itself: each rule that differs between the hosts has a measured case.
    x86, arm = FLOAT_RULES["x86_64"], FLOAT_RULES["aarch64"]
    differing = [row for row in MEASURED if row[3] != row[4]]
    assert any(r[1] == "fma" for r in differing)  # fused, addend first
    assert any(r[3] == x86.default_nan(r[0]) and r[4] == arm.default_nan(r[0]) for r in differing)
    assert any(r[1] != "fma" and r[3] != r[4] and r[4] not in (arm.default_nan(r[0]),) for r in differing)  # sNaN first


def test_host_rules_are_this_machines():
    import platform

    machine = platform.machine().lower()
    expected = "aarch64" if machine in ("aarch64", "arm64") else "x86_64"
    assert semantics.HOST is FLOAT_RULES[expected]
    # The default NaN the FPU makes here is the table's (IREE computes it at run time too).
    inf = float("inf")
    assert struct.unpack("<Q", struct.pack("<d", inf - inf))[0] == semantics.HOST.default_nan_f64
    assert floats.f32_bits(inf - inf) == semantics.HOST.default_nan_f32
