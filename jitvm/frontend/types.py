"""VM type names as written in a module's type table: value types, refs, lists.

Which ref types exist is up to the runtime: native modules register theirs here
(`register_ref_type`) so the verifier can refuse a module naming a type nobody provides.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FormatError

VALUE_TYPES = ("i8", "i16", "i32", "i64", "f32", "f64")

_known_ref_types: set[str] = {"vm.buffer", "vm.list"}


def register_ref_type(name: str) -> None:
    """Makes a ref type (without the leading '!', e.g. "hal.buffer") resolvable."""
    _known_ref_types.add(name)


def known_ref_types() -> frozenset[str]:
    return frozenset(_known_ref_types)


@dataclass(frozen=True)
class VmType:
    """An entry of the module's type table."""

    name: str  # as written: "i32", "!vm.list<!vm.buffer>", "!hal.device"
    kind: str  # "value", "ref" or "opaque" (!vm.opaque: any ref)
    value: str | None = None  # for values: "i8" ... "f64"
    ref: str | None = None  # for refs: "vm.buffer", "vm.list", "hal.device" ...
    element: "VmType | None" = None  # for lists: the element type ("?" lists have none)

    @property
    def is_ref(self) -> bool:
        return self.kind != "value"


def parse_type(name: str, where: str = "type") -> VmType:
    """Parses a type-table entry; raises FormatError for names that are not VM types."""
    if name in VALUE_TYPES:
        return VmType(name, "value", value=name)
    if name == "!vm.opaque" or name == "!vm.ref<?>":
        return VmType(name, "opaque")
    if not name.startswith("!") or len(name) < 2:
        raise FormatError(f"{where}: {name!r} is not a VM type")
    if name.startswith("!vm.ref<") and name.endswith(">"):  # `!vm.ref<!hal.buffer>`: the ref type named inside
        inner = parse_type(name[len("!vm.ref<"):-1], where)
        if not inner.is_ref:
            raise FormatError(f"{where}: {name!r} wraps a value type")
        return VmType(name, inner.kind, ref=inner.ref, element=inner.element)
    body = name[1:]
    if body.startswith("vm.list"):
        rest = body[len("vm.list"):]
        element = None
        if rest:
            if not (rest.startswith("<") and rest.endswith(">")):
                raise FormatError(f"{where}: malformed list type {name!r}")
            inner = rest[1:-1]
            if inner not in ("?", "variant", "!vm.variant"):
                element = parse_type(inner, where)
        return VmType(name, "ref", ref="vm.list", element=element)
    if not all(c.isalnum() or c in "._" for c in body):
        raise FormatError(f"{where}: malformed ref type {name!r}")
    return VmType(name, "ref", ref=body)
