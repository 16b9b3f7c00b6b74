"""llvm-cpu executables (issue 21): IREE's embedded and system ELF libraries under jitvm.load.

Corpus programs compiled for llvm-cpu (into this module's temporary directory) must return
exactly what iree.runtime returns: both runtimes run the same machine code, so every result
is compared bit for bit, transcendental ones too. The ELF reader is checked on malformed
files (each a jitvm.FormatError or UnsupportedError naming what and where), the library ABI
structs against the pointers iree-compile 3.13 relocates, and the device's answers to the
format and CPU queries against IREE's.
"""

from __future__ import annotations

import ctypes
import dataclasses
import re
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import jitvm
from jitvm.runtime.modules.hal import elf as elfmod
from jitvm.runtime.modules.hal import creation, formats, library, native_executable
from jitvm.fuzz.corpus import make_inputs, parse_directives, require_tool
from tests.corpus import CORPUS_DIR, build_corpus, source_files
from tests.hal_support import backends_under_test, corpus_calls_differ_from_iree, iree_call, iree_session, same_result

HOST = elfmod.host_machine()
pytestmark = pytest.mark.skipif(HOST is None or not sys.platform.startswith("linux"),
                                reason="llvm-cpu executables load on Linux x86_64 and aarch64")

LLVM_CPU = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu")
EMBEDDED = ["matmul", "conv2d", "elementwise_f32", "softmax", "reductions", "quant_matmul_i8", "dynamic_shapes",
            "f16_math", "bf16_math"]  # the last two on the host CPU: its F16C / AVX-512 BF16 instructions
SYSTEM = ["matmul", "f32_transcendental"]  # the latter links libm: an embedded ELF cannot (iree-lld fails)

ADD = """
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.addf %a, %b : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


def _llvm_target(cpu: str, features: str = "") -> str:
    triple = {"x86_64": "x86_64-unknown-unknown-eabi-elf", "aarch64": "aarch64-unknown-unknown-eabi-elf"}[HOST.name]
    extra = f', cpu_features = "{features}"' if features else ""
    return (f'#hal.executable.target<"llvm-cpu", "embedded-elf-{HOST.iree_arch}", '
            f'{{cpu = "{cpu}"{extra}, target_triple = "{triple}"}}>')


def _mixed(llvm_target: str) -> str:
    """A program whose device is chosen at run time between llvm-cpu and VMVX variants."""
    return ("module attributes {hal.device.targets = [#hal.device.select<[\n"
            f'  #hal.device.target<"local", [{llvm_target}]> : !hal.device,\n'
            '  #hal.device.target<"local", [#hal.executable.target<"vmvx", "vmvx-bytecode-fb">]> : !hal.device\n'
            "]> : !hal.device]} {" + ADD + "}\n")


def _missing_feature() -> str | None:
    have = library.host_features()
    candidates = {"x86_64": ["amx-tile", "avx512fp16", "amx-int8", "avx512f"], "aarch64": ["sme", "sve2", "i8mm"]}
    return next((f for f in candidates[HOST.name] if f in have and not have[f]), None)


def _foreign_cpu() -> str:
    """A baseline CPU name, to which the test adds a feature the host lacks."""
    return {"x86_64": "x86-64", "aarch64": "generic"}[HOST.name]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every module these tests run, compiled in parallel into a temporary directory."""
    out = tmp_path_factory.mktemp("llvm-cpu")
    compile_ = require_tool("iree-compile")
    corpus = {m.source.stem: m for m in build_corpus(names=sorted(set(EMBEDDED + SYSTEM)))}
    jobs = {}
    for name in EMBEDDED:
        m = corpus[name]
        extra = ["--iree-hal-dump-executable-binaries-to=" + str(out / "bin" / name)] if name == "matmul" else []
        jobs[f"embedded/{name}"] = [*LLVM_CPU, "--iree-llvmcpu-target-cpu=host", *m.flags, *extra, str(m.source)]
    for name in SYSTEM:
        m = corpus[name]
        jobs[f"system/{name}"] = [*LLVM_CPU, "--iree-llvmcpu-target-cpu=host", "--iree-llvmcpu-link-embedded=false",
                                  *m.flags, str(m.source)]
    other = "aarch64" if HOST.name == "x86_64" else "x86_64"
    triple = f"{other}-unknown-unknown-eabi-elf"
    jobs[f"cross/{other}"] = [*LLVM_CPU, f"--iree-llvmcpu-target-triple={triple}", "--iree-llvmcpu-target-cpu=generic",
                              "--iree-hal-dump-executable-binaries-to=" + str(out / "bin" / other),
                              str(corpus["matmul"].source)]
    (out / "mixed.mlir").write_text(_mixed(_llvm_target("host")))
    jobs["mixed"] = [str(out / "mixed.mlir")]
    feature = _missing_feature()
    if feature is not None:
        cpu = _foreign_cpu()
        (out / "mixed_foreign.mlir").write_text(_mixed(_llvm_target(cpu, "+" + feature)))
        (out / "add.mlir").write_text(ADD)
        jobs["mixed_foreign"] = [str(out / "mixed_foreign.mlir")]
        jobs["foreign"] = [*LLVM_CPU, f"--iree-llvmcpu-target-cpu={cpu}",
                           f"--iree-llvmcpu-target-cpu-features=+{feature}", str(out / "add.mlir")]

    def run(item):
        key, args = item
        path = out / (key.replace("/", "__") + ".vmfb")
        r = subprocess.run([compile_, *args, "-o", str(path)], capture_output=True, text=True)
        return key, path if r.returncode == 0 else r.stderr

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(pool.map(run, jobs.items()))
    failed = {k: v for k, v in results.items() if not isinstance(v, Path)}
    assert not failed, "\n".join(f"{k}: {v[:2000]}" for k, v in failed.items())
    results["corpus"] = corpus
    results["feature"] = feature
    results["elf"] = next((out / "bin" / "matmul").glob("*.so"))
    results["cross_elf"] = next((out / "bin" / other).glob("*.so"))
    return results


