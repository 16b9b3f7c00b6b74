"""vmvx.pack / vmvx.unpack: between a 2-D matrix and its tiled 4-D layout (tensor.pack).

pack: out[o0, o1, t0, t1] = in[o0*T0 + t0, o1*T1 + t1], padded where the input ends;
TRANSPOSE_OUTER swaps the outer dimensions and TRANSPOSE_INNER the tile dimensions of
the 4-D side. unpack is the inverse, without padding.
"""

from __future__ import annotations

import numpy as np

from ....errors import STATUS_CODES, Trap

TYPE_MASK = 0xFF
TRANSPOSE_INNER = 0x100
TRANSPOSE_OUTER = 0x200
PACK_TYPES = {0x01: np.float32, 0x02: np.int8, 0x03: np.int32}
UNPACK_TYPES = {0x01: np.float32, 0x03: np.int32}


def element_dtype(flags: int, table, name: str):
    kind = flags & TYPE_MASK
    if kind not in table:
        raise Trap(STATUS_CODES["INVALID_ARGUMENT"], f"vmvx.{name}: unhandled flags 0x{flags:X}")
    return np.dtype(table[kind])


def _to_tiled_order(tiled: np.ndarray, flags: int) -> np.ndarray:
    """(A, B, a, b) in input order -> the 4-D side's axis order (involution)."""
    if flags & TRANSPOSE_OUTER:
        tiled = tiled.swapaxes(0, 1)
    if flags & TRANSPOSE_INNER:
        tiled = tiled.swapaxes(2, 3)
    return tiled


def pack(src: np.ndarray, out: np.ndarray, padding: int, flags: int) -> None:
    """src (rows, cols); out (S0, S1, S2, S3) a view of the 4-D side."""
    s0, s1, s2, s3 = out.shape
    outer = (s1, s0) if flags & TRANSPOSE_OUTER else (s0, s1)
    tile = (s3, s2) if flags & TRANSPOSE_INNER else (s2, s3)
    rows, cols = outer[0] * tile[0], outer[1] * tile[1]
    if src.shape[0] > rows or src.shape[1] > cols:
        raise Trap(STATUS_CODES["INVALID_ARGUMENT"], f"vmvx.pack: input {src.shape} does not fit "
                                                     f"{outer[0]}x{outer[1]} tiles of {tile[0]}x{tile[1]}")
    pad_bytes = int(padding & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")[:out.dtype.itemsize]
    full = np.full((rows, cols), np.frombuffer(pad_bytes, dtype=out.dtype)[0], dtype=out.dtype)
    full[:src.shape[0], :src.shape[1]] = src
    tiled = full.reshape(outer[0], tile[0], outer[1], tile[1]).transpose(0, 2, 1, 3)
    out[...] = _to_tiled_order(tiled, flags)


def unpack(src: np.ndarray, out: np.ndarray, flags: int) -> None:
    """src (S0, S1, S2, S3) the 4-D side; out (rows, cols)."""
    tiled = _to_tiled_order(src, flags)  # (A, B, a, b) in output order
    outer0, outer1, tile0, tile1 = tiled.shape
    full = tiled.transpose(0, 2, 1, 3).reshape(outer0 * tile0, outer1 * tile1)
    rows, cols = out.shape
    if rows > full.shape[0] or cols > full.shape[1]:
        raise Trap(STATUS_CODES["INVALID_ARGUMENT"], f"vmvx.unpack: output {out.shape} is larger than the "
                                                     f"{full.shape} tiled input")
    out[...] = full[:rows, :cols]
