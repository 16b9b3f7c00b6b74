"""Row reductions, softmax, max pools and transposes as IREE lowers them for VMVX: the JIT
with its loop steps on and with each one this file covers turned off, against IREE's
interpreter and jitvm's, bit for bit.

The shapes are the ones exported transformers and CNNs bring (lower.loops.versioning's
blocking_pays: a softmax over heads and a max pool are jammed without register blocking;
lower.loops.stage: the rows a softmax and a layer norm reduce, read from a transposed copy;
runtime.native.vecmath's wide forms: the softmax's exp), and odd ones, whose rows, windows
and tiles leave remainders.
"""

from __future__ import annotations

import numpy as np
import pytest

SOFTMAX = """
func.func @main(%x: tensor<{s}xf32>) -> tensor<{s}xf32> {{
  %init = tensor.empty() : tensor<{s}xf32>
  %r = linalg.softmax dimension(2) ins(%x : tensor<{s}xf32>) outs(%init : tensor<{s}xf32>) -> tensor<{s}xf32>
  return %r : tensor<{s}xf32>
}}
"""

MAXPOOL = """
func.func @main(%x: tensor<1x{c}x{h}x{h}xf32>) -> tensor<1x{c}x{o}x{o}xf32> {{
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x{c}x{o}x{o}xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x{c}x{o}x{o}xf32>) -> tensor<1x{c}x{o}x{o}xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %r = linalg.pooling_nchw_max {{dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}}
      ins(%x, %w : tensor<1x{c}x{h}x{h}xf32>, tensor<3x3xf32>) outs(%init : tensor<1x{c}x{o}x{o}xf32>)
      -> tensor<1x{c}x{o}x{o}xf32>
  return %r : tensor<1x{c}x{o}x{o}xf32>
}}
"""

MAXPOOL_NHWC = """
func.func @main(%x: tensor<1x{h}x{h}x{c}xf32>) -> tensor<1x{o}x{o}x{c}xf32> {{
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x{o}x{o}x{c}xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x{o}x{o}x{c}xf32>) -> tensor<1x{o}x{o}x{c}xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %r = linalg.pooling_nhwc_max {{dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}}
      ins(%x, %w : tensor<1x{h}x{h}x{c}xf32>, tensor<3x3xf32>) outs(%init : tensor<1x{o}x{o}x{c}xf32>)
      -> tensor<1x{o}x{o}x{c}xf32>
  return %r : tensor<1x{o}x{o}x{c}xf32>
}}
"""

# A layer norm's statistics as ONNX exports reach IREE: a row's mean, then each element minus it.
LAYERNORM = """
func.func @main(%x: tensor<{r}x{n}xf32>) -> tensor<{r}x{n}xf32> {{
  %zero = arith.constant 0.0 : f32
  %count = arith.constant {n}.0 : f32
  %e = tensor.empty() : tensor<{r}xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<{r}xf32>) -> tensor<{r}xf32>
  %sum = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                         iterator_types = ["parallel", "reduction"]}}
      ins(%x : tensor<{r}x{n}xf32>) outs(%z : tensor<{r}xf32>) {{
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }} -> tensor<{r}xf32>
  %o = tensor.empty() : tensor<{r}x{n}xf32>
  %y = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                         affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%x, %sum : tensor<{r}x{n}xf32>, tensor<{r}xf32>) outs(%o : tensor<{r}x{n}xf32>) {{
  ^bb0(%a: f32, %s: f32, %out: f32):
    %m = arith.divf %s, %count : f32
    %d = arith.subf %a, %m : f32
    %sq = arith.mulf %d, %d : f32
    linalg.yield %sq : f32
  }} -> tensor<{r}x{n}xf32>
  return %y : tensor<{r}x{n}xf32>
}}
"""

# Attention's head split: (rows, features) + bias -> (features, rows).
TRANSPOSE = """
func.func @main(%x: tensor<{r}x{n}xf32>, %b: tensor<{n}xf32>) -> tensor<{n}x{r}xf32> {{
  %o = tensor.empty() : tensor<{n}x{r}xf32>
  %y = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i)>,
                                         affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%x, %b : tensor<{r}x{n}xf32>, tensor<{n}xf32>) outs(%o : tensor<{n}x{r}xf32>) {{
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  }} -> tensor<{n}x{r}xf32>
  return %y : tensor<{n}x{r}xf32>
}}
"""

CASES = {
    "softmax_8x64x128": (SOFTMAX.format(s="8x64x128"), [(8, 64, 128)]),
    "softmax_5x33x67": (SOFTMAX.format(s="5x33x67"), [(5, 33, 67)]),
    "maxpool_16x57": (MAXPOOL.format(c=16, h=57, o=28), [(1, 16, 57, 57)]),
    "maxpool_7x31": (MAXPOOL.format(c=7, h=31, o=15), [(1, 7, 31, 31)]),
    "maxpool_nhwc_33x64": (MAXPOOL_NHWC.format(c=64, h=33, o=16), [(1, 33, 33, 64)]),
    "layernorm_64x384": (LAYERNORM.format(r=64, n=384), [(64, 384)]),
    "layernorm_37x383": (LAYERNORM.format(r=37, n=383), [(37, 383)]),
    "transpose_128x384": (TRANSPOSE.format(r=128, n=384), [(128, 384), (384,)]),
    "transpose_37x129": (TRANSPOSE.format(r=37, n=129), [(37, 129), (129,)]),
}