def _assert_equals_iree(vmfb: Path, corpus_module, backend: str = "jit") -> None:
    m = dataclasses.replace(corpus_module, vmfb=vmfb)
    module = jitvm.load(str(vmfb), backend=backend)
    problems = corpus_calls_differ_from_iree(module, m, vmfb)  # the same machine code: bit for bit, libm included
    module.close()
    assert not problems, "\n".join(problems)


# --- programs ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", EMBEDDED)
def test_embedded_elf_program_equals_iree(built, name):
    _assert_equals_iree(built[f"embedded/{name}"], built["corpus"][name])


@pytest.mark.parametrize("name", SYSTEM)
def test_system_elf_program_equals_iree(built, name):
    _assert_equals_iree(built[f"system/{name}"], built["corpus"][name])


@pytest.mark.slow
@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", [n for n, kind, _ in source_files() if kind == "mlir"])
def test_every_corpus_program_for_llvm_cpu_equals_iree(backend, name):
    """The whole corpus built for llvm-cpu (a generic CPU; f64_math excluded: iree-compile
    cannot lower its f64 erf), bit for bit under both backends (30 compiles: slow)."""
    path = CORPUS_DIR / (name + ".mlir")
    if "llvm-cpu" not in parse_directives(path.read_text(), "mlir").targets:
        pytest.skip(f"{name} does not compile for llvm-cpu")
    [m] = build_corpus(names=[name], target="llvm-cpu")
    module = jitvm.load(str(m.vmfb), backend=backend)
    problems = corpus_calls_differ_from_iree(module, m, m.vmfb)
    module.close()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("backend", backends_under_test())
def test_library_dispatch_does_not_depend_on_the_host_backend(built, backend):
    _assert_equals_iree(built["embedded/softmax"], built["corpus"]["softmax"], backend)
    _assert_equals_iree(built["embedded/bf16_math"], built["corpus"]["bf16_math"], backend)


def _forced_threads(n: int):
    from jitvm.lower.backend import JitBackend

    backend = JitBackend(threads=n, progress=False)
    backend.dispatch_runner().force_threads = n
    return backend


