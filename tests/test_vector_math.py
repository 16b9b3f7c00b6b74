"""Vector forms of libm's float functions (runtime.native.vecmath) against the scalar calls.

Every comparison is bit for bit against the host libm through the same compiled loop shape
(vector form vs scalar call), on dense samples in the default run and on every float32 in
the slow one; end to end, softmax and GELU compiled for VMVX give IREE's bits with vector
math on, off and in the interpreter.
"""

from __future__ import annotations

import platform

import numpy as np
import pytest

from jitvm.lower.llvm import vector_math
from jitvm.runtime.native import target as targets, vecmath



def _plain_forms_reproduce_libm() -> bool:
    """The host is one whose libm the forms follow and the plain forms match it on the probe
    set: there every form (the AVX-512 ones too) must match, so a wrong one fails here
    instead of switching vector math off and skipping."""
    if not vector_math._switched_on():
        return False
    try:
        maps = vector_math.Maps()
    except Exception:
        return False
    x = vector_math.probe_inputs()
    return all(maps.differences(name, x).size == 0 for name in vecmath.FUNCTIONS)


HOST_REPRODUCED = _plain_forms_reproduce_libm()
needs_host = pytest.mark.skipif(not HOST_REPRODUCED, reason="this host's libm is not the one vecmath reproduces")


def test_a_libm_the_forms_follow_is_reproduced():
    """On x86_64 glibc 2.28+ with FMA (the libm vecmath follows) the plain forms must match it:
    a broken form then fails here, where otherwise every comparison in this file would skip."""
    libc, version = platform.libc_ver()
    glibc = libc == "glibc" and tuple(int(v) for v in version.split(".")[:2]) >= (2, 28)
    followed = platform.machine() == "x86_64" and glibc and "+fma" in targets.host().features.split(",")
    if not (followed and vector_math._switched_on()):
        pytest.skip("not a libm vecmath follows (or vector math switched off)")
    assert HOST_REPRODUCED


# The forms lowering uses on this host: the AVX-512 ones (16 lanes, permuted tables) too where it has it.
FORMS = ["plain"] + (["wide"] if targets.wide_vectors(targets.host()) else [])


@pytest.fixture(scope="module", params=FORMS)
def maps(request):
    return vector_math.Maps(wide=request.param == "wide")


def _dense_sample() -> np.ndarray:
    """Every 4099th bit pattern, all patterns around the functions' range boundaries, the probe set."""
    strided = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32)
    bounds = [0x42B00000, 0x42B17218, 0xC2CFF1B4, 0xC2CE8ED0, 0x3F580000, 0x3FA00000, 0x4036DB6E, 0x40C00000,
              0x31800000, 0x04000000, 0x7F800000, 0x00800000, 0x3F800000, 0x3F330000, 0x7F7FFFFF]
    around = np.concatenate([np.arange(b - 2048, b + 2048, dtype=np.int64) for b in bounds])
    around = np.concatenate([around, around | 0x80000000]).astype(np.uint32)
    return np.concatenate([strided.view(np.float32), around.view(np.float32), vector_math.probe_inputs(1 << 18)])


@needs_host
@pytest.mark.parametrize("name", vecmath.FUNCTIONS)
def test_dense_sample_is_bit_identical_to_libm(maps, name):
    x = _dense_sample()
    differ = maps.differences(name, x)
    assert differ.size == 0, f"{name}: {differ.size} inputs differ, e.g. {[hex(v) for v in differ[:8].view(np.uint32)]}"


