"""Nothing in the lowering assumes x86_64: every corpus function compiles for aarch64 too."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from jitvm.frontend.module import load_module
from jitvm.lower import inspect
from jitvm.runtime.native import target
from jitvm.verify import verify_module

AARCH64 = [target.CROSS["aarch64"], target.CROSS["aarch64-neoverse-n1"]]


def corpus_files(corpus):
    for cm in corpus:
        yield cm.vmfb
        yield from cm.executables


@pytest.mark.parametrize("tgt", AARCH64, ids=lambda t: t.cpu)
def test_every_corpus_function_compiles_for_aarch64(corpus, tgt):
    count = 0
    for path in corpus_files(corpus):
        obj = inspect.object_code(verify_module(load_module(path)), tgt, speed=1, codegen=0)
        assert obj[:4] == b"\x7fELF" and obj[18] == 0xB7, f"{path}: not an AArch64 ELF object"  # EM_AARCH64
        count += 1
    assert count > 30


def test_dump_asm_for_a_cross_target(corpus_by_name):
    path = corpus_by_name["vmasm/int_arith"].vmfb
    out = subprocess.run([sys.executable, "-m", "jitvm", "dump", str(path), "--asm", "--target=aarch64"],
                         capture_output=True, text=True, check=True).stdout
    assert "ldr\tw" in out and "jv_dump_f0:" in out


def test_dump_llvm_for_one_function(corpus_by_name):
    path = corpus_by_name["vmasm/int_arith"].vmfb
    out = subprocess.run([sys.executable, "-m", "jitvm", "dump", str(path), "--llvm", "--function=arith_i32"],
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith("define i32 @jv_dump_f") and out.count("define ") == 1
    assert "add i32" in out
    # No fast-math flags on any floating-point instruction.
    assert not re.search(r"= f\w+ (fast|nnan|ninf|nsz|arcp|contract|afn|reassoc)\b", out)
