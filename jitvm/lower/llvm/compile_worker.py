"""A compile worker: `python -m jitvm.lower.llvm.compile_worker TRIPLE CPU FEATURES [NICE]`.

Reads jobs from stdin, one per line, `IR<TAB>OBJ<TAB>SPEED<TAB>CODEGEN<TAB>SLP`: optimizes
the LLVM IR text in file IR with those options (lower.llvm.compiler.build_object), writes
object code to OBJ and answers `ok` (or `fail`) on stdout. Options come with each job, so
one pool compiles a first call's baseline and full-tier units side by side. The JIT keeps one per
core while it compiles a module's function groups (lower.llvm.compile_pool): llvmlite
serializes LLVM calls within a process, so parallel compilation needs processes. A plain
module run by path, so nothing of the parent's own script is imported. NICE: how much
lower its priority is than the parent's (a background tier-up's workers yield to calls).

TRIPLE `host` makes the process's helper (compile_pool.Helper, runtime.native.offload): it
first prints this host's description as LLVM gives it (one JSON line) and compiles for it;
SPEED `runtime` compiles runtime IR at optimisation level CODEGEN as runtime.native.engine
does. Between jobs (nothing asked for IDLE_SECONDS) the helper hands LLVM's pages back
(runtime.native.memory), since it lives as long as its parent.
"""

from __future__ import annotations

import json
import select
import sys
from pathlib import Path

IDLE_SECONDS = 0.5  # a load's runtime compiles come closer together: they would fault LLVM's pages back each


def main(argv: list[str]) -> int:
    triple, cpu, features = argv[:3]
    if len(argv) > 3 and int(argv[3]):
        import os
        try:
            os.nice(int(argv[3]))
        except OSError:
            pass
    from .compiler import build_object
    from ...runtime.native import engine
    from ...runtime.native.target import Target, ask_llvm

    helper = triple == "host"
    if helper:
        d = ask_llvm()
        triple, cpu, features = d["triple"], d["cpu"], d["features"]
        sys.stdout.write(json.dumps(d) + "\n")
        sys.stdout.flush()
    target = Target(triple, cpu, features)
    while True:
        if helper and not select.select([sys.stdin], [], [], IDLE_SECONDS)[0]:
            from ...runtime.native import memory
            memory.release()
        line = sys.stdin.readline()
        if not line:
            break
        try:
            ir_path, obj_path, speed, codegen, slp = line.rstrip("\n").split("\t")
            text = Path(ir_path).read_text()
            obj = engine.compile_here(text, target, int(codegen)) if speed == "runtime" else \
                build_object(text, target, int(speed), int(codegen), slp == "1")
            Path(obj_path).write_bytes(obj)
            answer = "ok"
        except Exception:  # noqa: BLE001 - the parent compiles the group itself
            answer = "fail"
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
