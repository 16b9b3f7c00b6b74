"""Compile once: a second load of the same module, in a fresh process, does no LLVM work."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, sys
from jitvm.frontend.module import load_module
from jitvm.lower.backend import JitBackend, STATS
from jitvm.runtime.bytecode import LoadedModule
from jitvm.runtime.context import Context
from jitvm.verify import verify_module
inst = Context().add(LoadedModule(verify_module(load_module(sys.argv[1])), JitBackend()))
result = inst.lookup("arith_i32").call([40, 2])
print(json.dumps({"stats": dict(STATS), "result": result}))
"""


def run_probe(path, cache_dir):
    env = {**os.environ, "JITVM_CACHE_DIR": str(cache_dir)}
    out = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, env=env,
                         check=True).stdout
    return json.loads(out)


def test_second_load_in_a_fresh_process_compiles_nothing(corpus_by_name, tmp_path):
    path = corpus_by_name["vmasm/int_arith"].vmfb
    first = run_probe(path, tmp_path)
    second = run_probe(path, tmp_path)
    assert first["stats"].get("compiled_modules") == 1 and not first["stats"].get("cache_hits")
    assert second["stats"].get("cache_hits") == 1 and not second["stats"].get("compiled_modules")
    assert first["result"] == second["result"] == [42, 38, 80, 122]


def test_cache_clear_command(corpus_by_name, tmp_path):
    run_probe(corpus_by_name["vmasm/int_arith"].vmfb, tmp_path)
    env = {**os.environ, "JITVM_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "jitvm", "cache", "clear"], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert out.startswith("removed 1 cached modules")
    assert not any(tmp_path.glob("*/*"))
