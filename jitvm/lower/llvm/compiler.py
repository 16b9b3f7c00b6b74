"""LLVM IR -> optimized machine code (what compile workers run; lower.llvm.loader links it).

Lowered modules go through LLVM's standard optimization pipeline (no fast-math anywhere:
the IR carries no such flags) and are emitted as object files, which the on-disk cache
stores; loading an object file into an MCJIT engine costs no compilation. The baseline tier
(speed BASELINE) runs only the few passes that turn the lowering's stack slots into
registers and fold the obvious (a ResNet's 36 kernels: about a tenth of the full pipeline's
time, code about 13x slower), with fast instruction selection. The middle tier (speed
MIDDLE), for kernels too heavy to start on baseline code, runs LLVM's O1 pipeline with the
SLP vectoriser on the full tier's lowering: the jammed copies still become vectors.
"""

from __future__ import annotations

from typing import Callable, Iterable

from ...runtime.native import target as targets
from ...runtime.native.target import llvm  # llvmlite's bindings, imported when first used

BACKGROUND_NICE = 10  # how much lower background compiles (in_workers: a tier-up) run than calls
BASELINE = -1  # the `speed` of the baseline tier: BASELINE_PASSES instead of LLVM's O1/O2/O3
MIDDLE = -2  # the `speed` of the middle tier: LLVM's O1 pipeline, with the SLP vectoriser
BASELINE_PASSES = ("always_inliner", "sroa", "instruction_combine", "simplify_cfg")


def optimize(ir_text: str, target: targets.Target, speed: int = 2, codegen: int = 2,
             slp: bool = True, context=None) -> llvm.ModuleRef:
    """The optimized module, parsed into `context` (default: LLVM's global context)."""
    tm = targets.machine(target, codegen)
    mod = llvm.parse_assembly(ir_text, context)
    try:
        mod.triple = target.triple
        mod.data_layout = str(tm.target_data)
        mod.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=1 if speed == MIDDLE else max(0, speed))
        # off by default in llvmlite; it packs the jammed copies
        pto.slp_vectorization = slp and (speed >= 2 or speed == MIDDLE)
        pb = llvm.create_pass_builder(tm, pto)
        if speed == BASELINE:
            pm = llvm.create_new_module_pass_manager()
            for name in BASELINE_PASSES:
                getattr(pm, f"add_{name}_pass")()
        else:
            pm = pb.getModulePassManager()
        pm.run(mod, pb)
    except BaseException:
        mod.close()  # before its context goes
        raise
    return mod


def emit_object(mod: llvm.ModuleRef, target: targets.Target, codegen: int = 2) -> bytes:
    return targets.machine(target, codegen).emit_object(mod)


def build_object(ir_text: str, target: targets.Target, speed: int, codegen: int, slp: bool) -> bytes:
    """Optimized object code for one function group (what a compile worker runs).

    Each build has an LLVM context of its own, freed with its module: constants, types and
    metadata otherwise pile up in the global context for the life of the process, and after
    some 700 fuzz programs' modules in one process an optimization pass tripped an LLVM
    assertion (Value::doRAUW)."""
    context = llvm.create_context()
    mod = None
    try:
        mod = optimize(ir_text, target, speed, codegen, slp, context)
        return emit_object(mod, target, codegen)
    finally:
        if mod is not None:
            mod.close()
        context.close()


def build_objects(texts: Iterable[str], count: int, target: targets.Target, speed: int, codegen: int,
                  slp: bool, in_workers: bool = False) -> list[bytes]:
    """Object code for each of `count` function groups, whose IR `texts` yields as they are
    lowered, all with one set of options (build_jobs)."""
    return build_jobs(((text, (speed, codegen, slp)) for text in texts), count, target, in_workers)


def build_jobs(jobs: Iterable[tuple[str, tuple]], count: int, target: targets.Target,
               in_workers: bool = False, arrived: Callable[[int, bytes], None] | None = None) -> list[bytes]:
    """Object code for each of `count` (IR text, (speed, codegen, slp)) jobs, which `jobs`
    yields as they are lowered: with several (or `in_workers`: background work that must
    not hold this process's LLVM), on a pool of worker processes (lower.llvm.compile_pool:
    llvmlite serializes LLVM calls within a process), handed out in the order given (the
    longest first packs the cores best), any job no worker compiled here. `arrived(i, obj)`,
    if given, hears of each job's object as soon as it is there (in this thread), so a
    caller can use the first while later ones compile."""
    from .compile_pool import helper, processes, take

    tell = arrived or (lambda _i, _obj: None)
    if count <= 1 and not in_workers:  # on the process's helper worker if it has one (compile_pool.Helper)
        alone = helper(target)
        objects = []
        for i, (text, options) in enumerate(jobs):
            objects.append((alone.compile(text, options) if alone else None) or build_object(text, target, *options))
            tell(i, objects[-1])
        return objects
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="jitvm-compile-") as tmp:
        pool = take(max(1, min(processes(), count)), Path(tmp), target, BACKGROUND_NICE if in_workers else 0)
        options_of, pending, results = {}, {}, {}

        def collect():  # objects the workers finished; a failed job (None) is compiled here at the end
            for i in pool.arrived():
                if pool.results[i] is not None:
                    results[i] = pool.results[i]
                    tell(i, results[i])

        try:
            for i, (text, options) in enumerate(jobs):
                options_of[i] = options
                if pool.workers:
                    pool.submit(i, text, options)
                    collect()
                else:
                    pending[i] = text
            while pool.busy():
                pool.poll(None)
                collect()
            pool.finish()
        finally:
            pool.close()
        objects = []
        for i in range(count):
            obj = results.get(i)
            if obj is None:
                text = pending.pop(i, None)
                obj = build_object(text if text is not None else (Path(tmp) / f"g{i}.ll").read_text(),
                                   target, *options_of[i])
                tell(i, obj)
            objects.append(obj)
        return objects


def emit_assembly(mod: llvm.ModuleRef, target: targets.Target, codegen: int = 2) -> str:
    return targets.machine(target, codegen).emit_assembly(mod)


def has_loops(verified) -> bool:
    """Whether any function branches backwards: where compile time pays for itself."""
    return any(has_loops_in(vf) for vf in verified.functions)


def has_loops_in(vf) -> bool:
    """Whether the function branches backwards."""
    for block in vf.blocks:
        ins = vf.instructions[block.last]
        for f, value in zip(ins.op.fields, ins.args):
            if f.kind == "target" and vf.block_of_pc.get(value, 1 << 30) <= block.index:
                return True
            if f.kind == "cases" and any(vf.block_of_pc.get(t, 1 << 30) <= block.index for t, _ in value):
                return True
    return False
