"""The decoder and disassembler, proven against iree-dump-module on the whole corpus."""

from __future__ import annotations

import re
import subprocess

import pytest

from jitvm.frontend import isa
from jitvm.frontend.decode import decode_function
from jitvm.frontend.disasm import Names, instruction_lines
from jitvm.frontend.module import load_module
from jitvm.fuzz.corpus import require_tool
from tests.corpus import source_files

CORPUS_NAMES = [name for name, _, _ in source_files()]

# Trailing comments iree-dump-module adds after an instruction (constants, rodata sizes).
_COMMENT = re.compile(r"\s+//\s(0x[0-9A-F]+|\d+b|\((un)?resolved\))$")


def iree_function_bodies(path) -> list[tuple[list[str], bool]]:
    """Instruction lines of every function as iree-dump-module prints them, and whether
    it printed the whole function (it gives up on some EXT_F32/F64 opcodes it lacks, and it
    loses its place at vm.switch.ref, whose type operand it does not skip: the comparison
    stops before that line)."""
    out = subprocess.run([require_tool("iree-dump-module"), "--output=disassembly", str(path)],
                         capture_output=True, text=True).stdout
    bodies, current = [], None
    for line in out.splitlines():
        if line.startswith("vm.func "):
            current = []
        elif line == "}" and current is not None:
            bodies.append((current, True))
            current = None
        elif current is not None and line.strip():
            if "<<disassembly failed>>" in line or "unhandled" in line or "vm.switch.ref" in line:
                bodies.append((current, False))
                current = None
                continue
            current.append(_COMMENT.sub("", line.rstrip()))
    if current is not None:
        bodies.append((current, False))
    return bodies


def our_function_bodies(path) -> list[list[str]]:
    m = load_module(path)
    names = Names.of(m)
    bodies = []
    for i in range(len(m.functions)):
        ins = decode_function(m.function_bytes(i), f"{path}:{i}")
        bodies.append([_COMMENT.sub("", line) for line in instruction_lines(names, ins)])
    return bodies


def module_files(corpus_module):
    return [corpus_module.vmfb, *corpus_module.executables]


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_disassembly_matches_iree_dump_module(corpus_by_name, name):
    cm = corpus_by_name[name]
    for path in module_files(cm):
        theirs = iree_function_bodies(path)
        ours = our_function_bodies(path)
        stopped = any(not complete for _, complete in theirs)  # iree-dump-module gave up early
        assert len(ours) == len(theirs) or stopped and len(theirs) <= len(ours), f"{path}: function count"
        for ordinal, ((a, complete), b) in enumerate(zip(theirs, ours)):
            diff = [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y]
            assert not diff, f"{path} function {ordinal}: first differences (line, iree, jitvm): {diff[:5]}"
            if complete:
                assert len(a) == len(b), f"{path} function {ordinal}: {len(a)} lines vs {len(b)}"
            else:  # iree-dump-module stopped early; what it printed must be our prefix
                assert len(a) <= len(b)


def test_every_opcode_is_decoded_somewhere_in_the_corpus(corpus):
    seen = set()
    for cm in corpus:
        for path in module_files(cm):
            m = load_module(path)
            for i in range(len(m.functions)):
                seen.update(ins.op.name for ins in decode_function(m.function_bytes(i)))
    missing = sorted(op.name for op in isa.OPS.values() if op.name not in seen)
    assert not missing, f"opcodes never decoded in the corpus: {missing}"
