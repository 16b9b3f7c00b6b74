"""vmvx.mmt4d: tiled matmul C += A * B^T over packed 4-D operands, and its tile-size query.

lhs is M x K x M0 x K0, rhs N x K x N0 x K0, out M x N x M0 x N0 (rows of the outer
dimension `row_stride` elements apart, everything inner contiguous). Float accumulation
runs over k then k0 in order, fused (FMA) when IREE's build for this host (x86-64 AVX2/AVX-512,
aarch64 NEON) would use a fused tile function for these tile sizes and unfused otherwise, so
results match bit for bit.
"""

from __future__ import annotations

import numpy as np

from ....errors import STATUS_CODES, Trap
from ...native import hwcaps
from ...vm.semantics import HOST
from .elementwise import flush_denormals
from .fma import fma_f32

TYPE_MASK = 0xFF
F32F32F32 = 0x01
S8S8S32 = 0x02
ACCUMULATE = 0x100

# operand types per mmt4d type: (lhs, rhs, out)
TYPES = {F32F32F32: (np.float32, np.float32, np.float32), S8S8S32: (np.int8, np.int8, np.int32)}

# Tile sizes (M0, N0, K0) for which IREE's build accumulates f32 fused, per host: x86-64 in
# its AVX2+FMA / AVX-512 tile functions (runtime/src/iree/builtins/ukernel/arch/x86_64/
# mmt4d_x86_64_tiles.inl), unfused in the generic one; aarch64 everywhere (None): its NEON
# tiles use vfmaq, and the generic tile's `acc += a * b` is contracted to FMADD (measured
# under qemu with iree-base-runtime 3.13: an 8x8x4 tile, which has no NEON function, fused).
FUSED_F32_TILES = {
    "x86_64": {(m0, n0, 1) for n0 in (8, 16) for m0 in (1, 2, 4, 8, 16) if m0 <= n0},
    "aarch64": None,
}


def fuses(arch: str, tile: tuple[int, int, int]) -> bool:
    fused = FUSED_F32_TILES[arch]
    return fused is None or tile in fused

# query_tile_sizes.2d: operation -> (M, K, N) tiles, per host (query_tile_sizes_*_entry_point.c):
# x86-64 as on a CPU with AVX2+FMA; aarch64's i8 tiles follow the CPU (i8mm, dotprod, plain).
QUERY_OPERATION_MASK = 0xFF00
QUERY_ROLE_MASK = 0xFF
MATMUL_F32F32F32, MATMUL_I8I8I32 = 0x0100, 0x0200
GENERIC_MATMUL_TILES = (8, 4, 8)


def matmul_tiles(arch: str, cpu: dict[str, bool]) -> dict[int, tuple[int, int, int]]:
    """operation -> (M, K, N) tile sizes IREE's build for `arch` picks on a CPU with `cpu`."""
    if arch == "aarch64":
        i8 = (8, 8, 8) if cpu.get("i8mm") else (8, 4, 8) if cpu.get("dotprod") else (8, 1, 8)
        return {MATMUL_F32F32F32: (8, 1, 8), MATMUL_I8I8I32: i8}
    return {MATMUL_F32F32F32: (8, 1, 8), MATMUL_I8I8I32: (8, 2, 8)}


_HOST_TILES = matmul_tiles(HOST.arch, hwcaps.host_features() or {})
ROLE_LHS, ROLE_RHS, ROLE_RESULT = 1, 2, 3


def mmt4d_type(flags: int):
    kind = flags & TYPE_MASK
    if kind not in TYPES:
        raise Trap(STATUS_CODES["INVALID_ARGUMENT"], f"vmvx.mmt4d: unhandled flags 0x{flags:X} (type {kind})")
    return kind, TYPES[kind]


def mmt4d(lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray, kind: int, accumulate: bool,
          arch: str = HOST.arch) -> None:
    """lhs (M,K,M0,K0), rhs (N,K,N0,K0), out (M,N,M0,N0) views; out is written in place, as
    IREE's build for `arch` computes it."""
    M, K, M0, K0 = lhs.shape
    N, _, N0, _ = rhs.shape
    if M == 0 or N == 0 or (K == 0 and accumulate):
        return
    if kind == S8S8S32:
        acc = np.einsum("ikac,jkbc->ijab", lhs.astype(np.int64), rhs.astype(np.int64))
        if accumulate:
            acc = acc + out.astype(np.int64)
        out[...] = (acc & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
        return
    fused = fuses(arch, (M0, N0, K0))
    acc = flush_denormals(out.astype(np.float32)) if accumulate else np.zeros(out.shape, np.float32)
    a = flush_denormals(lhs.astype(np.float32))
    b = flush_denormals(rhs.astype(np.float32))
    with np.errstate(all="ignore"):
        for k in range(K):
            for k0 in range(K0):
                x = a[:, k, :, k0][:, None, :, None]  # (M,1,M0,1)
                y = b[:, k, :, k0][None, :, None, :]  # (1,N,1,N0)
                acc = fma_f32(x, y, acc) if fused else flush_denormals(acc + flush_denormals(x * y))
                acc = flush_denormals(acc)
    out[...] = acc


def query_tile_sizes(size0: int, size1: int, flags: int, tiles: dict | None = None) -> tuple[int, int]:
    """(tile_size0, tile_size1) for a matmul operand of the given role (`tiles`: a
    matmul_tiles table, this host's by default)."""
    tiles = _HOST_TILES if tiles is None else tiles
    m, k, n = tiles.get(flags & QUERY_OPERATION_MASK, GENERIC_MATMUL_TILES)
    role = flags & QUERY_ROLE_MASK
    if role == ROLE_LHS:
        return m, k
    if role == ROLE_RHS:
        return n, k
    if role == ROLE_RESULT:
        return m, n
    raise Trap(STATUS_CODES["INVALID_ARGUMENT"], f"vmvx.query_tile_sizes.2d: unknown operand role in flags "
                                                 f"0x{flags:X}")
