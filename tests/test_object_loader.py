"""jitvm's own object loader (runtime.native.objload): stored object code mapped without LLVM.

Its code must behave exactly as MCJIT's (the same bytes, the same symbols), it must decline
what it does not understand (MCJIT then loads it), refuse malformed objects without running
anything, and a warm load must not import llvmlite's bindings at all; symbols it registers
must reach code LLVM compiles later."""

from __future__ import annotations

import ctypes
import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import jitvm
from jitvm.errors import FormatError
from jitvm.fuzz.corpus import make_inputs
from jitvm.runtime.native import cache, engine, hostinfo, objload, symtab
from jitvm.runtime.native import target as targets

ROOT = Path(__file__).resolve().parents[1]
CNN = ROOT / "jitvm" / "examples" / "cnn.vmfb"
pytestmark = pytest.mark.skipif(targets.host().arch != "x86_64", reason="the loader maps x86_64 objects")

# Code with what the JIT's objects hold: constants in read-only data, a zeroed global written
# at run time, a call to a jitvm-provided symbol (libm's expf) and to a function of the same
# module, float and integer arithmetic.
IR = textwrap.dedent("""
    @table = internal constant [4 x float] [float 1.5, float -2.25, float 0x3FB99999A0000000, float 3.0]
    @counter = global i64 0
    declare float @jvt_expf(float)

    define internal float @scale(float %x, i32 %i) {
      %p = getelementptr [4 x float], ptr @table, i32 0, i32 %i
      %c = load float, ptr %p
      %m = fmul float %x, %c
      ret float %m
    }

    define float @jvt_kernel(float %x, i32 %i) {
      %n = load i64, ptr @counter
      %n1 = add i64 %n, 1
      store i64 %n1, ptr @counter
      %s = call float @scale(float %x, i32 %i)
      %e = call float @jvt_expf(float %s)
      %r = fadd float %e, %s
      ret float %r
    }
""")
KERNEL = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_int32)


def _object(ir: str = IR) -> bytes:
    return engine.compile_object(ir, targets.host(), 2)


def _provide_expf():
    libm = ctypes.CDLL("libm.so.6")
    engine.provide({"jvt_expf": ctypes.cast(libm.expf, ctypes.c_void_p).value})


def test_mapped_code_computes_what_mcjit_code_computes():
    _provide_expf()
    obj = _object()
    mapped = engine.JitModule(mapped=objload.load([obj]))
    assert mapped.mapped is not None, objload.STATS
    linked = engine._mcjit(None, [obj], targets.host(), 2)
    xs = np.array([0.0, 1.0, -0.5, 3.25, 1e-3, 88.0, -100.0, np.nan], np.float32)
    for code in (mapped, linked):
        assert ctypes.c_int64.from_address(code.global_address("counter")).value == 0
    got = {id(code): [struct.pack("<f", code.function("jvt_kernel", KERNEL)(float(x), i)) for x in xs for i in range(4)]
           for code in (mapped, linked)}
    assert got[id(mapped)] == got[id(linked)]
    for code in (mapped, linked):  # the writable global was written, each in its own image
        assert ctypes.c_int64.from_address(code.global_address("counter")).value == len(xs) * 4


def test_pc_relative_data_points_where_mcjit_points():
    """R_X86_64_PC64 (a relative pointer in data: what `.eh_frame` holds, and this constant)."""
    obj = _object("@jvt_target = global i32 5\n"
                  "@jvt_rel = constant i64 sub (i64 ptrtoint (ptr @jvt_target to i64), i64 ptrtoint (ptr @jvt_rel to i64))\n")
    for code in (engine.JitModule(mapped=objload.load([obj])), engine._mcjit(None, [obj], targets.host(), 2)):
        rel = code.global_address("jvt_rel")
        assert ctypes.c_int64.from_address(rel).value == code.global_address("jvt_target") - rel != 0
        assert ctypes.c_int32.from_address(rel + ctypes.c_int64.from_address(rel).value).value == 5


def test_text_is_executable_and_never_writable():
    _provide_expf()
    image = objload.load([_object()])
    address = image.symbols["jvt_kernel"]
    with open("/proc/self/maps") as f:
        for line in f:
            span, perms = line.split()[:2]
            lo, hi = (int(x, 16) for x in span.split("-"))
            if lo <= address < hi:
                assert perms.startswith("r-x"), line
                return
    pytest.fail("the mapped code is in no mapping of /proc/self/maps")


