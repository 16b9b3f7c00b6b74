"""arm64 CPU features as the Linux kernel reports them (AT_HWCAP / AT_HWCAP2), as IREE reads them.

On arm64 the CPU's ID registers are not readable from user space; IREE asks the kernel
(getauxval, runtime/src/iree/base/internal/cpu.c). LLVM's host detection reads
/proc/cpuinfo instead, which user-mode emulation (qemu-aarch64) shows from the x86 host:
there LLVM sees no arm64 feature at all. So on arm64 Linux both the JIT's code generation
(runtime.native.target) and the HAL's `hal.cpu` answers (modules.hal.library) take their
features from here, the same bits IREE's runtime sees.

Bit numbers: the kernel's uapi/asm/hwcap.h (docs.kernel.org/arch/arm64/elf_hwcaps.html);
names: LLVM's AArch64 subtarget features.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from functools import lru_cache

from . import clib

AT_HWCAP = 16
AT_HWCAP2 = 26

#: (auxiliary vector word, bit, LLVM feature name): one row per kernel hwcap jitvm uses.
HWCAP_FEATURES: tuple[tuple[int, int, str], ...] = (
    (AT_HWCAP, 0, "fp-armv8"), (AT_HWCAP, 1, "neon"), (AT_HWCAP, 3, "aes"),
    (AT_HWCAP, 6, "sha2"), (AT_HWCAP, 7, "crc"), (AT_HWCAP, 8, "lse"),
    (AT_HWCAP, 10, "fullfp16"), (AT_HWCAP, 12, "rdm"), (AT_HWCAP, 13, "jsconv"),
    (AT_HWCAP, 14, "complxnum"), (AT_HWCAP, 15, "rcpc"), (AT_HWCAP, 16, "ccpp"),
    (AT_HWCAP, 17, "sha3"), (AT_HWCAP, 19, "sm4"), (AT_HWCAP, 20, "dotprod"),
    (AT_HWCAP, 22, "sve"), (AT_HWCAP, 23, "fp16fml"), (AT_HWCAP, 24, "dit"),
    (AT_HWCAP, 27, "flagm"), (AT_HWCAP, 28, "ssbs"), (AT_HWCAP, 29, "sb"),
    (AT_HWCAP2, 0, "ccdp"), (AT_HWCAP2, 1, "sve2"), (AT_HWCAP2, 2, "sve-aes"),
    (AT_HWCAP2, 4, "sve2-bitperm"), (AT_HWCAP2, 5, "sve2-sha3"), (AT_HWCAP2, 6, "sve2-sm4"),
    (AT_HWCAP2, 8, "fptoint"), (AT_HWCAP2, 10, "f32mm"), (AT_HWCAP2, 11, "f64mm"),
    (AT_HWCAP2, 13, "i8mm"), (AT_HWCAP2, 14, "bf16"), (AT_HWCAP2, 16, "rand"),
    (AT_HWCAP2, 17, "bti"), (AT_HWCAP2, 23, "sme"), (AT_HWCAP2, 24, "sme-i16i64"),
    (AT_HWCAP2, 25, "sme-f64f64"), (AT_HWCAP2, 36, "sve2p1"), (AT_HWCAP2, 37, "sme2"),
    (AT_HWCAP2, 38, "sme2p1"), (AT_HWCAP2, 42, "sme-f16f16"),
)


def is_arm64_linux() -> bool:
    return sys.platform.startswith("linux") and platform.machine().lower() in ("aarch64", "arm64")


def features_from(hwcap: int, hwcap2: int) -> dict[str, bool]:
    """LLVM feature name -> present, for every row of HWCAP_FEATURES."""
    words = {AT_HWCAP: hwcap, AT_HWCAP2: hwcap2}
    return {name: bool((words[word] >> bit) & 1) for word, bit, name in HWCAP_FEATURES}


def llvm_feature_string(features: dict[str, bool]) -> str:
    """`+neon,+lse,-sve,...`: the form LLVM's target machines take."""
    return ",".join(("+" if on else "-") + name for name, on in features.items())


@lru_cache(maxsize=1)
def read() -> tuple[int, int] | None:
    """(AT_HWCAP, AT_HWCAP2) of this process on arm64 Linux, else None."""
    if not is_arm64_linux():
        return None
    getauxval = clib.function("getauxval", ctypes.c_ulong, [ctypes.c_ulong])
    return getauxval(AT_HWCAP), getauxval(AT_HWCAP2)


def host_features() -> dict[str, bool] | None:
    """The kernel's view of this arm64 CPU (LLVM names), or None on other hosts."""
    words = read()
    return None if words is None else features_from(*words)
