"""LLVM IR -> optimized machine code, and object code -> callable functions in this process.

Lowered modules go through LLVM's standard optimization pipeline (no fast-math anywhere:
the IR carries no such flags) and are emitted as object files, which the on-disk cache
stores; loading an object file into an MCJIT engine costs no compilation.
"""

from __future__ import annotations

import threading

import llvmlite.binding as llvm

from ..runtime import nativelib
from . import target as targets

_load_lock = threading.Lock()


def optimize(ir_text: str, target: targets.Target, speed: int = 2, codegen: int = 2,
             slp: bool = True) -> llvm.ModuleRef:
    tm = targets.machine(target, codegen)
    mod = llvm.parse_assembly(ir_text)
    mod.triple = target.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=speed)
    pto.slp_vectorization = slp and speed >= 2  # off by default in llvmlite; it packs the jammed copies
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(mod, pb)
    return mod


def emit_object(mod: llvm.ModuleRef, target: targets.Target, codegen: int = 2) -> bytes:
    return targets.machine(target, codegen).emit_object(mod)


def build_object(ir_text: str, target: targets.Target, speed: int, codegen: int, slp: bool) -> bytes:
    """Optimized object code for one function group (what a compile worker runs)."""
    return emit_object(optimize(ir_text, target, speed, codegen, slp), target, codegen)


# llvmlite runs every LLVM call under one process-wide lock, so threads cannot compile in
# parallel: with several function groups, each goes to a worker process of its own
# (lower/compile_worker.py, a fresh interpreter: nothing of this process's threads, locks
# or __main__ script is inherited).
def build_objects(texts: list[str], target: targets.Target, speed: int, codegen: int, slp: bool) -> list[bytes]:
    """Object code per group: in worker processes when there are several groups, else here.
    A group whose worker fails is compiled here."""
    if len(texts) <= 1:
        return [build_object(t, target, speed, codegen, slp) for t in texts]
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="jitvm-compile-") as tmp:
        procs = []
        for i, text in enumerate(texts):
            ir_path, obj_path = Path(tmp) / f"g{i}.ll", Path(tmp) / f"g{i}.o"
            ir_path.write_text(text)
            args = [sys.executable, "-m", "jitvm.lower.compile_worker", str(ir_path), str(obj_path), target.triple,
                    target.cpu, target.features, str(speed), str(codegen), "1" if slp else "0"]
            try:
                procs.append((subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                               cwd=str(Path(__file__).resolve().parents[2])), obj_path))
            except OSError:
                procs.append((None, obj_path))
        objects = []
        for text, (proc, obj_path) in zip(texts, procs):
            if proc is not None and proc.wait() == 0 and obj_path.is_file():
                objects.append(obj_path.read_bytes())
            else:
                objects.append(build_object(text, target, speed, codegen, slp))
        return objects


def emit_assembly(mod: llvm.ModuleRef, target: targets.Target, codegen: int = 2) -> str:
    return targets.machine(target, codegen).emit_assembly(mod)


def has_loops(verified) -> bool:
    """Whether any function branches backwards: where compile time pays for itself."""
    for vf in verified.functions:
        for block in vf.blocks:
            ins = vf.instructions[block.last]
            for f, value in zip(ins.op.fields, ins.args):
                if f.kind == "target" and vf.block_of_pc.get(value, 1 << 30) <= block.index:
                    return True
                if f.kind == "cases" and any(vf.block_of_pc.get(t, 1 << 30) <= block.index for t, _ in value):
                    return True
    return False


class LoadedCode:
    """Object code linked into this process; keeps its engine (and the code) alive."""

    def __init__(self, objects: list[bytes]):
        nativelib.load()  # runtime symbols must exist before linking
        from .workers import native

        native()  # jv_parallel_for
        with _load_lock:
            host = targets.host()
            empty = llvm.parse_assembly(f'target triple = "{host.triple}"\n')
            # The engine takes ownership of its TargetMachine and frees it when disposed, so
            # it gets a fresh one: handing it the shared cached machine left a dangling
            # pointer for the next compile once a module's code was garbage collected.
            engine = llvm.create_mcjit_compiler(empty, targets.machine.__wrapped__(host))
            for obj in objects:
                engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            engine.finalize_object()
        self.engine = engine

    def address(self, symbol: str) -> int:
        addr = self.engine.get_function_address(symbol)
        if not addr:
            raise KeyError(f"symbol {symbol} not found in compiled code")
        return addr
