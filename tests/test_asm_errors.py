"""Assembler errors: a jitvm.Error (AsmError) naming the file, line and column, with a caret."""

from __future__ import annotations

import pytest

from jitvm.cli import main
from jitvm.errors import AsmError, FormatError
from jitvm.frontend.asm import ModuleBuilder, add_functions, assemble

HEADER = "vm.module @m version 0\n"


def body(*lines: str) -> str:
    """A module with one function whose body is `lines` (the first body line is line 3)."""
    return HEADER + "vm.func @f(%i0: i32, %r0: !vm.buffer) -> (i32) {\n" + "\n".join(lines) + "\n}\n"


CASES = [
    # (source, line, column, message fragment)
    (body("  %i1 = vm.frob %i0"), 3, 9, "unknown instruction 'vm.frob'"),
    (body("  %i1 = vm.add.i32 %r0, %i0"), 3, 20, "expected an i32 register, found a ref register"),
    (body("  %i1 = vm.add.i32 %i0"), 3, 23, "expected ','"),
    (body("  %i1 = vm.add.i32 %i0, %i0 %i0"), 3, 29, "unexpected '%i0' after the operands of vm.add.i32"),
    (body("  vm.br ^nowhere(%i0->%i1)"), 3, 9, "unknown block label ^nowhere in @f"),
    (body("  %i1 = vm.call @nope(%i0)", "  vm.return %i1"), 3, 17, "unknown function @nope"),
    (body("  %i1 = vm.const.i32 4294967296"), 3, 22, "4294967296 does not fit in i32"),
    (body("  %i2:4 = vm.const.i64 1"), 3, 3, "a register pair names adjacent registers (%i2:3)"),
    (body("  %i1 = vm.cmp.nz.ref %R0"), 3, 23, "cannot move its ref (write %r, not %R)"),
    (body('  vm.fail %i0, "no closing quote'), 3, 16, "unterminated string"),
    (body("  %r1 = vm.const.ref.rodata 3"), 3, 3, "rodata 3 does not exist (the module has 0 segments)"),
    (body("  %i1 = vm.const.f32 1e39"), 3, 22, "1e39 is out of range for f32"),
    (body("^a:", "  vm.return %i0", "^a:"), 5, 1, "duplicate block label ^a"),
    (HEADER + "vm.frob @x\n", 2, 1, "unknown directive 'vm.frob'"),
    (HEADER + "vm.rodata[1] = 00\n", 2, 11, "expected vm.rodata[0]"),
    (HEADER + "vm.rodata[0] = 0A1\n", 2, 16, "odd number of hex digits (3)"),
    (HEADER + "vm.import @x.y cconv \"0q_v\"\n", 2, 22, "unknown type code 'q'"),
    (HEADER + "vm.func @f(%i1: i32) -> () {\n  vm.return\n}\n", 2, 12, "this one is %i0"),
    (HEADER + "vm.func @f(%i0: i32, %i1: i64) -> () {\n  vm.return\n}\n", 2, 22, "this one is %i2:3"),
    (HEADER + "vm.func @f() -> () attributes {vm.bogus} {\n  vm.return\n}\n", 2, 32, "unknown attribute 'vm.bogus'"),
    (HEADER + "vm.func @f() -> () attributes {vm.i32_registers = \"x\"} {\n  vm.return\n}\n", 2, 32,
     "vm.i32_registers takes a non-negative integer"),
    (HEADER + 'vm.module @m attributes {iree.reflection = {k = "\\q"}}\n', 2, 11, "the module is already declared"),
    (HEADER + "vm.func @f() -> () {\n  vm.return\n", 2, 9, "function @f is not closed with '}'"),
    (HEADER + "vm.func @f() -> () {\n  vm.return\n}\nvm.func @f() -> () {\n  vm.return\n}\n", 5, 9,
     "duplicate function @f"),
    (HEADER + "vm.export @g\nvm.func @f() -> () {\n  vm.return\n}\n", 2, 11, "export @g names unknown function @g"),
    (HEADER + "vm.global.i32 @g = 3 : i32\n", 2, 20, "globals start at zero"),
    ("// no module line\nvm.func @f() -> () {\n}\n", 2, 1, "a module starts with `vm.module @name`"),
]


@pytest.mark.parametrize("source, line, column, fragment", CASES, ids=[c[3][:40] for c in CASES])
def test_errors_name_line_and_column(source, line, column, fragment):
    with pytest.raises(AsmError) as info:
        assemble(source, "prog.vmasm")
    e = info.value
    assert isinstance(e, FormatError)
    assert fragment in e.message, str(e)
    assert (e.line, e.column) == (line, column), str(e)
    text = str(e)
    assert text.startswith(f"prog.vmasm:{line}:{column}: ")
    shown, caret = text.splitlines()[1:3]
    assert shown.strip() == source.splitlines()[line - 1].strip()
    assert caret.index("^") - 2 == column - 1  # the caret sits under the column


def test_attribute_string_escapes_are_checked():
    with pytest.raises(AsmError, match=r"invalid escape") as info:
        assemble('vm.module @m attributes {iree.reflection = {k = "a\\qb"}}\n'
                 "vm.func @f() -> () {\n  vm.return\n}\n")
    assert (info.value.line, info.value.column) == (1, 51)


def test_builder_rejects_a_module_line_for_another_module():
    b = ModuleBuilder("mine")
    with pytest.raises(AsmError, match=r"declares module @theirs but the builder builds @mine"):
        add_functions(b, "vm.module @theirs\n")


def test_cli_reports_errors_with_position(tmp_path, capsys):
    src = tmp_path / "bad.vmasm"
    src.write_text(body("  %i1 = vm.add.i32 %i0"))
    assert main(["asm", str(src), "-o", str(tmp_path / "bad.vmfb")]) == 1
    err = capsys.readouterr().err
    assert f"{src}:3:23: expected ','" in err
    assert not (tmp_path / "bad.vmfb").exists()


def test_cli_assembles(tmp_path):
    src = tmp_path / "good.vmasm"
    src.write_text(HEADER + "vm.export @f\nvm.func @f(%i0: i32) -> (i32) {\n  vm.return %i0\n}\n")
    assert main(["asm", str(src)]) == 0
    from jitvm.frontend import load_module
    assert [e.name for e in load_module(tmp_path / "good.vmfb").exports] == ["f"]
