"""Sub-byte integer constants in IREE's packed layout, vectorised.

iree-compile serializes an iN constant (N < 8) into little-endian words of
`pow2ceil(ceil(2N / 8))` bytes, each holding `word_bits // N` elements, element 0 in the
lowest bits and any leftover high bits zero: i2..i4 pack into single bytes (i3 as two
elements and two padding bits), i5..i7 into 16-bit words (three i5, two i6 or i7).
[1, -2, 3, -4] at 4 bits is E1 C3. i1 is the one exception: iree-compile 3.13 writes i1
constants one byte per element; pack_bits(..., 1) packs them 8 per byte, the layout the
same rule gives, so pass bytes (bits=None) to reproduce iree-compile's i1 constants.

Packing works on chunks that stay in cache. Byte-sized words merge neighbouring fields with
shift/or/mask steps on words of `8 * per` bits (SWAR), so a 4-bit pack costs a few vector
passes per chunk, about the time of copying its input, and no Python per element.
"""

from __future__ import annotations

import numpy as np

from ..errors import Error

CHUNK_ELEMENTS = 1 << 18  # per vector pass: 256 KiB of int8 input, cache-resident


class PackError(Error):
    """Values that cannot be packed at the requested width, or a bad width or count."""


def word_layout(bits: int) -> tuple[int, int]:
    """(elements per word, bytes per word) of IREE's packing for `bits`-bit integers."""
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 1 <= bits <= 8:
        raise PackError(f"bit width must be an integer from 1 to 8, got {bits!r}")
    bits = int(bits)
    if bits == 8:
        return 1, 1  # whole bytes: nothing to pack
    word_bytes = 1
    while word_bytes * 8 < 2 * bits:
        word_bytes *= 2
    return (8 * word_bytes) // bits, word_bytes