# Each step this file covers, turned off (its own JIT), next to all steps on.
STEPS_OFF = {"all on": {}, "shared_blocking off": {"shared_blocking": False}, "wide_math off": {"wide_math": False},
             "stage_loads off": {"stage_loads": False}}


def _inputs(shapes, seed):
    rng = np.random.default_rng(seed)
    arrays = [(rng.standard_normal(s) * 4).astype(np.float32) for s in shapes]
    x = arrays[0].reshape(-1)  # what the rules about ties, zeros and NaN see
    x[:8] = [0.0, -0.0, -0.0, 0.0, np.nan, -np.inf, 1e-40, 90.0]
    return arrays


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    pytest.importorskip("iree.runtime")
    from bench.build import TARGETS, _iree_compile
    from jitvm.fuzz.corpus import require_tool
    require_tool("iree-compile")
    out = {}
    for name, (text, _) in CASES.items():
        directory = tmp_path_factory.mktemp(name)
        src, vmfb = directory / "p.mlir", directory / "p.vmfb"
        src.write_text(text)
        _iree_compile(src, [*TARGETS["vmvx"], f"--iree-hal-dump-executable-binaries-to={directory}"], vmfb, name)
        out[name] = vmfb
    return out


def _executables(vmfb):
    return sorted(vmfb.parent.glob("*vmvx_bytecode_fb.vmfb"))


@pytest.fixture(scope="module")
def backends():
    from jitvm.lower.backend import JitBackend
    out = {label: JitBackend(threads=1, use_cache=False, progress=False, loop_steps=steps)
           for label, steps in STEPS_OFF.items()}
    out["all on, 2 threads"] = JitBackend(threads=2, use_cache=False, progress=False)
    return out


def _iree(path, args):
    import iree.runtime as rt
    ctx = rt.SystemContext(config=rt.Config("local-sync"))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, path.read_bytes()))
    return np.asarray(ctx.modules.module["main"](*args))


@pytest.mark.parametrize("name", list(CASES))
def test_the_jit_gives_iree_interpreters_bits(programs, backends, name):
    import jitvm
    args = _inputs(CASES[name][1], seed=len(name))
    want = _iree(programs[name], args)
    assert want.size and np.isfinite(want).any()
    for label, backend in [*backends.items(), ("jitvm interpreter", "interp")]:
        got = np.asarray(jitvm.load(str(programs[name]), backend=backend, driver="local-sync")["main"](*args))
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), f"{name}: {label} differs from IREE"


def _jam_plans(vmfb):
    """(function, nest, jam plan as lowering takes it) of every jammed nest of the executables."""
    from dataclasses import replace
    from jitvm.frontend.module import load_module
    from jitvm.lower.loops import delinearise, jam
    from jitvm.lower.loops.versioning import NestVersioning, blocking_pays
    from jitvm.verify import verify_module
    for exe in _executables(vmfb):
        for vf in verify_module(load_module(exe.read_bytes())).functions:
            for nest in NestVersioning().nests(vf).values():
                p = None if isinstance(nest, delinearise.ChunkPlan) else jam.plan(vf, nest, True, True, True)
                if p is not None and p.outer is not None and not blocking_pays(vf, nest, p.outer.loop, p.loop):
                    p = replace(p, outer=None)
                if p is not None:
                    yield vf, nest, p


@pytest.mark.parametrize("name,staged", [("softmax_8x64x128", {(64, 128)}), ("softmax_5x33x67", {(33, 67)}),
                                         ("layernorm_64x384", {(64, 384)}), ("layernorm_37x383", {(37, 383)}),
                                         ("maxpool_16x57", set())])
def test_the_staged_rows_are_the_reduced_ones(programs, name, staged):
    """The cases above run lower.loops.stage's copies: tiled (extents multiples of 16) and
    element by element (odd extents); a max pool's windows are no rows and stay as they are."""
    from jitvm.lower.loops import stage
    got = {(s.p_trips, s.r_trips) for vf, nest, p in _jam_plans(programs[name]) if p.outer is None
           for s in stage.plan(vf, nest, p)}
    assert got == staged


def _nests_unblocked_by_the_rule(vmfb):
    """(function, jammed loop id) of the nests jam would block but blocking_pays keeps plain."""
    from jitvm.frontend.module import load_module
    from jitvm.lower.loops import delinearise, jam
    from jitvm.lower.loops.versioning import NestVersioning, blocking_pays
    from jitvm.verify import verify_module
    out = []
    for exe in _executables(vmfb):
        for vf in verify_module(load_module(exe.read_bytes())).functions:
            for nest in NestVersioning().nests(vf).values():
                if isinstance(nest, delinearise.ChunkPlan):
                    continue
                p = jam.plan(vf, nest, True, True, True)
                if p is not None and p.outer is not None and not blocking_pays(vf, nest, p.outer.loop, p.loop):
                    out.append((vf.name, p.loop.id))
    return out


@pytest.mark.parametrize("name,unblocked", [("softmax_8x64x128", True), ("maxpool_16x57", True),
                                            ("maxpool_nhwc_33x64", False), ("transpose_128x384", False)])
def test_the_rule_takes_the_nests_it_is_for(programs, name, unblocked):
    """The cases above run the step's path: a softmax over heads and an NCHW max pool would
    be register-blocked without the rule; an NHWC max pool (vector loads over channels) keeps
    its blocking, as the kernel suite's blocked matmuls do (tests/test_jit_register_blocking.py)."""
    assert bool(_nests_unblocked_by_the_rule(programs[name])) is unblocked
