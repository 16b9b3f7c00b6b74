"""A compile worker: `python -m jitvm.lower.llvm.compile_worker TRIPLE CPU FEATURES SPEED CODEGEN SLP [NICE]`.

Reads jobs from stdin, one per line, `IR<TAB>OBJ`: optimizes the LLVM IR text in file IR,
writes object code to OBJ and answers `ok` (or `fail`) on stdout. The JIT keeps one per
core while it compiles a module's function groups (lower.llvm.compile_pool): llvmlite
serializes LLVM calls within a process, so parallel compilation needs processes. A plain
module run by path, so nothing of the parent's own script is imported. NICE: how much
lower its priority is than the parent's (a background tier-up's workers yield to calls).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    triple, cpu, features, speed, codegen, slp = argv[:6]
    if len(argv) > 6 and int(argv[6]):
        import os
        try:
            os.nice(int(argv[6]))
        except OSError:
            pass
    from .compiler import build_object
    from ...runtime.native.target import Target

    target = Target(triple, cpu, features)
    for line in sys.stdin:
        ir_path, obj_path = line.rstrip("\n").split("\t")
        try:
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
