"""arm64 feature detection from the kernel's hwcaps (runtime.native.hwcaps), on any host.

The bit numbers are the kernel's (uapi/asm/hwcap.h); the names must be features LLVM's
AArch64 target knows (an unknown one would only print a warning and be ignored), and every
arm64 feature of IREE's cpu_feature_bits table that the kernel reports must come from them,
so `hal.cpu` answers as IREE's runtime does. The emulated CPUs are checked against IREE's
own iree-cpuinfo in tests/test_aarch64.py.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from jitvm.runtime.modules.hal import library
from jitvm.runtime.modules.vmvx import mmt4d
from jitvm.runtime.native import hwcaps, target

# Bits IREE's runtime/src/iree/base/internal/cpu.c reads, with the IREE feature they set.
IREE_HWCAPS = {
    (hwcaps.AT_HWCAP, 0): "fp-armv8", (hwcaps.AT_HWCAP, 8): "lse", (hwcaps.AT_HWCAP, 10): "fullfp16",
    (hwcaps.AT_HWCAP, 20): "dotprod", (hwcaps.AT_HWCAP, 22): "sve", (hwcaps.AT_HWCAP, 23): "fp16fml",
    (hwcaps.AT_HWCAP2, 1): "sve2", (hwcaps.AT_HWCAP2, 4): "sve2-bitperm", (hwcaps.AT_HWCAP2, 10): "f32mm",
    (hwcaps.AT_HWCAP2, 11): "f64mm", (hwcaps.AT_HWCAP2, 13): "i8mm", (hwcaps.AT_HWCAP2, 14): "bf16",
    (hwcaps.AT_HWCAP2, 23): "sme", (hwcaps.AT_HWCAP2, 24): "sme-i16i64", (hwcaps.AT_HWCAP2, 25): "sme-f64f64",
    (hwcaps.AT_HWCAP2, 36): "sve2p1", (hwcaps.AT_HWCAP2, 37): "sme2", (hwcaps.AT_HWCAP2, 38): "sme2p1",
    (hwcaps.AT_HWCAP2, 42): "sme-f16f16",
}


def test_table_rows_are_unique():
    bits = [(w, b) for w, b, _ in hwcaps.HWCAP_FEATURES]
    names = [n for _, _, n in hwcaps.HWCAP_FEATURES]
    assert len(set(bits)) == len(bits) and len(set(names)) == len(names)


def test_iree_features_come_from_the_bits_iree_reads():
    table = {(w, b): n for w, b, n in hwcaps.HWCAP_FEATURES}
    for bit, name in IREE_HWCAPS.items():
        assert table.get(bit) == name, (bit, name)
    arm_names = {n for arch, _, _, n in library.CPU_FEATURE_BITS if arch == "aarch64"}
    assert set(IREE_HWCAPS.values()) == arm_names - {"lse128"}  # lse128: no hwcap (IREE never sets it)


@pytest.mark.parametrize("word,bit,name", hwcaps.HWCAP_FEATURES)
def test_one_bit_sets_one_feature(word, bit, name):
    hwcap, hwcap2 = (1 << bit, 0) if word == hwcaps.AT_HWCAP else (0, 1 << bit)
    features = hwcaps.features_from(hwcap, hwcap2)
    assert [n for n, on in features.items() if on] == [name]


def test_llvm_knows_every_feature_name():
    # LLVM prints "'+x' is not a recognized feature for this target" on stderr for unknown names.
    code = (
        "import llvmlite.binding as llvm\n"
        "from jitvm.runtime.native import hwcaps, target\n"
        "t = target.Target('aarch64-unknown-linux-gnu', 'generic', "
        "hwcaps.llvm_feature_string(hwcaps.features_from(2**64 - 1, 2**64 - 1)))\n"
        "m = llvm.parse_assembly('define i32 @f(i32 %x) {\\n %y = add i32 %x, 1\\n ret i32 %y\\n}')\n"
        "assert 'add' in target.machine(t).emit_assembly(m)\n"
        "bad = target.Target('aarch64-unknown-linux-gnu', 'generic', '+no-such-feature')\n"
        "target.machine(bad).emit_assembly(m)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    unknown = [line for line in r.stderr.splitlines() if "not a recognized feature" in line]
    assert unknown and all("no-such-feature" in line for line in unknown), r.stderr


def test_feature_string_spells_both_signs():
    s = hwcaps.llvm_feature_string({"neon": True, "sve": False})
    assert s == "+neon,-sve"


def test_host_reading_matches_the_machine():
    if hwcaps.is_arm64_linux():
        words = hwcaps.read()
        assert words is not None and words[0] & 1  # every arm64 Linux has FP
        assert target.host().features == hwcaps.llvm_feature_string(hwcaps.features_from(*words))
    else:
        assert hwcaps.read() is None and hwcaps.host_features() is None


@pytest.mark.parametrize("cpu,i8_tiles", [({}, (8, 1, 8)), ({"dotprod": True}, (8, 4, 8)),
                                          ({"dotprod": True, "i8mm": True}, (8, 8, 8))])
def test_vmvx_tile_sizes_follow_the_arm64_cpu(cpu, i8_tiles):
    tiles = mmt4d.matmul_tiles("aarch64", cpu)
    assert tiles[mmt4d.MATMUL_I8I8I32] == i8_tiles and tiles[mmt4d.MATMUL_F32F32F32] == (8, 1, 8)
    flags = mmt4d.MATMUL_I8I8I32
    m, k, n = i8_tiles
    assert mmt4d.query_tile_sizes(0, 0, flags | mmt4d.ROLE_LHS, tiles) == (m, k)
    assert mmt4d.query_tile_sizes(0, 0, flags | mmt4d.ROLE_RHS, tiles) == (n, k)
    assert mmt4d.query_tile_sizes(0, 0, flags | mmt4d.ROLE_RESULT, tiles) == (m, n)


def test_vmvx_mmt4d_fuses_where_each_build_does():
    import numpy as np

    # Tiles of 1x8x1 (fused on both hosts), 16x16x1 (x86: AVX-512's) and 8x8x4 (x86: the
    # generic tile, unfused; aarch64 fuses every tile): (1 + 2^-23) * (1 - 2^-23) - 1 is
    # -2^-46 fused and 0.0 rounded first.
    def run(m0, n0, k0, arch):
        lhs = np.zeros((1, 1, m0, k0), np.float32)
        rhs = np.zeros((1, 1, n0, k0), np.float32)
        lhs[..., 0], rhs[..., 0] = 1 + 2.0 ** -23, 1 - 2.0 ** -23
        out = np.full((1, 1, m0, n0), -1.0, np.float32)
        mmt4d.mmt4d(lhs, rhs, out, mmt4d.F32F32F32, True, arch=arch)
        return float(out[0, 0, 0, 0])

    assert run(1, 8, 1, "x86_64") == run(1, 8, 1, "aarch64") == -2.0 ** -46
    assert run(16, 16, 1, "x86_64") == run(16, 16, 1, "aarch64") == -2.0 ** -46
    assert run(8, 8, 4, "x86_64") == 0.0
    assert run(8, 8, 4, "aarch64") == -2.0 ** -46