@pytest.mark.parametrize("name", ["matmul", "conv2d", "softmax", "reductions"])
def test_library_grids_on_two_threads_equal_iree(built, name):
    """Every grid of more than one workgroup split across two threads: same bits as IREE."""
    m = dataclasses.replace(built["corpus"][name], vmfb=built[f"embedded/{name}"])
    backend = _forced_threads(2)
    module = jitvm.load(str(m.vmfb), backend=backend)
    try:
        problems = corpus_calls_differ_from_iree(module, m, m.vmfb)
        assert not problems, "\n".join(problems)
    finally:
        module.close()
        backend.dispatch_runner().close()


def test_memoized_command_buffers_replay_with_no_python(built, monkeypatch):
    """After the first call (which prepares the replay), a call of an llvm-cpu module runs its
    memoized command buffer natively: native execution never calls back into Python."""
    from jitvm.runtime.modules.hal import native as hal_native

    m = built["corpus"]["matmul"]
    module = jitvm.load(str(built["embedded/matmul"]), threads=1)
    oracle, keep = iree_session(built["embedded/matmul"], False)
    calls = []
    real = hal_native._callback
    monkeypatch.setattr(hal_native, "_callback", lambda *a: calls.append(a[0]) or real(*a))
    try:
        for round_ in range(3):
            for i, call in enumerate(m.calls):
                args = make_inputs(m, i)
                trapped, message, want = iree_call(oracle, call.function, args)
                assert not trapped, message
                got = module[call.function](*args)
                assert not same_result(got, want[0], 0)
            if round_ == 0:
                assert calls, "the first calls prepare their replays through Python"
                calls.clear()
        assert calls == []
    finally:
        module.close()
        del keep


def _export_file_offset(built, index: int) -> tuple[int, str]:
    """(file offset, name) of export `index`'s machine code in the matmul ELF."""
    parsed, image, lib = _library(built["elf"])
    try:
        e = lib.exports[index]
        vaddr = e.function - image.bias
    finally:
        lib.close()
        image.close()
    seg = next(s for s in parsed.segments if s.vaddr <= vaddr < s.vaddr + s.filesz)
    return seg.offset + vaddr - seg.vaddr, e.name


@pytest.mark.skipif(HOST.name != "x86_64", reason="patches x86_64 machine code")
@pytest.mark.parametrize("backend", backends_under_test())
def test_a_kernels_nonzero_return_is_a_trap(built, tmp_path, backend):
    """An export returning nonzero (its code replaced by `mov eax, -7; ret`) fails the call
    with IREE's INTERNAL status, naming the export and the first workgroup."""
    at, name = _export_file_offset(built, 0)
    path = _module_with_elf(built, tmp_path, lambda d: d[:at] + b"\xb8\xf9\xff\xff\xff\xc3" + d[at + 6:])
    module = jitvm.load(str(path), backend=backend)
    a, b = make_inputs(built["corpus"]["matmul"], 0)
    try:
        for _ in range(2):  # the first call prepares the replay, the second replays it natively
            with pytest.raises(jitvm.Trap, match=rf"executable entry point {name} returned catastrophic error -7 "
                                                 rf"\(workgroup 0, 0, 0\)") as info:
                module.matmul_4x8x5(a, b)
            assert info.value.status == 13  # IREE_STATUS_INTERNAL
        assert module.matmul_acc is not None
    finally:
        module.close()


def _loaded_formats(monkeypatch) -> list[str]:
    made: list[str] = []
    real = native_executable.create_library_executable

    def spy(loader, fmt, *args, **kwargs):
        made.append(fmt)
        return real(loader, fmt, *args, **kwargs)

    monkeypatch.setattr(creation, "create_library_executable", spy)  # where executable.create calls it
    return made


def _add_equals_iree(vmfb: Path) -> None:
    module = jitvm.load(str(vmfb))
    oracle, keep = iree_session(vmfb, False)
    a, b = np.array([1.5, -2, 3e-39, np.inf], np.float32), np.array([0.25, 2, 3e-39, -1], np.float32)
    trapped, message, want = iree_call(oracle, "add", [a, b])
    assert not trapped, message
    assert not same_result(module.add(a, b), want[0], 0)
    del keep


