"""`jitvm run`'s results as iree-run-module handles them: printed, saved, or compared.

Without --output or --expected_output every result prints as `result[i]: ...`. With
--output there is one per result: `-` prints it, `@FILE.npy` saves it (and prints nothing).
--expected_output (one per result, `(ignored)` skips one) compares instead: element type
and shape exactly, integers exactly, floats within iree-run-module's default thresholds;
then `[SUCCESS] ...` or one `[FAILED] result[i]: ...` per mismatch and exit status 1.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from ..runtime.modules.hal import types as hal_types
from ..runtime.modules.hal.buffer_view import (HalBufferView, format_element, format_float_upper, nest_elements,
                                               shape_prefix)
from ..runtime.vm.objects import Ref
from .values import format_result, parse_input

THRESHOLDS = {np.dtype(np.float16): 0.001, np.dtype(np.float32): 0.0001, np.dtype(np.float64): 0.0001}
IGNORED = "(ignored)"
_CODE_DECLS = {"i": "i32", "I": "i64", "f": "f32", "F": "f64"}


def save_npy(path: str, value) -> None:
    array = value.payload.to_numpy() if isinstance(value, Ref) and isinstance(value.payload, HalBufferView) \
        else np.asarray(value)
    try:
        np.save(path, array)
    except OSError as e:
        raise ArgumentError(f"--output=@{path}: cannot write ({e.strerror or e})") from None


def emit(targets: list[str], codes, results: list) -> None:
    """Prints and saves the results as --output says (no --output: print them all)."""
    if not targets:
        for i, (code, value) in enumerate(zip(codes, results)):
            print(format_result(i, code, value))
        return
    if len(targets) != len(results):
        raise ArgumentError(f"{len(targets)} outputs specified but the function returns {len(results)} results")
    for i, (target, code, value) in enumerate(zip(targets, codes, results)):
        if target in ("", "-"):
            print(format_result(i, code, value).split(": ", 1)[1])
        elif target.startswith("@"):
            save_npy(target[1:], value)
        else:
            raise ArgumentError(f"--output={target}: write @FILE.npy to save a result, - to print it")


def _view_text(view: HalBufferView) -> str:
    return view.format()


def _compare_view(i: int, text: str, view: HalBufferView) -> str | None:
    m_shape = text.split("=", 1)[0]
    expected = parse_input(text, None, "r")
    if not isinstance(expected, np.ndarray):
        return f"result[{i}]: expected a tensor (SHAPExTYPE=...), got {text!r}"
    want_type = hal_types.MLIR_ELEMENT_TYPES.get(m_shape.split("x")[-1])
    got_meta = shape_prefix(view.shape, view.element_type)
    text = f"{m_shape}={nest_elements([format_element(v, expected.dtype) for v in expected.reshape(-1)], expected.shape)}"
    if want_type != view.element_type or tuple(expected.shape) != tuple(view.shape):
        return (f"result[{i}]: metadata is {got_meta}; expected that the view matches {m_shape}; expected that the "
                f"view is equal to contents of a view of {m_shape}\n  expected:\n{text}\n  actual:\n{_view_text(view)}")
    actual = view.to_numpy().reshape(-1)
    want = expected.reshape(-1)
    threshold = THRESHOLDS.get(actual.dtype)
    for k, (a, w) in enumerate(zip(actual, want)):
        same = abs(float(a) - float(w)) < threshold if threshold is not None else a == w
        if threshold is not None and np.isnan(a) and np.isnan(w):
            same = True
        if not same:
            shown = (format_float_upper(float(a)), format_float_upper(float(w))) if threshold is not None \
                else (str(a), str(w))
            return (f"result[{i}]: element at index {k} ({shown[0]}) does not match the expected ({shown[1]}); "
                    f"expected that the view is equal to contents of a view of {m_shape}\n  expected:\n"
                    f"{text}\n  actual:\n{_view_text(view)}")
    return None


def _compare_scalar(i: int, text: str, code: str, value) -> str | None:
    typ = _CODE_DECLS[code]
    body = text.split("=", 1)[1] if text.startswith(typ + "=") else text
    want = parse_input(body, None, code)
    if code in "fF":
        same = abs(float(value) - float(want)) < 0.0001 or (np.isnan(value) and np.isnan(want))
    else:
        same = int(value) == int(want)
    return None if same else f"result[{i}]: value {value} does not match the expected {typ}={want}"


def check_expected(expected: list[str], codes, results: list) -> int:
    """Compares every result with its --expected_output; prints the verdict; 0 or 1."""
    if len(expected) != len(results):
        raise ArgumentError(f"{len(expected)} expected outputs specified but the function returns "
                            f"{len(results)} results")
    failures = []
    for i, (text, code, value) in enumerate(zip(expected, codes, results)):
        if text == IGNORED:
            continue
        if code == "r":
            view = value.payload if isinstance(value, Ref) else None
            failure = _compare_view(i, text, view) if isinstance(view, HalBufferView) else \
                f"result[{i}]: expected a buffer view, got {format_result(i, code, value).split(': ', 1)[1]}"
        else:
            failure = _compare_scalar(i, text, code, value)
        if failure:
            failures.append(failure)
    for failure in failures:
        print(f"[FAILED] {failure}")
    if not failures:
        print("[SUCCESS] all function outputs matched their expected values.")
    return 1 if failures else 0
