"""Sub-byte constants: jitvm's packing equals iree-compile's, and unpacking inverts it."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jitvm.errors import Error
from jitvm.frontend import load_module, pack_bits, unpack_bits
from jitvm.frontend.bitpack import CHUNK_ELEMENTS, PackError, packed_size, word_layout
from jitvm.fuzz.corpus import VMVX_FLAGS, require_tool


def reference_pack(values, bits: int) -> bytes:
    """The layout rule written out one element at a time (IREE's word packing)."""
    per, word_bytes = word_layout(bits)
    out = bytearray(packed_size(len(values), bits))
    for i, v in enumerate(values):
        field = (int(v) & ((1 << bits) - 1)) << ((i % per) * bits)
        for j in range(word_bytes):
            out[(i // per) * word_bytes + j] |= (field >> (8 * j)) & 0xFF
    return bytes(out)


def value_range(bits: int, signed: bool) -> tuple[int, int]:
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def test_the_documented_example():
    assert pack_bits([1, -2, 3, -4], 4).tobytes() == bytes([0xE1, 0xC3])


@st.composite
def packable(draw):
    bits = draw(st.integers(1, 8))
    signed = draw(st.booleans())
    lo, hi = value_range(bits, signed)
    values = draw(st.lists(st.integers(lo, hi), max_size=200))
    dtype = draw(st.sampled_from([np.int8, np.int16, np.int32, np.int64] if signed
                                 else [np.uint8, np.int16, np.uint32, np.int64]))
    return bits, signed, np.array(values, dtype=dtype)


@settings(max_examples=400, deadline=None)
@given(packable())
def test_unpack_inverts_pack_for_every_width_and_signedness(case):
    bits, signed, values = case
    packed = pack_bits(values, bits)
    assert packed.dtype == np.uint8 and packed.size == packed_size(values.size, bits)
    assert packed.tobytes() == reference_pack(values.tolist(), bits)
    back = unpack_bits(packed, bits, values.size, signed)
    assert back.dtype == (np.int8 if signed else np.uint8)
    assert back.astype(np.int64).tolist() == values.astype(np.int64).tolist()


@pytest.mark.parametrize("bits", range(1, 9))
def test_chunked_packing_matches_across_chunk_boundaries(bits):
    n = 2 * CHUNK_ELEMENTS + 37
    lo, hi = value_range(bits, True)
    values = (np.arange(n, dtype=np.int64) * 7919 % (hi - lo + 1) + lo).astype(np.int8)
    packed = pack_bits(values, bits)
    assert packed.size == packed_size(n, bits)
    assert np.array_equal(unpack_bits(packed, bits, n, True), values)
    # Spot-check the reference around each chunk boundary (the full reference is slow).
    per, word_bytes = word_layout(bits)
    for start in (0, CHUNK_ELEMENTS - 2 * per, 2 * CHUNK_ELEMENTS - 2 * per, n - 3 * per):
        start -= start % per
        piece = values[start:start + 4 * per].tolist()
        at = start // per * word_bytes
        want = reference_pack(piece, bits)
        assert packed[at:at + len(want)].tobytes() == want, start


def test_values_that_do_not_fit_are_refused_by_position():
    with pytest.raises(PackError, match=r"element 2 = 9 does not fit in 3 bits \(allowed -4\.\.7\)"):
        pack_bits([1, 2, 9, 3], 3)
    with pytest.raises(PackError, match="element 1 = -9"):
        pack_bits(np.array([0, -9], np.int16), 4)
    with pytest.raises(PackError, match="integers"):
        pack_bits(np.array([0.5]), 4)
    with pytest.raises(PackError, match="from 1 to 8"):
        pack_bits([1], 9)
    with pytest.raises(PackError, match="need 2 bytes; 1 given"):
        unpack_bits(b"\x00", 4, 3, False)
    assert issubclass(PackError, Error)


# --- against iree-compile -----------------------------------------------------------------

I4_VALUES = [(i * 5 + 3) % 16 - 8 for i in range(37)]  # every nibble, odd count


def compile_mlir(tmp_path, text: str, flags) -> "object":
    src = tmp_path / "program.mlir"
    src.write_text(text)
    out = tmp_path / "program.vmfb"
    subprocess.run([require_tool("iree-compile"), *flags, str(src), "-o", str(out)], check=True,
                   capture_output=True, text=True)
    return out


def test_i4_arith_constant_is_laid_out_as_iree_compile_does(tmp_path):
    """An i4 `arith.constant` compiled by iree-compile holds exactly pack_bits' bytes."""
    n = len(I4_VALUES)
    nbytes = packed_size(n + 1, 4)  # bitcast to bytes needs an even count: pad one element
    values = I4_VALUES + [0]
    program = f"""
func.func @weights() -> tensor<{nbytes}xi8> {{
  %c = arith.constant dense<{values}> : tensor<{n + 1}xi4>
  %b = flow.tensor.bitcast %c : tensor<{n + 1}xi4> -> tensor<{nbytes}xi8>
  return %b : tensor<{nbytes}xi8>
}}
"""
    path = compile_mlir(tmp_path, program, VMVX_FLAGS)
    expected = pack_bits(values, 4).tobytes()
    segments = [bytes(r.data) for r in load_module(path).rodata]
    assert any(s[:len(expected)] == expected for s in segments), (
        f"no rodata segment starts with {expected.hex()}: {[s[:24].hex() for s in segments]}")
    import iree.runtime as rt
    module = rt.load_vm_flatbuffer_file(str(path), driver="local-sync")
    assert np.asarray(module.weights().to_host()).astype(np.uint8).tobytes() == expected


def test_every_sub_byte_width_matches_iree_compile(tmp_path):
    """vm.rodata of i2..i7 constants as iree-compile serializes them (i1 is stored unpacked)."""
    widths = range(2, 8)
    data = {b: [((i * 3) % (1 << b)) - (1 << (b - 1)) for i in range(23)] for b in widths}
    rodata = "\n".join(f"  vm.rodata private @w{b} dense<{data[b]}> : tensor<23xi{b}>" for b in widths)
    uses = "\n".join(f"    %r{b} = vm.const.ref.rodata @w{b} : !vm.buffer" for b in widths)
    program = f"""
vm.module @widths {{
{rodata}
  vm.func @touch() {{
{uses}
    vm.return
  }}
  vm.export @touch
}}
"""
    path = compile_mlir(tmp_path, program, ["--compile-from=vm"])
    segments = [bytes(r.data) for r in load_module(path).rodata]
    assert segments == [pack_bits(data[b], b).tobytes() for b in widths]
