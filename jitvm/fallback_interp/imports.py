"""Calls from interpreted code to imports, one adapter per call site.

An adapter takes the raw values the call site passes (refs as owned references) and
returns raw results (refs owned by the caller): one value for a single result, a tuple
for several, None for none. Imports that are interpreted functions of another bytecode
instance are called directly with the caller's stack; natively implemented functions (the
HAL's) with the raw values in a slot array, through the same native entry compiled code
calls; anything else (native modules written in Python, JIT-compiled functions) through
`Function.call` with Python values, variadic spans as lists of tuples.
"""

from __future__ import annotations

import ctypes

from ..errors import STATUS_CODES, Error, Trap
from ..frontend.cconv import Span
from ..runtime.native.layout import TrapT
from ..runtime.vm import abi, nativelib, traps
from ..runtime.vm.bytecode import describe_frame
from ..runtime.vm.interface import NativeFunction


def _release_refs(codes, args) -> None:
    for code, raw in zip(codes, args):
        if code == "r" and raw:
            nativelib.fn.jv_release(raw)


def unresolved(site):
    """The adapter of a call to an optional import no module provides."""
    codes = site.arg_codes

    def call(stk, *args):
        _release_refs(codes, args)
        raise traps.make_trap(traps.UNRESOLVED_IMPORT, message=site.name)
    return call


def _group(site, segments, flat: list) -> list:
    """Flat argument values grouped per calling-convention position (spans as tuples)."""
    if not site.cconv.is_variadic:
        return flat
    out, i = [], 0
    for spec, size in zip(site.cconv.args, segments):
        if isinstance(spec, Span):
            n = len(spec.codes)
            out.append([tuple(flat[i + k * n:i + (k + 1) * n]) for k in range(size)])
            i += n * size
        else:
            out.append(flat[i])
            i += 1
    return out


def _result_raw(site, k: int, code: str, value) -> int:
    try:
        raw = abi.argument_slot(code, value, f"result {k} of {site.name}")
    except Error as e:
        raise Trap(STATUS_CODES["INTERNAL"], str(e)) from None
    if code == "r" and raw:
        nativelib.fn.jv_retain(raw)
    return raw


def through_python(site, fn, segments):
    """The adapter of an import called with Python values (`fn.call`)."""
    arg_codes = site.arg_codes
    result_codes = site.result_codes
    n = len(result_codes)

    def call(stk, *args):
        py = [abi.from_slot(code, raw, owned=True) for code, raw in zip(arg_codes, args)]
        try:
            out = fn.call(_group(site, segments, py))
        except Error:
            raise
        except Exception as e:  # noqa: BLE001 - a native module's Python failure becomes a trap
            raise Trap(STATUS_CODES["INTERNAL"], f"{type(e).__name__}: {e}") from e
        finally:
            del py
        if n == 0:
            return None
        if len(out) != n:
            raise Trap(STATUS_CODES["INTERNAL"], f"{site.name} returned {len(out)} results, expected {n}")
        if n == 1:
            return _result_raw(site, 0, result_codes[0], out[0])
        return tuple(_result_raw(site, k, c, v) for k, (c, v) in enumerate(zip(result_codes, out)))
    return call


_M32 = 0xFFFFFFFF


def through_native(site, fn: NativeFunction, segments):
    """The adapter of a natively implemented import: the call site's raw values go into a
    slot array as they are (a span's count before its tuples), the native entry runs, and
    the argument refs the call site handed over are released."""
    address, ctx = fn.native_entry()
    call = abi.NATIVE_FN(address)
    arg_codes, result_codes = site.arg_codes, site.result_codes
    positions, counts, slot = [], [], 0  # the slot of each raw argument; (slot, count) of each span
    for spec, size in zip(site.cconv.args, segments or [None] * len(site.cconv.args)):
        if isinstance(spec, Span):
            counts.append((slot, size))
            positions.extend(range(slot + 1, slot + 1 + size * len(spec.codes)))
            slot += 1 + size * len(spec.codes)
        else:
            positions.append(slot)
            slot += 1
    nslots = slot
    ref_args = [k for k, code in enumerate(arg_codes) if code == "r"]
    SlotArray = ctypes.c_uint64 * max(1, nslots)  # noqa: N806
    ResultArray = ctypes.c_uint64 * max(1, len(result_codes))  # noqa: N806
    wide = [code in ("I", "F", "r") for code in result_codes]
    release = nativelib.fn.jv_release

    def call_native(stk, *args):
        slots = SlotArray()
        for at, count in counts:
            slots[at] = count
        for at, value in zip(positions, args):
            slots[at] = value
        results = ResultArray()
        trap = TrapT()
        try:
            status = call(ctx, slots, results, ctypes.addressof(trap))
        finally:
            for k in ref_args:
                if args[k]:
                    release(args[k])
        if status:
            raise traps.take_exception(trap, describe_frame)
        out = [results[k] if wide[k] else results[k] & _M32 for k in range(len(result_codes))]
        if not out:
            return None
        return out[0] if len(out) == 1 else tuple(out)
    return call_native


def adapter(site, fn, segments, interpreted_target):
    """The adapter for `site` calling `fn` (None: unresolved).

    `interpreted_target(fn)` returns the raw interpreted function behind `fn` when there is
    one (same calling convention, no marshalling needed), else None.
    """
    if fn is None:
        return unresolved(site)
    if not site.cconv.is_variadic:
        direct = interpreted_target(fn)
        if direct is not None:
            return direct
    if isinstance(fn, NativeFunction):
        return through_native(site, fn, segments)
    return through_python(site, fn, segments)

