"""VmRef and the base of every iree.runtime-style object that stands for a VM ref.

Each API object holds one jitvm Ref (`__jitvm_ref__`, what jitvm.api.marshal unwraps) and
offers IREE's `.ref` / `__iree_vm_ref__` views of it; `deref(cls)` rewraps the same object
as another API class when the ref's type matches, as IREE's VmRef.deref does.
"""

from __future__ import annotations

from ...errors import ArgumentError
from ...runtime.vm.objects import Ref

_CLASSES: dict[str, type] = {}  # ref type name -> API class standing for it


def api_class(type_name: str):
    """Registers the decorated class as the API form of refs of `type_name`."""
    def mark(cls):
        cls.ref_type_name = type_name
        _CLASSES[type_name] = cls
        return cls
    return mark


class RefBacked:
    """An API object over one jitvm Ref."""

    ref_type_name = ""
    __slots__ = ("_ref", "__weakref__")

    def __init__(self, ref: Ref):
        self._ref = ref

    @classmethod
    def _wrap(cls, ref: Ref):
        obj = cls.__new__(cls)
        RefBacked.__init__(obj, ref)
        return obj

    @property
    def __jitvm_ref__(self) -> Ref:
        return self._ref

    @property
    def ref(self) -> "VmRef":
        return VmRef(self._ref)

    @property
    def __iree_vm_ref__(self) -> "VmRef":
        return VmRef(self._ref)

    def __eq__(self, other):
        other_ref = getattr(other, "__jitvm_ref__", None)
        return other_ref is not None and other_ref.addr == self._ref.addr

    def __hash__(self):
        return hash(self._ref.addr)


class VmRef:
    """A reference to any VM object (what untyped results and list elements are)."""

    __slots__ = ("_ref",)

    def __init__(self, ref: Ref):
        self._ref = ref

    @property
    def __jitvm_ref__(self) -> Ref:
        return self._ref

    @property
    def __iree_vm_ref__(self) -> "VmRef":
        return self

    def isinstance(self, ref_type: type) -> bool:
        return getattr(ref_type, "ref_type_name", None) == self._ref.type_name

    def deref(self, value: type, optional: bool = False):
        """This ref as an object of API class `value`; None (if optional) or ValueError when
        the ref is of another type."""
        if self.isinstance(value):
            return value._wrap(self._ref)
        if optional:
            return None
        raise ArgumentError(f"ref type mismatch: this is a !{self._ref.type_name}, not a {value.__name__}")

    def __eq__(self, other):
        other_ref = getattr(other, "__jitvm_ref__", None)
        return other_ref is not None and other_ref.addr == self._ref.addr

    def __hash__(self):
        return hash(self._ref.addr)

    def __repr__(self):
        return f"<VmRef {self._ref.type_name} at 0x{self._ref.addr:x}>"


def wrap(ref: Ref | None, as_object: bool = False):
    """A ref as VmRef (or, with `as_object`, as its most specific API class); None stays None."""
    if ref is None:
        return None
    if as_object:
        cls = _CLASSES.get(ref.type_name)
        if cls is not None:
            return cls._wrap(ref)
    return VmRef(ref)


def unwrap(value) -> Ref | None:
    """The jitvm Ref behind an API object or VmRef (None for None); ArgumentError otherwise."""
    if value is None:
        return None
    ref = getattr(value, "__jitvm_ref__", None)
    if ref is None and isinstance(value, Ref):
        ref = value
    if ref is None:
        raise ArgumentError(f"could not convert python value to VM: {value!r}")
    return ref