def packed_size(count: int, bits: int) -> int:
    """Bytes needed for `count` elements of `bits` bits."""
    per, word_bytes = word_layout(bits)
    return -(-int(count) // per) * word_bytes


_WORD = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _repeat_mask(slot: int, width: int, word_bits: int) -> int:
    """A mask with the low `width` bits of every `slot`-bit slot of a word set."""
    one = (1 << width) - 1
    return sum(one << s for s in range(0, word_bits, slot))


def _plan(bits: int):
    if word_layout(bits)[1] != 1:
        return None
    """(word dtype, lane mask, steps) turning one word of `per` elements into its byte.

    Step k merges neighbouring slots: shift, the mask keeping the merged fields, and the mask
    keeping the unmerged fields (what unpacking restores when it runs the steps backwards).
    """
    per = 8 // bits
    word = _WORD[per]
    word_bits = 8 * per
    steps = []
    slot, width = 8, bits
    while slot < word_bits:
        steps.append((np.array(slot - width, word), np.array(_repeat_mask(2 * slot, 2 * width, word_bits), word),
                      np.array(_repeat_mask(slot, width, word_bits), word)))
        slot, width = 2 * slot, 2 * width
    return word, np.array(_repeat_mask(8, bits, word_bits), word), steps


_PLANS = {bits: _plan(bits) for bits in range(1, 9)}


def _as_int_array(values) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype == np.bool_:
        return a.view(np.uint8)  # same item size: a view even when strided
    if not np.issubdtype(a.dtype, np.integer):
        raise PackError(f"pack_bits packs integers; got an array of {a.dtype}")
    return a


def _check_range(chunk: np.ndarray, bits: int, start: int) -> None:
    """Each value must fit `bits` bits as a signed or an unsigned number."""
    if chunk.size == 0:
        return
    lo, hi = -(1 << (bits - 1)), (1 << bits) - 1
    cmin, cmax = chunk.min(), chunk.max()
    if cmin < lo or cmax > hi:
        bad = int(np.flatnonzero((chunk < lo) | (chunk > hi))[0])
        raise PackError(f"element {start + bad} = {int(chunk[bad])} does not fit in {bits} bits "
                        f"(allowed {lo}..{hi})")


def _to_bytes(chunk: np.ndarray) -> np.ndarray:
    """Low byte of each element as a uint8 array (two's complement truncation)."""
    if chunk.dtype.itemsize == 1:
        return chunk.view(np.uint8) if chunk.flags.c_contiguous else np.ascontiguousarray(chunk).view(np.uint8)
    return chunk.astype(np.uint8)


class _Packer:
    """Packs chunks of at most `step` elements, reusing its buffers (fresh ones would page-fault)."""

    def __init__(self, bits: int, step: int):
        self.bits = bits
        self.per, self.word_bytes = word_layout(bits)
        self.plan = _PLANS[bits]
        if self.word_bytes == 1 and bits != 8:
            word = self.plan[0]
            words = -(-step // self.per)
            self.w = np.empty(words, word)
            self.scratch = np.empty(words, word)

    def pack(self, chunk: np.ndarray, start: int, out: np.ndarray) -> np.ndarray:
        """Packs `chunk` into `out` (exactly packed_size(chunk.size) bytes); returns `out`."""
        bits, per = self.bits, self.per
        _check_range(chunk, bits, start)
        data = _to_bytes(chunk)
        if bits == 8:
            np.copyto(out, data)
            return out
        tail = data.size % per
        if tail:
            data = np.concatenate([data, np.zeros(per - tail, np.uint8)])
        if self.word_bytes == 1:
            word, lane_mask, steps = self.plan
            w, scratch = self.w[:data.size // per], self.scratch[:data.size // per]
            np.bitwise_and(data.view(word), lane_mask, out=w)
            for i, (shift, mask, _) in enumerate(steps):
                np.right_shift(w, shift, out=scratch)
                np.bitwise_or(w, scratch, out=w)
                if i + 1 < len(steps):
                    np.bitwise_and(w, mask, out=w)
            np.copyto(out, w, casting="unsafe")  # keeps each word's low byte
            return out
        groups = data.reshape(-1, per)
        mask = np.uint16((1 << bits) - 1)
        words = np.zeros(groups.shape[0], "<u2")
        for k in range(per):
            words |= (groups[:, k] & mask).astype("<u2") << np.uint16(k * bits)
        np.copyto(out, words.view(np.uint8))
        return out


def pack_chunk(chunk: np.ndarray, bits: int, start: int = 0) -> np.ndarray:
    """Packs one flat chunk of integers (any length) into a new array; `start` is for messages."""
    out = np.empty(packed_size(chunk.size, bits), np.uint8)
    return _Packer(bits, chunk.size).pack(chunk, start, out)


def _flat_pieces(a: np.ndarray, n: int):
    """`a` in C order as flat pieces of about `n` elements, without flattening `a` whole.

    A contiguous array is sliced as it is; a strided one (a broadcast, a transposed view)
    is copied one group of rows at a time, so even a view of billions of elements costs
    memory for one piece only.
    """
    if a.ndim <= 1 or a.flags.c_contiguous:
        flat = a.reshape(-1)
        for start in range(0, flat.size, n):
            yield flat[start:start + n]
        return
    row = int(np.prod(a.shape[1:]))
    if row >= n:
        for i in range(a.shape[0]):
            yield from _flat_pieces(a[i], n)
        return
    rows = max(1, n // max(row, 1))
    for i in range(0, a.shape[0], rows):
        yield a[i:i + rows].reshape(-1)


def _exact_chunks(pieces, step: int):
    """Regroups pieces into chunks of exactly `step` elements (the last may be shorter)."""
    pending: list[np.ndarray] = []
    have = 0
    for piece in pieces:
        while piece.size:
            take = min(step - have, piece.size)
            pending.append(piece[:take])
            have += take
            piece = piece[take:]
            if have == step:
                yield pending[0] if len(pending) == 1 else np.concatenate(pending)
                pending, have = [], 0
    if have:
        yield pending[0] if len(pending) == 1 else np.concatenate(pending)


def _chunks(values, bits: int, chunk_elements: int):
    a = _as_int_array(values)
    per, _ = word_layout(bits)
    step = max(per * 8, chunk_elements - chunk_elements % (per * 8))
    return a, step, _exact_chunks(_flat_pieces(a, step), step)


def iter_packed(values, bits: int, chunk_elements: int = CHUNK_ELEMENTS):
    """Yields the packed bytes of `values` (C order) chunk by chunk, for streaming to a file.

    Each yielded array is reused for the next chunk: consume it before asking for more.
    """
    a, step, chunks = _chunks(values, bits, chunk_elements)
    packer = _Packer(bits, step)
    buffer = np.empty(packed_size(step, bits), np.uint8)
    start = 0
    for chunk in chunks:
        yield packer.pack(chunk, start, buffer[:packed_size(chunk.size, bits)])
        start += chunk.size


def pack_bits(values, bits: int) -> np.ndarray:
    """Packs integers (any shape, flattened in C order) at `bits` bits each; returns uint8.

    Values may be signed or unsigned as long as they fit `bits` bits either way; others raise
    PackError naming the first offending element.
    """
    a, step, chunks = _chunks(values, bits, CHUNK_ELEMENTS)
    out = np.empty(packed_size(a.size, bits), np.uint8)
    packer = _Packer(bits, step)
    start = pos = 0
    for chunk in chunks:
        size = packed_size(chunk.size, bits)
        packer.pack(chunk, start, out[pos:pos + size])
        start += chunk.size
        pos += size
    return out


def _unpack_words(data: np.ndarray, bits: int, out: np.ndarray, scratch) -> None:
    """Expands whole words of `data` into `out` (len(data) // word_bytes * per elements)."""
    per, word_bytes = word_layout(bits)
    if bits == 8:
        np.copyto(out, data)
    elif word_bytes == 1:
        word, _, steps = _PLANS[bits]
        w, tmp = scratch[0][:data.size], scratch[1][:data.size]
        np.copyto(w, data)
        for shift, _, split_mask in reversed(steps):
            np.left_shift(w, shift, out=tmp)
            np.bitwise_or(w, tmp, out=w)
            np.bitwise_and(w, split_mask, out=w)
        np.copyto(out, w.view(np.uint8))
    else:
        words = data.view("<u2")
        mask = np.uint16((1 << bits) - 1)
        grid = out.reshape(-1, per)
        for k in range(per):
            np.copyto(grid[:, k], (words >> np.uint16(k * bits)) & mask, casting="unsafe")


def unpack_bits(packed, bits: int, count: int, signed: bool = False) -> np.ndarray:
    """The inverse of pack_bits: `count` elements as int8 (signed) or uint8 (unsigned)."""
    per, word_bytes = word_layout(bits)
    data = packed.reshape(-1).view(np.uint8) if isinstance(packed, np.ndarray) else np.frombuffer(packed, np.uint8)
    count = int(count)
    need = packed_size(max(count, 0), bits)
    if count < 0 or need > data.size:
        raise PackError(f"{count} elements of {bits} bits need {need} bytes; {data.size} given")
    words = need // word_bytes
    out = np.empty(words * per, np.uint8)
    step = max(1, CHUNK_ELEMENTS // per)  # words per chunk
    plan = _PLANS[bits]
    scratch = (np.empty(step, plan[0]), np.empty(step, plan[0])) if plan is not None else None
    for w0 in range(0, words, step):
        w1 = min(words, w0 + step)
        _unpack_words(data[w0 * word_bytes:w1 * word_bytes], bits, out[w0 * per:w1 * per], scratch)
    out = out[:count]
    if signed and bits < 8:
        shift = np.uint8(8 - bits)
        np.left_shift(out, shift, out=out)
        out = out.view(np.int8)
        np.right_shift(out, np.int8(8 - bits), out=out)
        return out
    return out.view(np.int8) if signed else out