@pytest.mark.parametrize("prefer,picked", [(None, "llvm-cpu"), ("llvm-cpu", "llvm-cpu"), ("vmvx", "vmvx")])
def test_mixed_module_picks_llvm_cpu_unless_vmvx_is_preferred(built, monkeypatch, prefer, picked):
    if prefer is None:
        monkeypatch.delenv(formats.PREFER_ENV, raising=False)
    else:
        monkeypatch.setenv(formats.PREFER_ENV, prefer)
    made = _loaded_formats(monkeypatch)
    _add_equals_iree(built["mixed"])
    assert made == ([f"embedded-elf-{HOST.iree_arch}"] if picked == "llvm-cpu" else [])


def test_preference_never_refuses_the_only_variant(built, monkeypatch):
    monkeypatch.setenv(formats.PREFER_ENV, "vmvx")
    made = _loaded_formats(monkeypatch)
    _assert_equals_iree(built["embedded/matmul"], built["corpus"]["matmul"])
    assert made


def test_bad_preference_is_an_argument_error(built, monkeypatch):
    monkeypatch.setenv(formats.PREFER_ENV, "gpu")
    with pytest.raises(jitvm.ArgumentError, match="JITVM_PREFER must be one of llvm-cpu, vmvx, got 'gpu'"):
        jitvm.load(str(built["mixed"]))


def test_missing_cpu_features_are_unsupported_or_fall_back_to_vmvx(built, monkeypatch):
    feature = built["feature"]
    if feature is None:
        pytest.skip("this host has every feature the test could ask for")
    with pytest.raises(jitvm.UnsupportedError, match=rf"features this host lacks: {re.escape(feature)}\b"):
        jitvm.load(str(built["foreign"]))
    made = _loaded_formats(monkeypatch)
    _add_equals_iree(built["mixed_foreign"])  # the VMVX variant runs instead
    assert made == []


def test_hal_cpu_queries_equal_iree(built, tmp_path):
    """`hal.cpu` answers from IREE's feature-bit table. IREE fills its CPU data when it first
    creates an executable, so the oracle loads an llvm-cpu module before asking."""
    import iree.runtime as rt

    keys = [name for arch, _, _, name in library.CPU_FEATURE_BITS if arch == HOST.name] + ["no-such-feature"]
    lines = ["vm.module @cpuq version 0", 'vm.import @hal.devices.get cconv "0i_r"',
             'vm.import @hal.device.query.i64 cconv "0rrr_iI"', "vm.rodata[0] = " + b"hal.cpu".hex().upper()]
    lines += [f"vm.rodata[{i + 1}] = " + k.encode().hex().upper() for i, k in enumerate(keys)]
    for i in range(len(keys)):
        lines += [f"vm.export @q{i}", f"vm.func @q{i}() -> (i32, i64) {{", "^bb0:", "  %i0 = vm.const.i32.zero",
                  "  %r0 = vm.call @hal.devices.get(%i0)", "  %r1 = vm.const.ref.rodata 0",
                  f"  %r2 = vm.const.ref.rodata {i + 1}", "  %i1, %i2 = vm.call @hal.device.query.i64(%r0, %r1, %r2)",
                  "  vm.return %i1, %i2:3", "}"]
    (tmp_path / "cpuq.vmasm").write_text("\n".join(lines) + "\n")
    subprocess.run([require_tool("iree-as-module"), f"--output={tmp_path / 'cpuq.vmfb'}", str(tmp_path / "cpuq.vmasm")],
                   check=True, capture_output=True)
    config = rt.Config("local-sync")
    primer = rt.VmModule.mmap(config.vm_instance, str(built["embedded/matmul"]))
    keep = rt.SystemContext(vm_modules=[primer], config=config)
    vm = rt.VmModule.mmap(config.vm_instance, str(tmp_path / "cpuq.vmfb"))
    oracle = rt.SystemContext(vm_modules=[vm], config=config).modules.cpuq
    ours = jitvm.load(str(tmp_path / "cpuq.vmfb"))
    got = {k: tuple(ours[f"q{i}"]()) for i, k in enumerate(keys)}
    want = {k: tuple(oracle[f"q{i}"]()) for i, k in enumerate(keys)}
    del keep
    assert got == want
    assert got["no-such-feature"] == (0, 0)


# --- the library ABI against what iree-compile 3.13 emits ---------------------------------


def _library(path: Path) -> tuple[elfmod.ElfFile, elfmod.LoadedElf, library.Library]:
    parsed = elfmod.read_elf(path.read_bytes(), str(path))
    image = elfmod.load(parsed)
    return parsed, image, library.Library(image.address(elfmod.QUERY_SYMBOL), str(path), None, image.readable,
                                          image)


