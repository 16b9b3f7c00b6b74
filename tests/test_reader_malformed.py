"""Bad bytes give jitvm.FormatError naming the problem, never another exception."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitvm
from jitvm.frontend import schema
from jitvm.frontend.archive import open_archive
from jitvm.frontend.decode import decode_function
from jitvm.frontend.flatbuf import FlatBuffer
from jitvm.frontend.module import load_module


@pytest.fixture(scope="module")
def small_module(corpus_by_name) -> bytes:
    return corpus_by_name["mlir/matmul"].vmfb.read_bytes()


def read_everything(data) -> None:
    """Opens a module and decodes every function: what `jitvm dump` does."""
    m = load_module(data)
    for seg in m.rodata:
        len(seg.data)
    for i in range(len(m.functions)):
        if m.functions[i].bytecode_offset < 0:
            continue
        decode_function(m.function_bytes(i))


def only_format_errors(data) -> None:
    try:
        read_everything(data)
    except jitvm.FormatError:
        pass


def field_position(data: bytes, name: str) -> int:
    """File offset of a BytecodeModuleDef scalar field, found with the reader itself."""
    archive = open_archive(data)
    root = FlatBuffer(archive.flatbuffer).root()
    pos = root.field(schema.BYTECODE_MODULE.slot(name))
    assert pos, f"{name} not present"
    return archive.flatbuffer_offset + pos


def test_every_truncation_is_a_format_error_or_still_valid(small_module):
    # Truncations inside the ZIP trailer leave a readable module; all others must be refused.
    for length in range(0, len(small_module), 7):
        only_format_errors(small_module[:length])
    with pytest.raises(jitvm.FormatError, match="too short|exceeds"):
        load_module(small_module[:100])


def test_empty_and_tiny_inputs():
    with pytest.raises(jitvm.FormatError, match="too short"):
        load_module(b"")
    with pytest.raises(jitvm.FormatError, match="too short"):
        load_module(b"PK\x03\x04")


def test_wrong_identifier(small_module):
    data = bytearray(small_module)
    at = bytes(data).index(b"IREE")
    data[at:at + 4] = b"NOPE"
    with pytest.raises(jitvm.FormatError, match=r"identifier is b'NOPE', expected b'IREE'"):
        load_module(bytes(data))


@pytest.mark.parametrize("major,minor", [(16, 0), (18, 0), (17, 1)])
def test_unsupported_bytecode_version_names_both(small_module, major, minor):
    data = bytearray(small_module)
    at = field_position(small_module, "bytecode_version")
    struct.pack_into("<I", data, at, (major << 16) | minor)
    with pytest.raises(jitvm.FormatError, match=rf"version {major}\.{minor} is not supported.*reads 17\.0"):
        load_module(bytes(data))


def test_root_offset_outside_the_file(small_module):
    data = bytearray(small_module)
    archive = open_archive(small_module)
    struct.pack_into("<I", data, archive.flatbuffer_offset, 0x7FFFFFF0)
    with pytest.raises(jitvm.FormatError, match="root table offset points past the end"):
        load_module(bytes(data))


def test_length_prefix_larger_than_the_file(small_module):
    data = bytearray(small_module)
    archive = open_archive(small_module)
    struct.pack_into("<I", data, archive.flatbuffer_offset - 4, len(data) * 2)
    with pytest.raises(jitvm.FormatError, match="length prefix .* exceeds"):
        load_module(bytes(data))


def test_huge_vector_length_is_refused_without_allocating(small_module):
    archive = open_archive(small_module)
    root = FlatBuffer(archive.flatbuffer).root()
    slot_pos = root.field(schema.BYTECODE_MODULE.slot("bytecode_data"))
    vector = slot_pos + struct.unpack_from("<I", archive.flatbuffer, slot_pos)[0]
    data = bytearray(small_module)
    struct.pack_into("<I", data, archive.flatbuffer_offset + vector, 0xFFFFFFF0)
    with pytest.raises(jitvm.FormatError, match=r"vector .*bytecode_data .* runs outside"):
        load_module(bytes(data))


def test_external_rodata_outside_the_file(corpus_by_name):
    data = corpus_by_name["mlir/matmul"].vmfb.read_bytes()
    m = load_module(data)
    external = [r for r in m.rodata if r.external]
    assert external, "the matmul module stores its executable as external rodata"
    cut = external[0].offset + external[0].length - 1
    with pytest.raises(jitvm.FormatError, match=r"rodata\[\d+\] external data .* outside"):
        load_module(data[:cut])


def test_missing_file_is_a_format_error(tmp_path):
    with pytest.raises(jitvm.FormatError, match="cannot open"):
        load_module(tmp_path / "nope.vmfb")
    (tmp_path / "empty.vmfb").write_bytes(b"")
    with pytest.raises(jitvm.FormatError, match="empty"):
        load_module(tmp_path / "empty.vmfb")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=512))
def test_random_bytes(data):
    only_format_errors(data)
    only_format_errors(b"PK\x03\x04" + data)
    only_format_errors(struct.pack("<I", len(data)) + b"\0\0\0\0IREE" + data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_mutations_and_truncations_of_a_real_module(small_module, data):
    buf = bytearray(small_module)
    archive = open_archive(small_module)
    fb_start, fb_end = archive.flatbuffer_offset, archive.flatbuffer_offset + len(archive.flatbuffer)
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(fb_start, fb_end - 1))
        buf[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.one_of(st.just(len(buf)), st.integers(0, len(buf))))
    only_format_errors(bytes(buf[:cut]))


def test_decoded_instructions_are_what_their_constructor_makes(small_module):
    """Decoding builds instructions without the frozen dataclass's __init__ and shares
    registers: what it makes must still be equal, immutable and hash alike."""
    import dataclasses

    from jitvm.frontend.decode import Instruction, Reg, make_reg

    m = load_module(small_module)
    for i in range(len(m.functions)):
        for ins in decode_function(m.function_bytes(i)):
            made = Instruction(ins.pc, ins.size, ins.op, ins.args)
            assert ins == made and hash(ins) == hash(made) and repr(ins) == repr(made)
            with pytest.raises(dataclasses.FrozenInstanceError):
                ins.pc = 0
    assert make_reg("ref", 0xC005) == Reg("ref", 5, True, 0xC005) and make_reg("f32", 7) is make_reg("f32", 7)


def test_a_module_name_holding_a_nul_runs_in_the_interpreter(tmp_path):
    """The name is the module's to choose; the interpreter's generated code must not pass it
    to compile() raw (a mutant found it raising a bare ValueError)."""
    import jitvm
    from jitvm.frontend.asm import assemble

    data = bytearray(assemble("vm.module @abcd version 0\nvm.export @f\nvm.func @f(%i0: i32) -> (i32) {\n"
                              "  vm.return %i0\n}\n"))
    at = data.find(b"\x04\x00\x00\x00abcd")
    data[at + 5] = 0
    path = tmp_path / "nul.vmfb"
    path.write_bytes(bytes(data))
    assert jitvm.load(str(path), backend="interp").f(3) == 3