def test_truncated_or_damaged_objects_are_refused_or_declined_never_mapped():
    _provide_expf()
    obj = _object()
    cuts = sorted({*range(0, 80, 7), *range(0, len(obj), max(1, len(obj) // 40)), len(obj) - 1})
    for n in cuts:
        with pytest.raises(FormatError):
            objload.load([obj[:n]])
    header = struct.unpack_from("<16sHHIQQQIHHHHHH", obj)
    shoff, shnum = header[6], header[12]
    damaged = 0
    intact = objload.load([obj])
    want = KERNEL(intact.symbols["jvt_kernel"])(1.0, 1)
    for field, offset, fmt in (("sh_offset", 24, "<Q"), ("sh_size", 32, "<Q"), ("sh_link", 40, "<I"),
                               ("sh_info", 44, "<I"), ("sh_name", 0, "<I")):
        for k in range(1, shnum):
            bad = bytearray(obj)
            struct.pack_into(fmt, bad, shoff + k * 64 + offset, 0xFFFFFF0)
            try:
                image = objload.load([bytes(bad)])
            except FormatError:
                damaged += 1
                continue
            # a field the loader does not read (a non-loaded section's) leaves the code as it was
            assert image is None or KERNEL(image.symbols["jvt_kernel"])(1.0, 1) == want, (field, k)
    assert damaged > shnum  # most of them are caught
    for k in range(1, shnum):  # a size no module has
        bad = bytearray(obj)
        struct.pack_into("<Q", bad, shoff + k * 64 + 32, 1 << 62)
        with pytest.raises(FormatError):
            objload.load([bytes(bad)])


def test_what_it_does_not_understand_is_declined_and_mcjit_loads_it():
    for ir, why in (
        ("@tls = thread_local global i32 7\ndefine i32 @jvt_tls() {\n  %v = load i32, ptr @tls\n  ret i32 %v\n}\n", "TLS"),
        ("$jvt_c = comdat any\ndefine i32 @jvt_c() comdat {\n  ret i32 7\n}\n", "SHT_GROUP"),
        ("declare i32 @jvt_nowhere_to_be_found()\ndefine i32 @jvt_u() {\n  %v = call i32 @jvt_nowhere_to_be_found()\n"
         "  ret i32 %v\n}\n", "unresolved"),
    ):
        before = objload.STATS["declined"]
        assert objload.load([_object(ir)]) is None
        assert objload.STATS["declined"] == before + 1
        assert any(why in k for k in objload.STATS), (why, objload.STATS)
    code = engine.jit_module(objects=[_object(
        "$jvt_c2 = comdat any\ndefine i32 @jvt_c2() comdat {\n  ret i32 11\n}\n")])
    assert code.mapped is None and code.function("jvt_c2", ctypes.CFUNCTYPE(ctypes.c_int32))() == 11


def test_the_switch_sends_everything_through_mcjit(monkeypatch):
    _provide_expf()
    monkeypatch.setenv(objload.ENV, "0")
    code = engine.jit_module(objects=[_object()])
    assert code.mapped is None and code.engine is not None


def test_symbols_registered_before_llvm_is_attached_reach_it():
    """What `provide` registered while no LLVM was there is handed to LLVM when it comes."""
    added = {}
    symtab.add({"jvt_early": 0x1234})
    try:
        saved = symtab._add
        symtab._add = None
        symtab.attach(lambda name, addr: added.__setitem__(name, addr))
        assert added.get("jvt_early") == 0x1234
        symtab.add({"jvt_late": 0x5678})
        assert added.get("jvt_late") == 0x5678
    finally:
        symtab._add = saved


def _results(module, function, args):
    try:
        r = module[function](*args)
    except jitvm.Trap as e:
        return ("trap", e.status_name, e.message)
    r = [] if r is None else list(r) if isinstance(r, tuple) else [r]
    return ("ok", [(v.dtype.str, v.shape, v.tobytes()) if isinstance(v, np.ndarray) else repr(v) for v in r])


def test_the_corpus_computes_the_same_bits_mapped_and_through_mcjit(corpus, monkeypatch):
    """Every MLIR corpus program's JIT code (compiled at its first call, then from the store)
    loaded by each loader in turn: jitvm's when the switch is on, MCJIT when it is off."""
    programs = [m for m in corpus if m.kind == "mlir" and m.calls]
    mapped = {"ours": 0, "theirs": 0}

    def run(side, module, function, args):
        if side == "ours":
            monkeypatch.delenv(objload.ENV, raising=False)
        else:
            monkeypatch.setenv(objload.ENV, "0")
        before = objload.STATS["mapped"]
        got = _results(module, function, args)
        mapped[side] += objload.STATS["mapped"] - before
        return got

    for m in programs:
        loaded = {side: jitvm.load(str(m.vmfb), backend="jit") for side in mapped}
        for i, call in enumerate(m.calls):
            args = make_inputs(m, i)
            got = {side: run(side, module, call.function, args) for side, module in loaded.items()}
            assert got["ours"] == got["theirs"], (m.name, call)
    assert mapped["ours"] >= len(programs) and mapped["theirs"] == 0, mapped


def _run(code: str, store: Path, **env) -> str:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "JITVM_CACHE_DIR": str(store), **env})
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1]


PROBE_CNN = f"""
import json, sys, numpy as np, jitvm
from jitvm.runtime.native import objload, hostinfo
m = jitvm.load({str(CNN)!r})
loaded_llvm = 'llvmlite.binding' in sys.modules
x = np.linspace(-1, 1, 28 * 28, dtype=np.float32).reshape(1, 28, 28, 1)
out = np.asarray(m.predict(x))
print(json.dumps({{"llvm": loaded_llvm, "llvm_after_call": 'llvmlite.binding' in sys.modules, "mapped": objload.STATS["mapped"], "asked_llvm": hostinfo.STATS["asked_llvm"],
                  "out": out.tobytes().hex()}}))
"""


def test_a_warm_load_imports_no_llvm_and_computes_what_mcjit_does(tmp_path):
    cold = json.loads(_run(PROBE_CNN, tmp_path, JITVM_TIER="full"))
    warm = json.loads(_run(PROBE_CNN, tmp_path, JITVM_TIER="full"))
    forced = json.loads(_run(PROBE_CNN, tmp_path, JITVM_TIER="full", **{objload.ENV: "0"}))
    # a cold load asks LLVM once, through the compile helper: not in this process (runtime.native.offload)
    assert cold["asked_llvm"] == 1 and not cold["llvm"]
    assert warm == {**warm, "llvm": False, "llvm_after_call": False, "asked_llvm": 0} and warm["mapped"] > 0
    assert forced["mapped"] == 0 and forced["llvm"]
    assert cold["out"] == warm["out"] == forced["out"]


def test_code_compiled_after_a_mapped_module_links_against_its_exports(tmp_path):
    probe = textwrap.dedent("""
        import ctypes, sys
        from jitvm.runtime.native import engine
        a = engine.jit_module('define i32 @jvt_base(i32 %x) {\\n  %y = mul i32 %x, 3\\n  ret i32 %y\\n}\\n',
                              export=("jvt_base",))
        before = 'llvmlite.binding' in sys.modules
        b = engine.jit_module('declare i32 @jvt_base(i32)\\ndefine i32 @jvt_user(i32 %x) {\\n'
                              '  %y = call i32 @jvt_base(i32 %x)\\n  %z = add i32 %y, 1\\n  ret i32 %z\\n}\\n',
                              cached=False)
        f = b.function("jvt_user", ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32))
        print(a.mapped is not None, before, b.engine is not None, f(14))
    """)
    assert _run(probe, tmp_path).split()[-1] == "43"  # compiles and stores jvt_base's code
    assert _run(probe, tmp_path) == "True False True 43"  # mapped without LLVM, then LLVM links to it


def test_the_host_description_is_stored_and_a_damaged_record_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path))
    want = targets.ask_llvm()
    probes = []

    def probe():
        probes.append(1)
        return want

    hostinfo.forget()
    try:
        assert hostinfo.description(probe) == want and len(probes) == 1
        hostinfo.forget()
        assert hostinfo.description(probe) == want and len(probes) == 1  # from the store
        cache.drop(hostinfo.record_key())
        cache.store(hostinfo.record_key(), [b'{"triple": 1}'], {"what": "host description"})
        hostinfo.forget()
        assert hostinfo.description(probe) == want and len(probes) == 2  # not a description: asked again
        hostinfo.forget()
        assert hostinfo.description(probe) == want and len(probes) == 2  # and stored again
    finally:
        hostinfo.forget()
    assert targets.host() == targets.Target(want["triple"], want["cpu"], want["features"])


