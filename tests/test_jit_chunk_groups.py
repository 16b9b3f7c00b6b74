"""A delinearised chunk jammed in groups of 64, then 32, then 16 (lower.loops.delinearise).

Chunks are a tile's rows: 64 columns, or what is left of a row (48 of 112). A contiguous
chunk (every access one element further per iteration) runs 64 copies at once, and the rest
of the row in groups of 32 and 16 before the plain loop takes the last columns
(JamPlan.then); a chunk over channels (strided) keeps groups of 16. Rows of every length
around those group sizes under the JIT and the interpreter: bit-identical results, also when
neighbouring rows' elements meet (the jam keeps its copies' elements apart).
"""

from __future__ import annotations

import numpy as np
import pytest

from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend.asm import assemble
from jitvm.frontend.module import load_module
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.backend import JitBackend
from jitvm.lower.loops import delinearise, jam
from jitvm.lower.loops.delinearise import ChunkPlan
from jitvm.lower.loops.versioning import NestVersioning
from jitvm.runtime.vm.objects import VmBuffer
from jitvm.verify import verify_module
from tests.test_jit_channel_chunks import _source as _channel_source
from tests.test_jit_delinearise import _accumulate


def _chunk_plan(source: str):
    vf = verify_module(load_module(assemble(source, "<chunks>"))).functions[0]
    (chunked,) = [n for n in NestVersioning().nests(vf).values() if isinstance(n, ChunkPlan)]
    return jam.plan(vf, chunked.chunk)


def test_a_contiguous_chunk_runs_in_groups_of_64_32_16():
    plan = _chunk_plan(_accumulate(1000))
    assert (plan.factor, plan.then) == (delinearise.CHUNK_JAM_CONTIGUOUS, delinearise.CHUNK_JAM_THEN) == (64, (32, 16))


def test_a_chunk_over_channels_keeps_groups_of_16():
    plan = _chunk_plan(_channel_source(5))
    assert (plan.factor, plan.then) == (delinearise.CHUNK_JAM, ()) == (16, ())


@pytest.fixture(scope="module")
def backends():
    return {"jit": JitBackend(use_cache=False, progress=False, threads=1), "interp": InterpreterBackend()}


@pytest.mark.parametrize("width", [15, 16, 31, 47, 48, 63, 64, 65, 111, 112, 127])
@pytest.mark.parametrize("stride", [1000, 40])
def test_row_groups_agree_with_the_interpreter(backends, width, stride):
    """@acc over 3 rows of `width` columns and 2 channels; stride 40 < width: rows' elements meet."""
    vmfb = assemble(_accumulate(stride), "<chunks>")
    rng = np.random.default_rng(width)
    channels, height = 2, 3
    data = rng.standard_normal(channels * height * width).astype(np.float32)
    start = rng.standard_normal(stride * channels + height * width + 8).astype(np.float32)
    got = {}
    for name, be in backends.items():
        inst = instantiate(vmfb, be)[1]
        dst, src = VmBuffer.from_bytes(start.tobytes()), VmBuffer.from_bytes(data.tobytes())
        inst.lookup("acc").call([dst, src, width, channels, height])
        got[name] = dst.tobytes()
    assert got["jit"] == got["interp"]
