"""The `check` native module: the check dialect's expectations, for `jitvm check` tests.

Semantics are IREE's: exact equality compares element type, shape and bytes; near
equality is NumPy's isclose with the expected value on the right (|lhs - rhs| <=
atol + rtol * |rhs|, NaN equal to NaN, infinities only equal to themselves). A failed
expectation raises jitvm.Trap at once, with a diff naming the first mismatching indices.
"""

from __future__ import annotations

import numpy as np

from ...errors import STATUS_CODES, Trap
from ..vm.interface import NativeModule, export
from .hal.buffer_view import HalBufferView, shape_prefix
from .hal.errors import deref
from .hal import types as t

CHECK_MODULE_VERSION = 0
MAX_LISTED = 8  # mismatching positions shown in a diff


def _fail(message: str) -> Trap:
    return Trap(STATUS_CODES["FAILED_PRECONDITION"], message)


def _describe(view: HalBufferView) -> str:
    return shape_prefix(view.shape, view.element_type)


def _values(view: HalBufferView, what: str) -> np.ndarray:
    if view.dtype is None:
        raise Trap(STATUS_CODES["INVALID_ARGUMENT"], f"{what}: unsupported element type "
                                                     f"{t.element_type_name(view.element_type)}")
    return view.to_numpy()


def _preview(a: np.ndarray) -> str:
    return np.array2string(a, threshold=64, edgeitems=4, max_line_width=100, separator=" ").replace("\n", "\n    ")


def mismatch_report(lhs: np.ndarray, rhs: np.ndarray, bad: np.ndarray) -> str:
    """The first mismatching indices with both values, and how many there are in all."""
    where = np.argwhere(bad)
    lines = [f"{len(where)} of {bad.size} elements differ; first at:"]
    for idx in where[:MAX_LISTED]:
        key = tuple(int(i) for i in idx)
        lines.append(f"  [{', '.join(map(str, key))}]: lhs={lhs[key].item()!r} rhs={rhs[key].item()!r}")
    if len(where) > MAX_LISTED:
        lines.append(f"  ... and {len(where) - MAX_LISTED} more")
    return "\n".join(lines)


def _header_mismatch(kind: str, lv: HalBufferView, rv: HalBufferView, a, b) -> str:
    what = []
    if lv.element_type != rv.element_type:
        what.append("Element types do not match.")
    if lv.shape != rv.shape:
        what.append("Shapes do not match.")
    return (f"Expected {kind} of these values. {' '.join(what)}\n  lhs: {_describe(lv)}\n    {_preview(a)}\n"
            f"  rhs: {_describe(rv)}\n    {_preview(b)}")


def bytewise_different(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Per element: do the stored bytes differ (so -0.0 != 0.0 and NaN payloads count)."""
    width = max(1, lhs.dtype.itemsize)
    a = np.frombuffer(np.ascontiguousarray(lhs).tobytes(), np.uint8).reshape(-1, width)
    b = np.frombuffer(np.ascontiguousarray(rhs).tobytes(), np.uint8).reshape(-1, width)
    return (a != b).any(axis=1).reshape(lhs.shape)


def almost_equal(lhs: np.ndarray, rhs: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """Elementwise IREE fuzzy compare (computed in double, like iree_math_fuzzy_compare_f64)."""
    a, b = lhs.astype(np.float64), rhs.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(a - b) <= atol + rtol * np.abs(b)
    return (a == b) | (np.isnan(a) & np.isnan(b)) | (np.isfinite(b) & close)


class CheckModule(NativeModule):
    name = "check"
    version = CHECK_MODULE_VERSION

    @export("expect_true", "0i_v")
    def expect_true(self, operand):
        if not operand:
            raise _fail(f"check.expect_true failed: expected {operand} to be nonzero")

    @export("expect_false", "0i_v")
    def expect_false(self, operand):
        if operand:
            raise _fail(f"check.expect_false failed: expected {operand} to be zero")

    @export("expect_all_true", "0rr_v")
    def expect_all_true(self, device, operand):
        view = deref(operand, HalBufferView, "check.expect_all_true")
        values = _values(view, "check.expect_all_true")
        bad = values == 0
        if bad.any():
            raise _fail(f"check.expect_all_true failed: {_describe(view)} has zero elements\n"
                        f"{mismatch_report(values, np.ones_like(values), bad)}\n  value:\n    {_preview(values)}")

    @export("expect_eq", "0rrr_v")
    def expect_eq(self, device, lhs, rhs):
        lv = deref(lhs, HalBufferView, "check.expect_eq lhs")
        rv = deref(rhs, HalBufferView, "check.expect_eq rhs")
        a, b = _values(lv, "check.expect_eq lhs"), _values(rv, "check.expect_eq rhs")
        if lv.element_type != rv.element_type or lv.shape != rv.shape:
            raise _fail("check.expect_eq failed: " + _header_mismatch("equality", lv, rv, a, b))
        bad = bytewise_different(a, b)
        if bad.any():
            raise _fail(f"check.expect_eq failed: Expected equality of these values. Contents does not match.\n"
                        f"{mismatch_report(a, b, bad)}\n  lhs: {_describe(lv)}\n    {_preview(a)}\n"
                        f"  rhs: {_describe(rv)}\n    {_preview(b)}")

    @export("expect_almost_eq", "0rrrff_v")
    def expect_almost_eq(self, device, lhs, rhs, atol, rtol):
        lv = deref(lhs, HalBufferView, "check.expect_almost_eq lhs")
        rv = deref(rhs, HalBufferView, "check.expect_almost_eq rhs")
        a, b = _values(lv, "check.expect_almost_eq lhs"), _values(rv, "check.expect_almost_eq rhs")
        if lv.element_type != rv.element_type or lv.shape != rv.shape:
            raise _fail("check.expect_almost_eq failed: " + _header_mismatch("near equality", lv, rv, a, b))
        if a.dtype.kind != "f":
            raise Trap(STATUS_CODES["INVALID_ARGUMENT"], f"check.expect_almost_eq: unsupported element type "
                                                         f"{t.element_type_name(lv.element_type)}")
        bad = ~almost_equal(a, b, atol, rtol)
        if bad.any():
            raise _fail(f"check.expect_almost_eq failed: Expected near equality of these values. Contents does "
                        f"not match to tolerance parameters atol={atol:g}, rtol={rtol:g}.\n"
                        f"{mismatch_report(a, b, bad)}\n  lhs: {_describe(lv)}\n    {_preview(a)}\n"
                        f"  rhs: {_describe(rv)}\n    {_preview(b)}")
