"""A compile worker: `python -m jitvm.lower.compile_worker IR OBJ TRIPLE CPU FEATURES SPEED CODEGEN SLP`.

Reads LLVM IR text from the file IR, optimizes it and writes object code to OBJ. The JIT
runs one per function group when a module has several (lower.compiler.build_objects):
llvmlite serializes LLVM calls within a process, so parallel compilation needs processes.
A plain module run by path, so nothing of the parent's own script is imported.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    ir_path, obj_path, triple, cpu, features, speed, codegen, slp = argv
    from .compiler import build_object
    from .target import Target

    obj = build_object(Path(ir_path).read_text(), Target(triple, cpu, features), int(speed), int(codegen), slp == "1")
    Path(obj_path).write_bytes(obj)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
