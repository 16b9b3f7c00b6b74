"""The runtime's native code templates (runtime.native.template): every variant renders to IR
that LLVM accepts and compiles for the host and for aarch64, every shipped .ll file is
used by some variant, and the renderer refuses templates and values that do not match."""

from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm
import pytest

from jitvm.runtime.exec import fpu, nativecode
from jitvm.api import entry, plan
from jitvm.lower import lazy
from jitvm.runtime.modules.hal import native as hal_native
from jitvm.runtime.native import layout, template
from jitvm.runtime.native import target as targets
from jitvm.runtime.vm import nativelib

PACKAGE = Path(__file__).resolve().parents[1] / "jitvm"

# name -> (IR text, the architecture its intrinsics need, or None: any)
VARIANTS = {
    "nativelib.saturating": (lambda: nativelib.ir_text(True), None),
    "nativelib.x86_64": (lambda: nativelib.ir_text(False), None),
    "hal": (hal_native.ir_text, None),
    "call_plan": (plan.ir_text, None),
    "call_entry": (entry.ir_text, None),
    "lazy_entries": (lambda: lazy.entries_ir("jv_test", 3), None),
    "fpu.none": (lambda: fpu.ir_text("riscv64"), None),
    **{f"fpu.{arch}": ((lambda a=arch: fpu.ir_text(a)), arch) for arch in fpu.FLUSH_BITS},
    **{f"executor.{pool or 'serial'}{'.traced' if traced else ''}":
       ((lambda p=pool, t=traced: nativecode.ir_text(p, t)), pool)
       for pool in (None, *nativecode.SYS_FUTEX) for traced in (False, True)},
}
TARGETS = list(dict.fromkeys([targets.host(), targets.CROSS["aarch64"], targets.CROSS["x86_64"]]))


def _compile(text: str, target: targets.Target) -> bytes:
    context = llvm.create_context()
    mod = llvm.parse_assembly(text, context)
    try:
        mod.triple = target.triple
        mod.verify()
        return targets.machine(target, 2, jit=False).emit_object(mod)
    finally:
        mod.close()
        context.close()


@pytest.mark.parametrize("name", VARIANTS)
def test_every_variant_compiles_for_the_host_and_aarch64(name):
    render, arch = VARIANTS[name]
    text = render()
    assert "${" not in text
    chosen = [t for t in TARGETS if arch in (None, t.arch)]
    assert chosen and (arch is not None or {targets.host(), targets.CROSS["aarch64"]} <= set(chosen))
    for target in chosen:
        assert _compile(text, target)


def test_every_template_shipped_is_rendered_by_some_variant(monkeypatch):
    seen = set()
    source = template._source.__wrapped__

    def recording(package, name):
        seen.add(Path(*package.split("."), name).as_posix())
        return source(package, name)

    monkeypatch.setattr(template, "_source", recording)
    for render, _ in VARIANTS.values():
        render()
    shipped = {p.relative_to(PACKAGE.parent).as_posix() for p in PACKAGE.rglob("*.ll")}
    assert shipped == seen


def test_placeholders_come_from_layout_and_values():
    text = ("${if flag}keep ${sizeof Buffer}\n${if not flag}drop\n"
            "  %x = add i64 ${Buffer.data}, ${N}\n${fields Variant %v v}\n${block}\n  fmul double %a, ${F}\n")
    out = template.render_text(text, {"flag": True, "N": 7, "block": "a\nb", "F": 0.8})
    assert out == (f"keep {layout.sizeof('Buffer')}\n"
                   f"  %x = add i64 {layout.field('Buffer', 'data').offset}, 7\n"
                   "  %v.tag = getelementptr inbounds i8, ptr %v, i64 0\n"
                   "  %v.reserved = getelementptr inbounds i8, ptr %v, i64 4\n"
                   "  %v.bits = getelementptr inbounds i8, ptr %v, i64 8\n"
                   "a\nb\n  fmul double %a, 8.000000e-01\n")


def test_padding_fields_get_no_pointer_and_inexact_doubles_are_hexadecimal():
    assert "_pad" not in template.render_text("${fields Cost %c c}\n", {})
    assert template.render_text("${X}", {"X": 0.1}) == "1.000000e-01"
    assert template.render_text("${X}", {"X": 0.123456789}) == "0x3FBF9ADD3739635F"


@pytest.mark.parametrize("text, values, message", [
    ("${NOPE}", {}, "no value for"),
    ("${Buffer.nope}", {}, "no such struct or field"),
    ("${Nope.data}", {}, "no such struct or field"),
    ("${sizeof Nope}", {}, "no such struct or field"),
    ("${fields Buffer pool f}\n", {}, "%register"),
    ("x ${fields Buffer %b b}\n", {}, "stand alone"),
    ("${A} ${B}", {"A": 1, "B": 2, "C": 3}, "values not used: C"),
    ("${if A}x\n", {"A": 1}, "needs a bool"),
    ("${A}", {"A": True}, "a bool fills only"),
    ("${A", {"A": 1}, "malformed"),
    ("${what is this}", {}, "unknown placeholder"),
    ("x ${A}\n", {"A": "two\nlines"}, "stand alone"),
])
def test_the_renderer_rejects_what_does_not_match(text, values, message):
    with pytest.raises(template.TemplateError, match=message):
        template.render_text(text, values)


def test_values_in_dropped_lines_count_as_used_and_are_checked():
    assert template.render_text("${if not A}${B}\n", {"A": True, "B": 1}) == ""
    with pytest.raises(template.TemplateError, match="no value for"):
        template.render_text("${if not A}${B}\n", {"A": True})