@needs_host
@pytest.mark.parametrize("name", vecmath.FUNCTIONS)
def test_the_probe_catches_a_form_one_ulp_off(maps, name):
    """The comparison the host check makes sees a single-ulp change in one lane's result."""
    x = vector_math.probe_inputs()
    v = maps.run("vector", name, x)
    assert (v.view(np.uint32) == maps.run("scalar", name, x).view(np.uint32)).all()
    finite = np.flatnonzero(np.isfinite(v) & (v != 0))
    v.view(np.uint32)[finite[len(finite) // 2]] += 1
    assert (v.view(np.uint32) != maps.run("scalar", name, x).view(np.uint32)).sum() == 1


def test_the_switch_turns_vector_math_off(monkeypatch):
    monkeypatch.setenv(vecmath.ENV_SWITCH, "0")
    vector_math.available.cache_clear()
    try:
        assert vector_math.available() is False
    finally:
        monkeypatch.delenv(vecmath.ENV_SWITCH)
        vector_math.available.cache_clear()
    assert vector_math.available() is HOST_REPRODUCED


def test_other_hosts_keep_libm_calls(monkeypatch):
    """aarch64's glibc builds the same sources with other contractions: no vector forms there."""
    monkeypatch.setattr(vector_math.platform, "machine", lambda: "aarch64")
    vector_math.available.cache_clear()
    try:
        assert vector_math.available() is False
    finally:
        monkeypatch.undo()
        vector_math.available.cache_clear()


def test_the_probe_answer_is_kept_in_the_store(tmp_path, monkeypatch):
    """Once per host: a later process reads it (known() without probing: what a baseline
    compile asks), and a store without it means "not known", never a guess."""
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path))
    vector_math.available.cache_clear()
    try:
        if not vector_math._switched_on():
            assert vector_math.known() is False
            return
        assert vector_math.known() is None
        answer = vector_math.available()
        vector_math.available.cache_clear()
        monkeypatch.setattr(vector_math, "Maps", None)  # a probe now would fail: the answer is read
        assert vector_math.known() is answer and vector_math.available() is answer
    finally:
        monkeypatch.undo()
        vector_math.available.cache_clear()


@pytest.mark.parametrize("wide", [False, True])
def test_definitions_parse_and_name_every_width(wide):
    import llvmlite.binding as llvm
    text = vecmath.definitions(vecmath.FUNCTIONS, wide=wide)
    llvm.parse_assembly(text).verify()
    for name in vecmath.FUNCTIONS:
        for w in vecmath.widths(wide):
            assert f"_ZGV_LLVM_N{w}v_{vecmath.SCALAR_NAME[name]}({vecmath.vector_name(name, w)})" \
                in vecmath.call_attributes(name, wide)
    assert ("vpermi2var" in text) is wide  # the wide forms read their tables by permutes


@needs_host
@pytest.mark.skipif("wide" not in FORMS, reason="no AVX-512 here")
def test_a_wrong_table_entry_shows_in_the_wide_forms(monkeypatch):
    """The permuted lookup reads the table entries the scalar code reads: one entry changed
    (the last, reached through index bit 4 and the second permute) changes results."""
    x = vector_math.probe_inputs()
    table = list(vecmath._EXP2F_TABLE)
    table[31] += 1 << 32  # a change in the float bits of the results for most of the inputs using it
    monkeypatch.setattr(vecmath, "_EXP2F_GLOBAL", vecmath._EXP2F_GLOBAL.replace(
        f"i64 {vecmath._EXP2F_TABLE[31]}]", f"i64 {table[31]}]"))
    monkeypatch.setattr(vecmath, "_GLOBALS", {**vecmath._GLOBALS, "expf": vecmath._EXP2F_GLOBAL})
    assert vecmath._EXP2F_GLOBAL.endswith(f"i64 {table[31]}], align 8")
    assert vector_math.Maps(["expf"], wide=True).differences("expf", x).size > 0


