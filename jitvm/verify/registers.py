"""Register operand rules: bank, range, i64/f64 pair alignment, and who may carry the move bit.

Operands are checked on their raw u16 encoding, not on the decoder's masked index, because
the masking hides exactly the bits that make a register wrong: a ref bit on an i32 operand,
a move bit where the instruction does not take ownership.
"""

from __future__ import annotations

from ..frontend.decode import MOVE_BIT, REF_BIT, REF_MASK


def _x32(fv, ins, bank: str, raw: int, what: str, move_ok: bool) -> None:
    if raw & REF_BIT:
        raise fv.fail(ins, f"{what} needs an {bank} register but {ref_name(raw)} is a ref register")
    if raw >= fv.i32_count:
        raise fv.fail(ins, f"{bank} register %i{raw} is out of range ({fv.i32_count} registers)")


def _x64(fv, ins, bank: str, raw: int, what: str, move_ok: bool) -> None:
    if raw & REF_BIT:
        raise fv.fail(ins, f"{what} needs an {bank} register pair but {ref_name(raw)} is a ref register")
    if raw & 1:
        raise fv.fail(ins, f"{bank} register pair %i{raw}:{raw + 1} is not even-aligned")
    if raw + 1 >= fv.i32_count:
        raise fv.fail(ins, f"{bank} register pair %i{raw}:{raw + 1} is out of range "
                           f"({fv.i32_count} registers)")


def _ref(fv, ins, bank: str, raw: int, what: str, move_ok: bool) -> None:
    if not raw & REF_BIT:
        raise fv.fail(ins, f"{what} needs a ref register but %i{raw} is an i32 register")
    index = raw & REF_MASK
    if index >= fv.ref_count:
        raise fv.fail(ins, f"ref register %r{index} is out of range ({fv.ref_count} ref registers)")
    if raw & MOVE_BIT and not move_ok:
        raise fv.fail(ins, f"{what} does not take ownership but %R{index} carries the move bit")


def _any(fv, ins, bank: str, raw: int, what: str, move_ok: bool) -> None:
    if raw & REF_BIT:
        _ref(fv, ins, "ref", raw, what, move_ok)
    else:
        _x32(fv, ins, "i32", raw, what, move_ok)


CHECK_BY_BANK = {"i32": _x32, "f32": _x32, "i64": _x64, "f64": _x64, "ref": _ref, "any": _any}
"""bank -> check(verifier, instruction, bank, raw, what, move_ok); "any" follows the ref bit."""

BANK_OF_CODE = {"i": "i32", "f": "f32", "I": "i64", "F": "f64", "r": "ref"}
"""calling-convention value code -> register bank"""


def ref_name(raw: int) -> str:
    return f"%{'R' if raw & MOVE_BIT else 'r'}{raw & REF_MASK}"


def check_register(fv, ins, bank: str, raw: int, what: str, move_ok: bool = False) -> None:
    CHECK_BY_BANK[bank](fv, ins, bank, raw, what, move_ok)