def test_the_host_key_sees_every_fact_the_description_follows_from(monkeypatch):
    base = hostinfo.record_key()
    for name, value in (("_cpu_identity", lambda: "vendor_id=Other\nflags=sse2"),
                        ("_llvm_library", lambda: ("0.0.0", "/elsewhere/libllvmlite.so", "1:2:3")),
                        ("_source_texts", lambda: (b"changed",))):
        with monkeypatch.context() as m:
            m.setattr(hostinfo, name, value)
            assert hostinfo.record_key() != base, name
    with monkeypatch.context() as m:
        m.setattr(hostinfo.hwcaps, "read", lambda: (1, 2))
        assert hostinfo.record_key() != base
    assert hostinfo.record_key() == base


def test_a_bundle_loads_into_an_empty_store_without_llvm(tmp_path):
    """`jitvm compile` ships the host's description with the code, so a machine of the same
    kind maps the bundle's code without asking LLVM anything."""
    bundle = tmp_path / "cnn.jvc"
    r = subprocess.run([sys.executable, "-m", "jitvm", "compile", str(CNN), "-o", str(bundle)], cwd=ROOT,
                       capture_output=True, text=True, env={**os.environ, "JITVM_CACHE_DIR": str(tmp_path / "build")})
    assert r.returncode == 0, r.stderr
    probe = PROBE_CNN.replace(f"jitvm.load({str(CNN)!r})", f"jitvm.load({str(CNN)!r}, compiled={str(bundle)!r})")
    got = json.loads(_run(probe, tmp_path / "empty"))
    assert got["llvm"] is False and got["asked_llvm"] == 0 and got["mapped"] > 0
