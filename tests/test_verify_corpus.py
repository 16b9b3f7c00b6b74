"""Every real module verifies, and what the verifier proves is what the backends are promised."""

from __future__ import annotations

import subprocess
import sys
from functools import lru_cache

import pytest

from jitvm.frontend import isa
from jitvm.frontend.module import load_module
from jitvm.verify import VerifiedFunction, VerifiedModule, verify_module
from jitvm.verify.embedded import embedded_modules
from jitvm.verify.report import verdicts
from tests.corpus import build_corpus, source_files

CORPUS_NAMES = [name for name, _, _ in source_files()]


@lru_cache(maxsize=1)
def corpus_by_name():
    return {cm.name: cm for cm in build_corpus()}


def module_files(name):
    cm = corpus_by_name()[name]
    return [cm.vmfb, *cm.executables]


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_corpus_module_and_executables_verify(name):
    for path in module_files(name):
        verified = verify_module(load_module(path))
        assert isinstance(verified, VerifiedModule)
        assert len(verified.functions) == len(verified.module.functions)
        for f in verified.functions:
            check_proven_facts(f)


def check_proven_facts(f: VerifiedFunction) -> None:
    """The shape promised to the backends, restated independently of the verifier's code."""
    ins = f.instructions
    assert f.blocks and len(f.blocks) == f.descriptor.block_count
    covered = 0
    for b in f.blocks:
        assert b.first == covered, "blocks are contiguous and cover every instruction"
        assert ins[b.first].op.name == "block" and ins[b.first].pc == b.pc
        assert ins[b.last].op.terminator
        assert not any(x.op.terminator or x.op.name == "block" for x in ins[b.first + 1:b.last])
        assert f.block_of_pc[b.pc] == b.index
        covered = b.last + 1
    assert covered == len(ins)
    assert sum(x.size for x in ins) == f.descriptor.bytecode_length
    calls = {i for i, x in enumerate(ins) if x.op.call is not None}
    assert set(f.calls) == calls
    for i, site in f.calls.items():
        operands = ins[i]["operands"]
        assert len(site.arg_codes) == len(operands) and len(site.result_codes) == len(ins[i]["results"])
        for code, reg in zip(site.arg_codes, operands):
            assert reg.is_ref == (code == "r")
    for x in ins:
        for field, value in zip(x.op.fields, x.args):
            if field.kind == isa.REG:
                limit = f.ref_registers if field.bank == "ref" else f.i32_registers
                width = 2 if field.bank in ("i64", "f64") else 1
                assert value.index + width <= limit and value.is_ref == (field.bank == "ref")
            elif field.kind == isa.TARGET:
                assert value in f.block_of_pc


def test_verified_objects_cannot_be_forged():
    m = load_module(module_files("vmasm/int_arith")[0])
    with pytest.raises(TypeError, match="jitvm.verify only"):
        VerifiedModule(module=m, types=(), features=0)


def test_mlir_modules_carry_their_executables_in_rodata():
    """The executables iree-compile dumped are exactly the modules `embedded_modules` finds."""
    for name in CORPUS_NAMES:
        cm = corpus_by_name()[name]
        found = [bytes(data) for _, data in embedded_modules(load_module(cm.vmfb))]
        assert sorted(found) == sorted(p.read_bytes() for p in cm.executables), name


def test_verdicts_cover_module_and_embedded_executables():
    cm = corpus_by_name()["mlir/matmul"]
    got = list(verdicts(cm.vmfb, "matmul.vmfb"))
    assert got[0] == ("matmul.vmfb", None)
    assert len(got) == 1 + len(cm.executables)
    assert all(label.startswith("matmul.vmfb[rodata ") and error is None for label, error in got[1:])


def test_cli_verify_reports_ok_per_module_and_exit_code(tmp_path):
    cm = corpus_by_name()["mlir/matmul"]
    bad = tmp_path / "bad.vmfb"
    bad.write_bytes(b"not a module at all, just some text")
    r = subprocess.run([sys.executable, "-m", "jitvm", "verify", str(cm.vmfb)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"{cm.vmfb}: ok"
    assert any(line.startswith(f"{cm.vmfb}[rodata ") and line.endswith(": ok") for line in lines[1:])
    r = subprocess.run([sys.executable, "-m", "jitvm", "verify", str(bad), str(cm.vmfb)],
                       capture_output=True, text=True)
    assert r.returncode == 1
    first = r.stdout.splitlines()[0]
    assert first.startswith(f"{bad}: error: ") and "not a .vmfb" in first
    assert f"{cm.vmfb}: ok" in r.stdout.splitlines()