def test_library_structs_match_the_pointers_3_13_relocates(built):
    """Every pointer field of the library struct that is set sits exactly where a RELATIVE
    relocation of the ELF writes, and no relocation lands inside the struct elsewhere."""
    parsed, image, lib = _library(built["elf"])
    try:
        base = ctypes.addressof(lib.v0) - image.bias
        size = ctypes.sizeof(library.LibraryV0T)
        relocated = {r.offset - base for r in parsed.relocations if base <= r.offset < base + size}

        def pointer_fields(ctype, offset=0):
            for name, t in ctype._fields_:
                f = getattr(ctype, name)
                if isinstance(t, type) and issubclass(t, ctypes.Structure):
                    yield from pointer_fields(t, offset + f.offset)
                elif t is ctypes.c_void_p:
                    yield offset + f.offset

        set_pointers = {off for off in pointer_fields(library.LibraryV0T)
                        if ctypes.c_uint64.from_address(image.bias + base + off).value}
        assert set_pointers == relocated
        assert {0, 32, 40, 64} <= relocated  # header, exports.ptrs, exports.attrs, exports.names
        assert lib.name == "matmul_linked"
        assert [e.name for e in lib.exports] == ["matmul_4x8x5_dispatch_0_matmul_4x5x8_f32",
                                                 "matmul_33x17x9_dispatch_0_matmul_33x9x17_f32",
                                                 "matmul_acc_dispatch_0_matmul_16x16x16_f32"]
        assert all(e.binding_count == 3 and e.constant_count == 0 for e in lib.exports)
        assert lib.required_constants == 0 and not lib.v0.imports.count
    finally:
        lib.close()
        image.close()


def test_the_query_answers_only_version_6(built):
    parsed, image, lib = _library(built["elf"])
    try:
        query = library.QUERY_FN(image.address(elfmod.QUERY_SYMBOL))
        env = ctypes.addressof(lib.environment)
        assert query(6, env) == ctypes.addressof(lib.v0)
        assert not query(5, env) and not query(7, env)  # 3.13: `max_version == 6`, not `<=`
    finally:
        lib.close()
        image.close()


