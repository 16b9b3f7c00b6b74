"""Opening a module costs its metadata, not its rodata: nothing past the FlatBuffer is read."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from jitvm.fuzz.corpus import require_tool

ELEMENTS = 2 * 1024 * 1024  # 8 MiB of i32 weights, stored as external rodata

PROBE = textwrap.dedent("""
    import sys
    from jitvm.frontend.module import load_module

    def mapped_rss_kib(path):
        rss, inside = 0, False
        for line in open("/proc/self/smaps"):
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5:
                inside = line.rstrip().endswith(path)
            elif inside and parts[0] == "Rss:":
                rss += int(parts[1])
        return rss

    path = sys.argv[1]
    m = load_module(path)
    for i in range(len(m.functions)):
        m.function_bytes(i)
    big = max(m.rodata, key=lambda r: r.length)
    opened = mapped_rss_kib(path)
    checksum = sum(bytes(big.data[::4096]))  # touch every page of the big segment
    touched = mapped_rss_kib(path)
    print(big.length, big.external, opened, touched, checksum)
""")


@pytest.fixture(scope="module")
def big_module(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("big")
    weights = np.random.default_rng(7).integers(-2**31, 2**31, ELEMENTS, dtype=np.int64).astype("<i4")
    mlir = d / "big.mlir"
    mlir.write_text(
        f'util.global private @w = dense<"0x{weights.tobytes().hex().upper()}"> : tensor<{ELEMENTS}xi32>\n'
        f"func.func @add(%x: tensor<{ELEMENTS}xi32>) -> tensor<{ELEMENTS}xi32> {{\n"
        f"  %w = util.global.load @w : tensor<{ELEMENTS}xi32>\n"
        f"  %r = arith.addi %x, %w : tensor<{ELEMENTS}xi32>\n"
        f"  return %r : tensor<{ELEMENTS}xi32>\n}}\n")
    out = d / "big.vmfb"
    subprocess.run([require_tool("iree-compile"), str(mlir), "--iree-hal-target-device=local",
                    "--iree-hal-local-target-device-backends=vmvx", "-o", str(out)], check=True)
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_open_touches_only_metadata(big_module):
    out = subprocess.run([sys.executable, "-c", PROBE, str(big_module)], capture_output=True, text=True,
                         check=True).stdout.split()
    length, external, opened_kib, touched_kib = int(out[0]), out[1] == "True", int(out[2]), int(out[3])
    assert external and length == ELEMENTS * 4
    # The FlatBuffer is a few KiB; the kernel may map a little around each fault (fault-around).
    assert opened_kib < 512, f"opening mapped {opened_kib} KiB of an {length >> 20} MiB module"
    # The measurement can see rodata pages once they are touched, so the bound above means something.
    assert touched_kib > length // 1024 // 2
