"""The check module's expectations, called directly with buffer views.

Near equality follows IREE (NumPy's isclose with the expected value on the right, NaN equals
NaN, infinities only themselves); exact equality compares bytes, element type and shape.
Failures are jitvm.Trap messages that show the first mismatching indices and both values.
"""

from __future__ import annotations

import numpy as np
import pytest

from jitvm import Trap
from jitvm.api.marshal import array_to_view
from jitvm.runtime.modules import CheckModule, HalModule
from jitvm.runtime.modules.check import almost_equal
from jitvm.runtime.modules.hal import types as t


@pytest.fixture(scope="module")
def mods():
    return HalModule(None), CheckModule()


def view(hal, a):
    a = np.asarray(a)
    return array_to_view(hal, a, t.ELEMENT_OF_NUMPY[a.dtype])


def expect(mods, name, *args):
    hal, check = mods
    dev = hal.devices[0]
    wrapped = [view(hal, a) if isinstance(a, (list, np.ndarray)) else a for a in args]
    needs_device = name not in ("expect_true", "expect_false")
    check.lookup(name).call(([dev] if needs_device else []) + wrapped)


def test_scalar_expectations(mods):
    expect(mods, "expect_true", 3)
    expect(mods, "expect_false", 0)
    with pytest.raises(Trap, match="check.expect_true failed: expected 0 to be nonzero"):
        expect(mods, "expect_true", 0)
    with pytest.raises(Trap, match="check.expect_false failed: expected -1 to be zero"):
        expect(mods, "expect_false", -1)


def test_expect_all_true_lists_the_zeros(mods):
    expect(mods, "expect_all_true", np.array([1, -1, 5], np.int32))
    with pytest.raises(Trap, match=r"4xsi32 has zero elements\n2 of 4 elements differ; first at:\n  \[1\]: lhs=0"):
        expect(mods, "expect_all_true", np.array([1, 0, 2, 0], np.int32))


def test_expect_eq_is_bytewise_and_checks_type_and_shape(mods):
    expect(mods, "expect_eq", np.array([[1, 2], [3, 4]], np.int32), np.array([[1, 2], [3, 4]], np.int32))
    expect(mods, "expect_eq", np.array([np.nan], np.float32), np.array([np.nan], np.float32))
    with pytest.raises(Trap, match=r"1 of 2 elements differ; first at:\n  \[0\]: lhs=-0.0 rhs=0.0"):
        expect(mods, "expect_eq", np.array([-0.0, 1], np.float32), np.array([0.0, 1], np.float32))
    with pytest.raises(Trap, match=r"Expected equality of these values. Shapes do not match.\n  lhs: 2xsi32"):
        expect(mods, "expect_eq", np.array([1, 2], np.int32), np.array([[1, 2]], np.int32))
    with pytest.raises(Trap, match="Element types do not match"):
        expect(mods, "expect_eq", np.array([1, 2], np.int32), np.array([1, 2], np.float32))
    with pytest.raises(Trap, match=r"\[1, 0\]: lhs=7 rhs=3"):
        expect(mods, "expect_eq", np.array([[1, 2], [7, 4]], np.int64), np.array([[1, 2], [3, 4]], np.int64))


def test_almost_equal_semantics():
    lhs = np.array([1.0, 1.1, np.nan, np.inf, np.inf, 100.0, 0.0], np.float32)
    rhs = np.array([1.0, 1.0, np.nan, np.inf, -np.inf, 101.0, 1e-7], np.float32)
    assert almost_equal(lhs, rhs, 1e-5, 0.0).tolist() == [True, False, True, True, False, False, True]
    assert almost_equal(lhs, rhs, 0.0, 0.0099)[5] == np.bool_(False)  # rtol scales |rhs| = 101
    assert almost_equal(lhs, rhs, 0.0, 0.01)[5] == np.bool_(True)
    assert almost_equal(np.array([101.0]), np.array([100.0]), 0.0, 0.01)[0] == np.bool_(True)  # asymmetric
    assert almost_equal(np.array([1e-7]), np.array([0.0]), 1e-6, 0.0)[0] == np.bool_(True)


def test_expect_almost_eq_reports_tolerances_and_position(mods):
    expect(mods, "expect_almost_eq", np.array([1.0, 2.0], np.float64), np.array([1.0, 2.0000001], np.float64),
           1e-5, 0.0)
    with pytest.raises(Trap, match=r"atol=0.0001, rtol=0\.\n1 of 3 elements differ; first at:\n  \[2\]: "
                                   r"lhs=3.5 rhs=3.0"):
        expect(mods, "expect_almost_eq", np.array([1, 2, 3.5], np.float32), np.array([1, 2, 3], np.float32),
               1e-4, 0.0)
    with pytest.raises(Trap, match="unsupported element type si32"):
        expect(mods, "expect_almost_eq", np.array([1], np.int32), np.array([1], np.int32), 0.0, 0.0)
