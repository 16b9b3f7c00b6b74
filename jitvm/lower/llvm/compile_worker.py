"""A compile worker: `python -m jitvm.lower.llvm.compile_worker TRIPLE CPU FEATURES SPEED CODEGEN SLP`.

Reads jobs from stdin, one per line, `IR<TAB>OBJ`: optimizes the LLVM IR text in file IR,
writes object code to OBJ and answers `ok` (or `fail`) on stdout. The JIT keeps one per
core while it compiles a module's function groups (lower.llvm.compile_pool): llvmlite
serializes LLVM calls within a process, so parallel compilation needs processes. A plain
module run by path, so nothing of the parent's own script is imported.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    triple, cpu, features, speed, codegen, slp = argv
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
