"""The loop optimisations lowering applies, in one record.

Each can be switched off, to measure what it gives (bench.lowering_steps, bench.step_ab) or
to bisect a miscompile: `JitBackend(loop_steps={"row_lanes": False})` reaches
`ModuleLowering(..., row_lanes=False)`. A new step is one field here.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class LoopSteps:
    """Which of the loop optimiser's steps run (each can be turned off to compare)."""

    version_loops: bool = True  # guarded copies of loop nests without per-access checks
    jam_loops: bool = True  # unroll-and-jam in those copies (lower.loops.jam)
    jam_outer: bool = True  # ... of the jammed loop's parent too: register blocking
    share_copies: bool = True  # jammed copies lower a value they share once (lower.loops.sharing)
    affine_indices: bool = True  # indices rebuilt from the affine form (guard.proven_index)
    derive_indices: bool = True  # ... a jammed copy's from another copy's (guard.proven_index)
    parallel_loops: bool = True  # outermost loops split across threads (lower.loops.parallel)
    chunk_loops: bool = True  # flat loops over delinearised indices run chunk by chunk (lower.loops.delinearise)
    vector_math: bool = False  # libm calls the vectoriser may replace (runtime.native.vecmath)
    wide_vectors: bool = False  # 512-bit vectors preferred, register blocking sized for them (lower.loops.jam)
    wide_math: bool = True  # with wide_vectors: vector math's AVX-512 forms too (16 lanes, tables read by permutes)
    scope_buffers: bool = True  # a fast copy not jammed has its buffers in alias scopes when apart (lower.loops.scopes)
    shared_blocking: bool = True  # register blocking only where it pays (lower.loops.versioning.blocking_pays)
    stage_loads: bool = True  # a plain jam's far-apart row loads read from a transposed copy (lower.loops.stage)
    pack_operands: bool = True  # a register-blocked nest's far-apart loads read from a transposed copy (lower.loops.pack)
    row_lanes: bool = True  # ... or, where rows fill whole vectors, the rows run in the lanes (lower.loops.jam.ROW_LANES)
    narrow_jam: bool = False  # jammed loops at most jam.NARROW_FACTOR wide: scalar code's (the jammed quick tier)
    defer_checked: bool = False  # a nest's checked copy compiled only if its guard fails (lower.loops.outline: quick tiers)

    @property
    def wide_forms(self) -> bool:
        """Whether vector math uses its 16-lane forms."""
        return self.wide_math and self.wide_vectors


LOOP_STEPS = tuple(f.name for f in fields(LoopSteps))