def _aligned(x: np.ndarray, alignment: int = 64) -> np.ndarray:
    """A copy of `x` starting at an `alignment`-byte boundary: the code IREE compiles for a
    binding assumes its base is 64-byte aligned (aligned AVX-512 loads), as IREE's heap
    buffers and jitvm's HAL buffers are; numpy guarantees only 16, so an unaligned array
    faults some of the time."""
    raw = np.empty(x.nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    out = raw[start:start + x.nbytes].view(x.dtype).reshape(x.shape)
    out[...] = x
    return out


def test_one_export_called_for_one_workgroup(built):
    """Library.call runs one workgroup: matmul_4x8x5's grid is 1x1x1 and its bindings are
    (lhs, rhs, result); the result is IREE's, bit for bit."""
    from jitvm.runtime.exec.fpu import denormals_flushed

    m = built["corpus"]["matmul"]
    a, b = make_inputs(m, 0)
    oracle, keep = iree_session(built["embedded/matmul"], False)
    trapped, message, want = iree_call(oracle, "matmul_4x8x5", [a, b])
    assert not trapped, message
    parsed, image, lib = _library(built["elf"])
    try:
        arrays = [_aligned(a), _aligned(b), _aligned(np.zeros((4, 5), np.float32))]
        out = arrays[2]
        ptrs = (ctypes.c_void_p * 3)(*[x.ctypes.data for x in arrays])
        lengths = (ctypes.c_size_t * 3)(*[x.nbytes for x in arrays])
        state = library.DispatchStateT(workgroup_size_x=1, workgroup_size_y=1, workgroup_size_z=1,
                                       workgroup_count_x=1, workgroup_count_y=1, workgroup_count_z=1,
                                       max_concurrency=1, binding_count=3, binding_ptrs=ctypes.addressof(ptrs),
                                       binding_lengths=ctypes.addressof(lengths))
        workgroup = library.WorkgroupStateT()
        with denormals_flushed():
            rc = lib.call(0, ctypes.addressof(state), ctypes.addressof(workgroup))
        assert rc == 0
        assert not same_result(out, want[0], 0)
    finally:
        lib.close()
        image.close()
        del keep


def test_environment_carries_iree_feature_bits():
    data = library.host_processor_data()
    have = library.host_features()
    for arch, field, bit, name in library.CPU_FEATURE_BITS:
        if arch == HOST.name:
            assert bool(data[field] >> bit & 1) == bool(have.get(name)), name
    assert data[1:] == (0,) * 7


def test_segments_get_their_protections(built):
    parsed, image, lib = _library(built["elf"])
    try:
        maps = {}
        for line in Path("/proc/self/maps").read_text().splitlines():
            span, perms = line.split()[:2]
            lo, hi = (int(x, 16) for x in span.split("-"))
            if image.base <= lo < image.base + image.size:
                maps[lo - image.base] = perms[:3]
        code = image.address(elfmod.QUERY_SYMBOL) - image.base
        code_map = max(off for off in maps if off <= code)
        assert maps[code_map] == "r-x"
        assert all(p in ("r--", "r-x", "rw-") for p in maps.values()) and "rwx" not in maps.values()
        relro = parsed.relro[0][0] + image.bias - image.base if parsed.relro else None
        if relro is not None:
            assert maps[max(off for off in maps if off <= relro)] == "r--"
    finally:
        lib.close()
        image.close()


def test_cross_architecture_elf_reads_but_does_not_run(built):
    data = built["cross_elf"].read_bytes()
    parsed = elfmod.read_elf(data, "cross")
    assert parsed.machine is not HOST and parsed.relocations
    assert {r.type for r in parsed.relocations} == {parsed.machine.relative}
    with pytest.raises(jitvm.UnsupportedError, match=rf"is an {parsed.machine.name} executable; this host is "
                                                     rf"{HOST.name}"):
        elfmod.load(parsed)
    image = elfmod.map_image(parsed)  # relocated, never run
    try:
        for r in parsed.relocations:
            assert ctypes.c_uint64.from_address(image.bias + r.offset).value == image.bias + r.addend
        for s in parsed.segments:  # file bytes copied, the rest (.bss) zero
            mem = ctypes.string_at(image.bias + s.vaddr, s.memsz)
            relocated = {r.offset - s.vaddr + k for r in parsed.relocations for k in range(8)}
            want = data[s.offset:s.offset + s.filesz] + bytes(s.memsz - s.filesz)
            assert all(a == b for i, (a, b) in enumerate(zip(mem, want)) if i not in relocated)
    finally:
        image.close()


# --- malformed ELF files -----------------------------------------------------------------


def _header(data: bytes):
    return elfmod.EHDR.read(data, 0, "header")


def _set(data: bytes, offset: int, fmt: str, *values) -> bytes:
    b = bytearray(data)
    struct.pack_into("<" + fmt, b, offset, *values)
    return bytes(b)


def _phdr_offset(data: bytes, want_type: int, nth: int = 0) -> int:
    h = _header(data)
    hits = [h.phoff + i * 56 for i in range(h.phnum)
            if struct.unpack_from("<I", data, h.phoff + i * 56)[0] == want_type]
    return hits[nth]


def _rela_file_offset(data: bytes) -> int:
    parsed = elfmod.read_elf(data)
    at = parsed.tags[7]  # DT_RELA
    seg = next(s for s in parsed.segments if s.vaddr <= at < s.vaddr + s.filesz)
    return seg.offset + at - seg.vaddr


def _mutations():
    def truncated_header(d):
        return d[:40]

    def truncated_segments(d):
        return d[:len(d) // 3]

    def phdr_table_beyond_file(d):
        return _set(d, 32, "Q", len(d) - 10)  # e_phoff

    def load_offset_beyond_file(d):
        return _set(d, _phdr_offset(d, elfmod.PT_LOAD, 1) + 8, "Q", len(d) + 0x1000)  # p_offset

    def relocation_outside_segments(d):
        return _set(d, _rela_file_offset(d), "Q", 0x7FFF0000)  # r_offset of the first relocation

    def unsupported_relocation(d):
        off = _rela_file_offset(d)
        return _set(d, off + 8, "Q", 2 if HOST.name == "x86_64" else 261)  # R_X86_64_PC32 / R_AARCH64_PREL32

    def missing_query_symbol(d):
        return d.replace(b"iree_hal_executable_library_query\0", b"iree_hal_executable_library_querz\0")

    def wrong_machine(d):
        return _set(d, 18, "H", 40)  # EM_ARM

    def not_elf(d):
        return b"\x7fELG" + d[4:]

    def writable_code(d):
        off = _phdr_offset(d, elfmod.PT_LOAD, 1)
        return _set(d, off + 4, "I", elfmod.PF_R | elfmod.PF_W | elfmod.PF_X)

    def no_dynamic(d):
        return _set(d, _phdr_offset(d, elfmod.PT_DYNAMIC), "I", 0)  # PT_NULL

    reloc_name = "R_X86_64_PC32" if HOST.name == "x86_64" else "R_AARCH64_PREL32"
    return [
        (truncated_header, jitvm.FormatError, r"truncated: 40 bytes, the ELF header alone needs 64"),
        (truncated_segments, jitvm.FormatError, r"(program header \d+ \(PT_LOAD\) file range .* exceeds the "
                                                r"\d+-byte file|section header table .* exceeds)"),
        (phdr_table_beyond_file, jitvm.FormatError, r"program header table \[0x[0-9a-f]+, 0x[0-9a-f]+\) "
                                                    r"\(\d+ entries at e_phoff\) exceeds the \d+-byte file"),
        (load_offset_beyond_file, jitvm.FormatError, r"program header \d+ \(PT_LOAD\) file range .* exceeds"),
        (relocation_outside_segments, jitvm.FormatError, r"DT_RELA relocation 0 \(offset 0x7fff0000\) writes 8 "
                                                         r"bytes at .* outside every loaded segment"),
        (unsupported_relocation, jitvm.UnsupportedError, rf"DT_RELA relocation 0 .* has type \d+ \({reloc_name}\), "
                                                         r"which this loader does not apply"),
        (missing_query_symbol, jitvm.FormatError, r"does not export `iree_hal_executable_library_query`"),
        (wrong_machine, jitvm.UnsupportedError, r"ELF machine 40 \(arm \(32-bit\); e_machine at offset 18\)"),
        (not_elf, jitvm.FormatError, r"not an ELF file"),
        (writable_code, jitvm.UnsupportedError, r"is both writable and executable"),
        (no_dynamic, jitvm.FormatError, r"has no PT_DYNAMIC segment"),
    ]


@pytest.mark.parametrize("mutate,error,message", _mutations(), ids=lambda v: getattr(v, "__name__", ""))
def test_malformed_elf_is_a_clear_error(built, mutate, error, message):
    data = mutate(built["elf"].read_bytes())
    with pytest.raises(error, match=message) as info:
        elfmod.read_elf(data, "<test.so>")
    assert str(info.value).startswith("<test.so>: ")


def _module_with_elf(built, tmp_path, mutate) -> Path:
    """The matmul module with its embedded ELF changed in place (same length)."""
    vmfb = built["embedded/matmul"].read_bytes()
    elf = built["elf"].read_bytes()
    at = vmfb.find(elf)
    assert at >= 0, "the module stores its ELF verbatim"
    changed = mutate(elf)
    assert len(changed) == len(elf)
    path = tmp_path / "patched.vmfb"
    path.write_bytes(vmfb[:at] + changed + vmfb[at + len(elf):])
    return path


def test_malformed_elf_in_a_module_fails_its_load(built, tmp_path):
    path = _module_with_elf(built, tmp_path, lambda d: _set(d, _rela_file_offset(d), "Q", 0x7FFF0000))
    with pytest.raises(jitvm.FormatError, match=r"<embedded-elf-\w+ executable>: DT_RELA relocation 0"):
        jitvm.load(str(path))


def _header_offset(built) -> int:
    """The file offset of the library header (located by running the real library once)."""
    parsed, image, lib = _library(built["elf"])
    try:
        vaddr = lib.v0.header - image.bias
    finally:
        lib.close()
        image.close()
    seg = next(s for s in parsed.segments if s.vaddr <= vaddr < s.vaddr + s.filesz)
    return seg.offset + vaddr - seg.vaddr


@pytest.mark.parametrize("field,value,message", [
    (0, 7, r"built for executable library version 7 \(a newer IREE\); this runtime implements version 6"),
    (16, 1, r"requires library features 0x1"),
    (20, 1, r"built for the address sanitizer"),
])
def test_library_header_is_checked(built, tmp_path, field, value, message):
    at = _header_offset(built)
    path = _module_with_elf(built, tmp_path, lambda d: _set(d, at + field, "I", value))
    with pytest.raises(jitvm.UnsupportedError, match=message):
        jitvm.load(str(path))


@pytest.mark.skipif(HOST.name != "x86_64", reason="patches x86_64 machine code")
def test_library_refusing_version_6_is_unsupported(built, tmp_path):
    def refuse(d):
        parsed = elfmod.read_elf(d)
        q = parsed.query_symbol()
        seg = parsed.segment_of(q.value, q.size)
        start = seg.offset + q.value - seg.vaddr
        code = d[start:start + q.size]
        assert code.count(b"\x83\xff\x06") == 1  # cmp edi, 6
        return d[:start] + code.replace(b"\x83\xff\x06", b"\x83\xff\x07") + d[start + q.size:]

    with pytest.raises(jitvm.UnsupportedError, match=r"does not support runtime version 6"):
        jitvm.load(str(_module_with_elf(built, tmp_path, refuse)))


def test_random_damage_never_escapes_as_a_bare_exception(built):
    from hypothesis import given, settings, strategies as st

    data = built["elf"].read_bytes()

    @settings(max_examples=300, deadline=None)
    @given(st.integers(0, len(data)), st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)),
                                              max_size=8))
    def damaged(cut, flips):
        b = bytearray(data[:cut])
        for at, value in flips:
            if at < len(b):
                b[at] = value
        try:
            elfmod.read_elf(bytes(b), "<damaged>")
        except (jitvm.FormatError, jitvm.UnsupportedError):
            pass

    damaged()


