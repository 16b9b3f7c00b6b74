"""The ``check`` module for IREE's own runtime, whose Python package does not ship one:
without it the oracle could not run the corpus's check-dialect programs.

Written with ``iree.runtime.PyModuleInterface``; expect_true/false/all_true/eq/almost_eq
with IREE's semantics (exact equality, or ``|a - b| <= atol + rtol * |b|`` per element).
"""

from __future__ import annotations

import numpy as np


class CheckFailure(AssertionError):
    pass


def make_check_module(config, failures: list[str] | None = None):
    """A VM module named ``check`` implementing the check dialect's imports in Python.

    Each failed expectation appends a message to ``failures`` (if given) and raises, which
    makes the calling VM function fail.
    """
    import iree.runtime as rt

    device = config.device

    def to_numpy(ref):
        bv = ref.deref(rt.HalBufferView)
        return rt.DeviceArray(device, bv, implicit_host_transfer=True).to_host()

    def fail(msg):
        if failures is not None:
            failures.append(msg)
        raise CheckFailure(msg)

    class CheckMethods:
        def __init__(self, iface):
            self.iface = iface

        def expect_true(self, v):
            if not v:
                fail(f"expect_true: got {v}")

        def expect_false(self, v):
            if v:
                fail(f"expect_false: got {v}")

        def expect_all_true(self, dev, ref):
            a = to_numpy(ref)
            if not np.all(a != 0):
                fail(f"expect_all_true: {a!r}")

        def expect_eq(self, dev, lhs, rhs):
            a, b = to_numpy(lhs), to_numpy(rhs)
            if a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(a, b):
                fail(f"expect_eq:\n lhs={a!r}\n rhs={b!r}")

        def expect_almost_eq(self, dev, lhs, rhs, atol, rtol):
            a, b = to_numpy(lhs), to_numpy(rhs)
            if a.shape != b.shape or a.dtype != b.dtype:
                fail(f"expect_almost_eq: shape/type mismatch {a.shape}{a.dtype} vs {b.shape}{b.dtype}")
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            ok = np.abs(a64 - b64) <= atol + rtol * np.abs(b64)
            ok |= np.isnan(a64) & np.isnan(b64)
            if not np.all(ok):
                fail(f"expect_almost_eq (atol={atol}, rtol={rtol}):\n lhs={a!r}\n rhs={b!r}")

    iface = rt.PyModuleInterface("check", CheckMethods)
    iface.export("expect_true", "0i_v", CheckMethods.expect_true)
    iface.export("expect_false", "0i_v", CheckMethods.expect_false)
    iface.export("expect_all_true", "0rr_v", CheckMethods.expect_all_true)
    iface.export("expect_eq", "0rrr_v", CheckMethods.expect_eq)
    iface.export("expect_almost_eq", "0rrrff_v", CheckMethods.expect_almost_eq)
    return iface.create()
