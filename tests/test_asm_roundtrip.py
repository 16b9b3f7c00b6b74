"""The assembler and writer against the corpus: dump -> asm -> dump is the identity.

Every corpus module (and every VMVX executable inside the MLIR ones) is dumped, assembled
back and dumped again; the two texts must be identical and the two modules must agree on
every table the runtime reads. The encoder must reproduce each function's bytes exactly, and
the VM-assembly sources of the corpus (written for iree-as-module) must assemble to the
module iree-as-module builds.
"""

from __future__ import annotations

import difflib

import pytest

from jitvm.frontend import load_module
from jitvm.frontend.asm import assemble
from jitvm.frontend.asm import assemble_builder
from jitvm.frontend.decode import decode_function
from jitvm.frontend.dump import dump_text
from jitvm.frontend.asm.encode import encode_function
from tests.corpus import source_files

CORPUS_NAMES = [name for name, _, _ in source_files()]
# Sources in iree-as-module's syntax (the .jvasm ones are assembled by jitvm itself).
VMASM_NAMES = [name for name, kind, path in source_files() if kind == "vmasm" and path.suffix == ".vmasm"]


def module_files(cm):
    return [cm.vmfb, *cm.executables]


def text_of(source) -> str:
    return dump_text(load_module(source), summary=False)


def first_difference(a: str, b: str) -> str:
    diff = difflib.unified_diff(a.splitlines(), b.splitlines(), "original", "reassembled", lineterm="", n=1)
    return "\n".join(list(diff)[:30])


def tables(m) -> dict:
    """Everything a runtime reads from a module, minus file layout (offsets) and debug locations."""
    return {
        "name": m.name, "version": m.version, "requirements": m.requirements, "attrs": m.attrs,
        "types": m.types, "dependencies": m.dependencies,
        "imports": [(i.name, i.signature.cconv.text, i.signature.attrs, i.optional) for i in m.imports],
        "exports": [(e.name, e.internal_ordinal) for e in m.exports],
        "signatures": [(s.cconv.text, s.attrs) for s in m.signatures],
        "rodata": [bytes(r.data) for r in m.rodata],
        "state": (m.global_bytes, m.global_refs),
        "functions": [(f.requirements, f.block_count, f.i32_register_count, f.ref_register_count,
                       bytes(m.function_bytes(f.ordinal))) for f in m.functions],
        "function_names": [m.function_name(i) for i in range(len(m.functions))],
        "bytecode_version": m.bytecode_version,
    }


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_dump_asm_dump_is_identical(corpus_by_name, name):
    for path in module_files(corpus_by_name[name]):
        original = text_of(path)
        rebuilt = assemble(original, str(path))
        again = text_of(rebuilt)
        assert again == original, f"{path}:\n{first_difference(original, again)}"
        a, b = tables(load_module(path)), tables(load_module(rebuilt))
        assert a == b, f"{path}: tables differ in {[k for k in a if a[k] != b[k]]}"


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_encoder_inverts_the_decoder(corpus_by_name, name):
    for path in module_files(corpus_by_name[name]):
        m = load_module(path)
        for i in range(len(m.functions)):
            code = bytes(m.function_bytes(i))
            assert encode_function(decode_function(code)) == code, f"{path} function {i}"


@pytest.mark.parametrize("name", VMASM_NAMES)
def test_corpus_sources_assemble_like_iree_as_module(corpus_by_name, name):
    """The corpus sources use iree-as-module's input syntax; jitvm reads it to the same module.

    iree-as-module records no function names, so the comparison drops jitvm's.
    """
    cm = corpus_by_name[name]
    builder = assemble_builder(cm.source.read_text(), str(cm.source))
    builder.debug_names = []
    ours, theirs = text_of(builder.to_bytes()), text_of(cm.vmfb)
    assert ours == theirs, first_difference(theirs, ours)