# --- structural mutants, loaded in worker processes ------------------------------------------


def _elf_campaign(seeds: list[bytes], count: int, seed: int) -> tuple[dict, list]:
    from collections import Counter

    from jitvm.fuzz.mutation import BUG, CRASH, HANG, MutantPool
    from jitvm.fuzz.mutation.elf_fields import mutants

    made = {key: (data, what) for key, data, what in mutants(seeds, count, seed)}
    outcomes, findings = Counter(), []
    with MutantPool("elf", workers=2, timeout=60.0, batch=16, options={"seeds": seeds}) as pool:
        for key, (status, detail, _) in pool.run((k, d) for k, (d, _) in made.items()):
            outcomes[status] += 1
            if status in (BUG, CRASH, HANG):
                findings.append(f"{status} ({made[key][1]}): {detail[-600:]}")
    return dict(outcomes), findings


def test_structural_elf_mutants_never_crash_or_hang(built):
    """500 mutants of the matmul ELF's headers, dynamic entries, relocations and symbols,
    each loaded in a worker process: rejected with a jitvm.Error, or loaded."""
    outcomes, findings = _elf_campaign([built["elf"].read_bytes()], 500, 21)
    assert not findings, "\n".join(findings)
    assert outcomes.get("rejected", 0) > 100 and outcomes.get("accepted", 0) > 50, outcomes


@pytest.mark.slow
def test_two_thousand_elf_mutants_of_seven_programs(tmp_path):
    """Issue 21's campaign (bench/elf_mutants.py runs it too): 2,000 structural mutants of the
    embedded ELFs of seven corpus programs: 0 crashes, 0 hangs, every rejection a jitvm.Error."""
    from jitvm.fuzz.mutation.elf_fields import seed_elfs

    names = ["matmul", "conv2d", "softmax", "reductions", "elementwise_f32", "quant_matmul_i8", "dynamic_shapes"]
    root = Path(__file__).resolve().parent / "corpus" / "mlir"
    seeds = seed_elfs([root / f"{n}.mlir" for n in names], tmp_path)
    outcomes, findings = _elf_campaign(seeds, 2000, 2026)
    assert not findings, "\n".join(findings)
    assert sum(outcomes.values()) == 2000
