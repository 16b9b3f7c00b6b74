"""The `vmvx` native module: microkernels imported by VMVX executables.

Emitted by iree-compile under `--iree-vmvx-enable-microkernels` (data-tiled matmuls add
mmt4d/pack/unpack/query_tile_sizes). Exports are built from the op tables, so adding an
elementwise op is one table line; every buffer operand is checked before it is touched.
"""

from __future__ import annotations

from ...vm.interface import NativeModule, PythonFunction
from . import elementwise, mmt4d as mm, pack as pk
from .strided import view, view_2d

VMVX_MODULE_VERSION = 0
BINARY_CCONV = "0rIIIrIIIrIIIII_v"
UNARY_CCONV = "0rIIIrIIIII_v"
COPY_WIDTHS = {"x8": "<u1", "x16": "<u2", "x32": "<u4", "x64": "<u8"}


def _binary(name, dtype, fn):
    def run(lhs, lo, ls0, ls1, rhs, ro, rs0, rs1, out, oo, os0, os1, size0, size1):
        a = view_2d(lhs, f"vmvx.{name} lhs", dtype, lo, ls0, ls1, size0, size1, False)
        b = view_2d(rhs, f"vmvx.{name} rhs", dtype, ro, rs0, rs1, size0, size1, False)
        c = view_2d(out, f"vmvx.{name} out", dtype, oo, os0, os1, size0, size1, True)
        elementwise.apply(fn, dtype, c, a, b)
    return run


def _unary(name, dtype, fn):
    def run(src, io, is0, is1, out, oo, os0, os1, size0, size1):
        a = view_2d(src, f"vmvx.{name} in", dtype, io, is0, is1, size0, size1, False)
        c = view_2d(out, f"vmvx.{name} out", dtype, oo, os0, os1, size0, size1, True)
        elementwise.apply(fn, dtype, c, a)
    return run


def _copy(name, dtype):
    def run(src, io, is0, is1, out, oo, os0, os1, size0, size1):
        a = view_2d(src, f"vmvx.{name} in", dtype, io, is0, is1, size0, size1, False)
        view_2d(out, f"vmvx.{name} out", dtype, oo, os0, os1, size0, size1, True)[...] = a
    return run


def fill_2d_x32(value, out, offset, row_stride, size0, size1):
    view_2d(out, "vmvx.fill.2d.x32 out", "<u4", offset, row_stride, 1, size0, size1, True)[...] = value & 0xFFFFFFFF


def mmt4d(lhs, lo, lrs, rhs, ro, rrs, out, oo, ors, m, n, k, m0, n0, k0, flags):
    kind, (lt, rt, ot) = mm.mmt4d_type(flags)
    a = view(lhs, "vmvx.mmt4d lhs", lt, lo, (m, k, m0, k0), (lrs, m0 * k0, k0, 1), False)
    b = view(rhs, "vmvx.mmt4d rhs", rt, ro, (n, k, n0, k0), (rrs, n0 * k0, k0, 1), False)
    c = view(out, "vmvx.mmt4d out", ot, oo, (m, n, m0, n0), (ors, m0 * n0, n0, 1), True)
    mm.mmt4d(a, b, c, kind, bool(flags & mm.ACCUMULATE))


def pack(src, io, is0, is1, out, oo, os0, os1, in0, in1, s0, s1, s2, s3, padding, flags):
    dtype = pk.element_dtype(flags, pk.PACK_TYPES, "pack")
    a = view_2d(src, "vmvx.pack in", dtype, io, is0, is1, in0, in1, False)
    c = view(out, "vmvx.pack out", dtype, oo, (s0, s1, s2, s3), (os0, os1, s3, 1), True)
    pk.pack(a, c, padding, flags)


def unpack(src, io, is0, is1, out, oo, os0, os1, s0, s1, s2, s3, out0, out1, flags):
    dtype = pk.element_dtype(flags, pk.UNPACK_TYPES, "unpack")
    a = view(src, "vmvx.unpack in", dtype, io, (s0, s1, s2, s3), (is0, is1, s3, 1), False)
    c = view_2d(out, "vmvx.unpack out", dtype, oo, os0, os1, out0, out1, True)
    pk.unpack(a, c, flags)


def query_tile_sizes_2d(size0, size1, flags):
    return mm.query_tile_sizes(size0, size1, flags)


def _exports():
    table = {}
    for name, (dtype, fn) in elementwise.BINARY.items():
        table[name] = (BINARY_CCONV, _binary(name, dtype, fn))
    for name, (dtype, fn) in elementwise.UNARY.items():
        table[name] = (UNARY_CCONV, _unary(name, dtype, fn))
    for width, dtype in COPY_WIDTHS.items():
        table[f"copy.2d.{width}"] = (UNARY_CCONV, _copy(f"copy.2d.{width}", dtype))
    table["fill.2d.x32"] = ("0irIIII_v", fill_2d_x32)
    table["mmt4d"] = ("0rIIrIIrIIIIIiiii_v", mmt4d)
    table["pack"] = ("0rIIIrIIIIIIIIIIi_v", pack)
    table["unpack"] = ("0rIIIrIIIIIIIIIi_v", unpack)
    table["query_tile_sizes.2d"] = ("0IIi_II", query_tile_sizes_2d)
    return table


EXPORTS = _exports()


class VmvxModule(NativeModule):
    name = "vmvx"
    version = VMVX_MODULE_VERSION

    def __init__(self):
        super().__init__()
        for name, (cconv, fn) in EXPORTS.items():
            self._functions[name] = PythonFunction(f"vmvx.{name}", cconv, fn)