@needs_host
@pytest.mark.parametrize("key", ["pp", "pa", "ra", "sb"])
def test_a_changed_erff_coefficient_of_each_range_shows(monkeypatch, key):
    """Each of erff's ranges evaluates its own coefficients (selected per lane): one of them
    changed (by 2^16 ulps: rb and sb, |x| >= 1/0.35, move few results at all) changes results."""
    x = vector_math.probe_inputs()
    changed = list(vecmath._ERFF[key])
    changed[1] += 1 << 16
    monkeypatch.setattr(vecmath, "_ERFF", {**vecmath._ERFF, key: tuple(changed)})
    assert vector_math.Maps(["erff"]).differences("erff", x).size > 0


# --- end to end: VMVX programs ----------------------------------------------------------------

SHAPES = {"softmax": (2, 8, 128), "gelu": (8, 256)}


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    pytest.importorskip("iree.runtime")
    from bench.vector_math import compile_program
    from jitvm.fuzz.corpus import require_tool
    require_tool("iree-compile")
    out = {}
    for name, shape in SHAPES.items():
        directory = tmp_path_factory.mktemp(name)
        out[name] = compile_program(name, directory, shape)
    return out


def _iree(path, name, x):
    import iree.runtime as rt
    ctx = rt.SystemContext(config=rt.Config("local-sync"))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, path.read_bytes()))
    return np.asarray(ctx.modules.module[name](x))


@pytest.mark.parametrize("name", list(SHAPES))
def test_programs_match_iree_and_the_interpreter(programs, name):
    import jitvm
    from bench.vector_math import inputs, jit_backend
    x = inputs(name, seed=3, shape=SHAPES[name])
    x.flat[:6] = [0.0, -0.0, 1e-40, 7.5, -7.5, 90.0]
    want = _iree(programs[name], name, x).tobytes()
    for label, backend in (("vector", jit_backend(True, threads=2)), ("scalar", jit_backend(False, threads=2)),
                           ("interp", "interp")):
        got = np.asarray(jitvm.load(str(programs[name]), backend=backend, driver="local-sync")[name](x))
        assert got.tobytes() == want, f"{name}: {label} differs from IREE"


@needs_host
@pytest.mark.parametrize("name,function", [("softmax", "expf"), ("gelu", "erff")])
def test_the_loops_vectorise_with_the_vector_forms(programs, name, function, tmp_path):
    """The dispatch's optimised IR calls the vector form; with vector math off, libm only."""
    import subprocess
    from bench.build import TARGETS, iree_compile
    from jitvm.frontend.module import load_module
    from jitvm.lower.inspect import lowered_ir
    from jitvm.verify import verify_module
    from bench.vector_math import program_text
    src = tmp_path / "p.mlir"
    src.write_text(program_text(name, SHAPES[name]))
    subprocess.run([iree_compile(), str(src), *TARGETS["vmvx"], f"--iree-hal-dump-executable-binaries-to={tmp_path}",
                    "-o", str(tmp_path / "p.vmfb")], check=True, capture_output=True)
    (exe,) = tmp_path.glob("*vmvx_bytecode_fb.vmfb")
    verified = verify_module(load_module(exe.read_bytes()))

    def vector_calls(text):
        return sum(f"@{vecmath.vector_name(function, w)}(" in line and "call" in line
                   for w in vecmath.WIDE_WIDTHS for line in text.splitlines())
    assert vector_calls(lowered_ir(verified)) > 0
    plain = lowered_ir(verified, vector_math_on=False)
    assert vector_calls(plain) == 0 and f"@{function}(" in plain


# --- every float32 ------------------------------------------------------------------------------

@needs_host
@pytest.mark.slow
@pytest.mark.parametrize("name", vecmath.FUNCTIONS)
def test_every_float32_is_bit_identical_to_libm(maps, name):
    chunk = 1 << 24
    bad = []
    for lo in range(0, 1 << 32, chunk):
        x = np.arange(lo, lo + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
        d = maps.differences(name, x)
        bad.extend(d[:4].view(np.uint32).tolist())
        assert len(bad) < 4, f"{name}: differs at {[hex(b) for b in bad]}"
    assert not bad, f"{name}: differs at {[hex(b) for b in bad]}"
