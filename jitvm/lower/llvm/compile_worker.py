"""A compile worker: `python -m jitvm.lower.llvm.compile_worker TRIPLE CPU FEATURES [NICE]`.

Reads jobs from stdin, one per line, `IR<TAB>OBJ<TAB>SPEED<TAB>CODEGEN<TAB>SLP`: optimizes
the LLVM IR text in file IR with those options (lower.llvm.compiler.build_object), writes
object code to OBJ and answers `ok` (or `fail`) on stdout. Options come with each job, so
one pool compiles a first call's baseline and full-tier units side by side. The JIT keeps one per
core while it compiles a module's function groups (lower.llvm.compile_pool): llvmlite
serializes LLVM calls within a process, so parallel compilation needs processes. A plain
module run by path, so nothing of the parent's own script is imported. NICE: how much
lower its priority is than the parent's (a background tier-up's workers yield to calls).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    triple, cpu, features = argv[:3]
    if len(argv) > 3 and int(argv[3]):
        import os
        try:
            os.nice(int(argv[3]))
        except OSError:
            pass
    from .compiler import build_object
    from ...runtime.native.target import Target

    target = Target(triple, cpu, features)
    for line in sys.stdin:
        try:
            ir_path, obj_path, speed, codegen, slp = line.rstrip("\n").split("\t")
            obj = build_object(Path(ir_path).read_text(), target, int(speed), int(codegen), slp == "1")
            Path(obj_path).write_bytes(obj)
            answer = "ok"
        except Exception:  # noqa: BLE001 - the parent compiles the group itself
            answer = "fail"
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
