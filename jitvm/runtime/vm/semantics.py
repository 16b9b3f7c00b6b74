"""Host-dependent facts of IREE's VM semantics that both backends must share.

IREE's C runtime computes `vm.fma.f32/f64` with a fused multiply-add only where the C
library defines FP_FAST_FMA(F) (hardware FMA in the baseline ISA: aarch64); on x86_64 it is
a multiply and an add, each rounded. Measured against iree-base-runtime 3.13 on x86_64:
fma(1+2^-23, 1-2^-23, -1) returns 0.0 (unfused), not -2^-46.
"""

from __future__ import annotations

import platform

_ARM = platform.machine().lower() in ("aarch64", "arm64")
FUSED_FMA = _ARM

# C's float -> unsigned conversion as IREE's build compiles it: x86_64 uses clang's pair of
# signed conversions (exact below 2^64; NaN, inf and larger: INT64_MIN), aarch64 saturates.
# Measured on x86_64 against iree-base-runtime 3.13: vm.cast.f32.ui64(2e19) ==
# vm.cast.f32.ui64(nan) == INT64_MIN, vm.cast.f32.ui64(1e19) == 9999999980506447872.
FLOAT_TO_INT_SATURATES = _ARM

# Deepest chain of VM calls before a call fails with RESOURCE_EXHAUSTED (IREE bounds its
# stack by bytes; jitvm by frames, the same in both backends).
MAX_CALL_DEPTH = 512
