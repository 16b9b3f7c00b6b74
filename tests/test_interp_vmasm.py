"""The reference interpreter on VM assembly: every CALL equals IREE's own runtime.

Each program's calls run in order in one jitvm instance and one IREE context, so module
state (globals) must evolve identically. Integers must be equal, floats identical bit for
bit (NaN payloads included: both sides convert f32 results to Python floats the same way),
traps must carry IREE's status code. Where IREE's C runtime crashes (SIGFPE on integer
division) jitvm must trap with INVALID_ARGUMENT.
"""

from __future__ import annotations

import pytest

from jitvm.fuzz.oracles.calls import instantiate
from jitvm.fuzz.oracles.iree import run_module
from tests.corpus import source_files
from tests.interp_support import compare_module, program, program_stems

VMASM = [name for name, kind, _ in source_files() if kind == "vmasm"]


@pytest.mark.parametrize("name", VMASM)
def test_corpus_calls_equal_iree(corpus_by_name, name):
    cm = corpus_by_name[name]
    _ctx, instance = instantiate(cm.vmfb)
    problems = compare_module(cm, instance, run_module(cm))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stem", program_stems())
def test_interpreter_programs_equal_iree(stem):
    cm = program(stem)
    _ctx, instance = instantiate(cm.vmfb)
    problems = compare_module(cm, instance, run_module(cm))
    assert not problems, "\n".join(problems)
    assert len(cm.calls) >= len(cm.exports)
