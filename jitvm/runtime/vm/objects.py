"""Python views of native VM objects: refs, buffers, lists, and Python-backed ref types.

The native structs (runtime.native.layout) are the source of truth. A `Ref` owns one reference
and releases it when garbage collected; `VmBuffer` and `VmList` read through to native
memory, and so do the views native modules register for their own types (`StructView`: the
HAL's buffers, views, fences). Ref types implemented in Python (devices, executables) get a
native header whose destruction drops the Python object, so native code can hold and release
them like any ref.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from typing import ClassVar

import numpy as np

from ...errors import Error
from ...frontend import types as vm_types
from ..native import layout
from . import nativelib
from ..native.layout import BufferT, ListT, ObjectT

# --- runtime type ids -----------------------------------------------------------------------

_type_ids: dict[str, int] = {"vm.buffer": nativelib.BUFFER_TYPE_ID, "vm.list": nativelib.LIST_TYPE_ID}
_type_names: dict[int, str] = {v: k for k, v in _type_ids.items()}
_type_lock = threading.Lock()


def register_type(name: str) -> int:
    """The runtime id of ref type `name` ("hal.buffer"), registering it on first use."""
    with _type_lock:
        if name not in _type_ids:
            tid = 16 + len(_type_ids)
            _type_ids[name] = tid
            _type_names[tid] = name
            vm_types.register_ref_type(name)
        return _type_ids[name]


def type_id(name: str) -> int | None:
    return _type_ids.get(name)


def names_ref_type(vm_type) -> bool:
    """Whether a type-table entry names a concrete ref type. `!vm.opaque` and value types do
    not (IREE resolves them to type 0): a checked ref op naming them rejects every non-null ref."""
    return vm_type.is_ref and vm_type.kind != "opaque"


def checked_type_id(vm_type) -> int:
    """The type id a checked ref op (cast, list.get.ref, global/select/switch of refs) compares
    an object's type with: NO_TYPE_ID, which no object carries, for entries naming none."""
    return register_type(vm_type.ref) if names_ref_type(vm_type) else nativelib.NO_TYPE_ID


def type_name(tid: int) -> str:
    return _type_names.get(tid, f"<type {tid}>")


# --- refs ------------------------------------------------------------------------------------

def retain(addr: int) -> None:
    if addr:
        nativelib.fn.jv_retain(addr)


def release(addr: int) -> None:
    if addr:
        nativelib.fn.jv_release(addr)


def header(addr: int) -> ObjectT:
    return ObjectT.from_address(addr)


class Ref:
    """Owns one reference to a native object (never null: Python APIs use None for null)."""

    __slots__ = ("addr", "__weakref__")

    def __init__(self, addr: int, retain_it: bool = True):
        if not addr:
            raise ValueError("Ref of a null pointer; use None for null refs")
        self.addr = addr
        if retain_it:
            nativelib.fn.jv_retain(addr)

    def __del__(self):
        addr = getattr(self, "addr", 0)
        if addr:
            self.addr = 0
            try:
                nativelib.fn.jv_release(addr)
            except Exception:  # interpreter shutdown
                pass

    def detach(self) -> int:
        """Gives up this Python reference, returning the address that now owns it."""
        addr, self.addr = self.addr, 0
        return addr

    @property
    def type_id(self) -> int:
        return header(self.addr).type_id

    @property
    def type_name(self) -> str:
        return type_name(self.type_id)

    @property
    def refcount(self) -> int:
        return header(self.addr).refcount

    @property
    def payload(self):
        """The Python object behind a Python-backed ref type, the view of a type with one
        (`StructView`), or None."""
        view = _views.get(header(self.addr).type_id)
        if view is not None:
            return self if type(self) is view else view(self.addr)
        return _live.get(self.addr)

    def __eq__(self, other):
        return isinstance(other, Ref) and other.addr == self.addr

    def __hash__(self):
        return hash(self.addr)

    def __repr__(self):
        return f"<{type(self).__name__} !{self.type_name} at 0x{self.addr:x}>"

    @staticmethod
    def wrap(addr: int, retain_it: bool = True) -> "Ref | None":
        """The most specific view of `addr` (a buffer, a list or a plain ref); None for null."""
        if not addr:
            return None
        tid = header(addr).type_id
        cls = VmBuffer if tid == nativelib.BUFFER_TYPE_ID else VmList if tid == nativelib.LIST_TYPE_ID else \
            _views.get(tid, Ref)
        return cls(addr, retain_it)


# --- views of native modules' structs ----------------------------------------------------------

_views: dict[int, type] = {}  # type id -> the StructView class Ref.wrap gives its objects


class StructView(Ref):
    """A Ref to an object whose fields are the layout struct `struct_name` (a native module's
    type, made by native code): subclasses read and write the fields through `struct`."""

    __slots__ = ()
    type_name: ClassVar[str] = ""
    struct_name: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.type_name:
            cls._ctype = layout.CTYPES[cls.struct_name]
            _views[register_type(cls.type_name)] = cls

    @property
    def struct(self):
        return self._ctype.from_address(self.addr)

    @classmethod
    def type_id_of(cls) -> int:
        return register_type(cls.type_name)

    @classmethod
    def adopt(cls, addr: int, what: str = "object"):
        """The view owning the new reference `addr` native code returned (0: out of memory)."""
        if not addr:
            raise Error(f"out of memory allocating a {what}")
        return cls(addr, retain_it=False)


def address_of(view) -> int:
    """The address of a bytes-like object's memory (read-only ones too), without copying."""
    return np.frombuffer(view, dtype=np.uint8).ctypes.data if len(view) else 0


class VmBuffer(Ref):
    """vm.buffer: a byte span with access rights."""

    __slots__ = ()

    @property
    def struct(self) -> BufferT:
        return BufferT.from_address(self.addr)

    @property
    def length(self) -> int:
        return self.struct.length

    @property
    def data_address(self) -> int:
        return self.struct.data or 0

    @property
    def access(self) -> int:
        return self.struct.access

    @property
    def mutable(self) -> bool:
        return bool(self.struct.access & layout.BUFFER_MUTABLE)

    def view(self) -> memoryview:
        """A writable view of the bytes (the VM enforces access rights, not Python)."""
        n = self.length
        if n == 0:
            return memoryview(bytearray())
        return memoryview((ctypes.c_uint8 * n).from_address(self.data_address)).cast("B")

    def numpy(self, dtype=np.uint8) -> np.ndarray:
        return np.frombuffer(self.view(), dtype=dtype)

    def tobytes(self) -> bytes:
        return bytes(self.view())

    @classmethod
    def allocate(cls, length: int, alignment: int = 16,
                 access: int = layout.BUFFER_MUTABLE | layout.BUFFER_ORIGIN_HOST, zeroed: bool = True) -> "VmBuffer":
        """New memory, zero-filled unless the caller overwrites all of it at once (`zeroed=False`)."""
        alloc = nativelib.fn.jv_buffer_alloc if zeroed else nativelib.fn.jv_buffer_alloc_uninitialized
        addr = alloc(length, alignment, access)
        if not addr:
            raise Error(f"out of memory allocating a {length}-byte buffer")
        return cls(addr, retain_it=False)

    @classmethod
    def wrap_memory(cls, address: int, length: int, access: int, origin: "Ref | None") -> "VmBuffer":
        """A buffer over memory that `origin` keeps alive (None: memory that outlives it)."""
        addr = nativelib.fn.jv_buffer_wrap(address, length, access, origin.addr if origin else None)
        if not addr:
            raise Error("out of memory wrapping a buffer")
        return cls(addr, retain_it=False)

    @classmethod
    def from_bytes(cls, data, access: int = layout.BUFFER_MUTABLE | layout.BUFFER_ORIGIN_HOST) -> "VmBuffer":
        data = memoryview(data).cast("B")
        buf = cls.allocate(len(data), 16, access)
        if len(data):
            ctypes.memmove(buf.data_address, address_of(data), len(data))
        return buf


def storage_for(vm_type) -> tuple[int, int, int]:
    """(mode, element type, element size) of a list whose element type is `vm_type`.

    Value types are stored densely, ref types as pointers; `!vm.opaque` (and `?`) lists
    hold variants, as IREE decides from the element type.
    """
    if vm_type is None or vm_type.kind == "opaque":
        return layout.LIST_VARIANT, 0, layout.sizeof("Variant")
    if vm_type.kind == "value":
        return layout.LIST_VALUE, layout.VALUE_CODES[vm_type.value], layout.VALUE_SIZES[vm_type.value]
    return layout.LIST_REF, register_type(vm_type.ref), 8


_VALUE_FORMATS = {"i8": "<b", "i16": "<h", "i32": "<i", "i64": "<q", "f32": "<f", "f64": "<d"}


class VmList(Ref):
    """vm.list: values stored densely, refs as pointers, or variants."""

    __slots__ = ()

    @property
    def struct(self) -> ListT:
        return ListT.from_address(self.addr)

    def __len__(self) -> int:
        return self.struct.size

    @property
    def mode(self) -> int:
        return self.struct.mode

    @property
    def element_type(self) -> int:
        return self.struct.element_type

    @classmethod
    def allocate(cls, element: "vm_types.VmType | str | None", capacity: int = 0) -> "VmList":
        """A list of `element` (a value type name, a ref VmType, or None for variants)."""
        if isinstance(element, str):
            element = vm_types.parse_type(element)
        mode, etype, esize = storage_for(element)
        addr = nativelib.fn.jv_list_alloc(mode, etype, esize, capacity)
        if not addr:
            raise Error(f"out of memory allocating a list of capacity {capacity}")
        return cls(addr, retain_it=False)

    def _slot(self, index: int) -> int:
        s = self.struct
        if not 0 <= index < s.size:
            raise IndexError(f"list index {index} out of range (size {s.size})")
        return s.storage + index * s.element_size

    def get(self, index: int):
        """The element as a Python value: int/float for values, Ref or None for refs."""
        s = self.struct
        at = self._slot(index)
        if s.mode == layout.LIST_VALUE:
            fmt = _VALUE_FORMATS[layout.VALUE_NAMES[s.element_type]]
            return struct.unpack(fmt, ctypes.string_at(at, struct.calcsize(fmt)))[0]
        if s.mode == layout.LIST_REF:
            return Ref.wrap(ctypes.c_void_p.from_address(at).value or 0)
        v = layout.VariantT.from_address(at)
        if v.tag == layout.VARIANT_REF:
            return Ref.wrap(v.bits)
        if v.tag == layout.VARIANT_EMPTY:
            return None
        fmt = _VALUE_FORMATS[layout.VALUE_NAMES[v.tag]]
        return struct.unpack(fmt, struct.pack("<Q", v.bits)[:struct.calcsize(fmt)])[0]

    def set(self, index: int, value, value_type: str | None = None) -> None:
        """Stores a Python value; refs are retained by the list."""
        s = self.struct
        at = self._slot(index)
        if s.mode == layout.LIST_VALUE:
            fmt = _VALUE_FORMATS[layout.VALUE_NAMES[s.element_type]]
            ctypes.memmove(at, struct.pack(fmt, _coerce(fmt, value)), struct.calcsize(fmt))
        elif s.mode == layout.LIST_REF:
            new = value.addr if value is not None else 0
            retain(new)
            slot = ctypes.c_void_p.from_address(at)
            old, slot.value = slot.value or 0, new or None
            release(old)
        else:
            v = layout.VariantT.from_address(at)
            old = v.bits if v.tag == layout.VARIANT_REF else 0
            if value is None:
                v.tag, v.bits = layout.VARIANT_EMPTY, 0
            elif isinstance(value, Ref):
                retain(value.addr)
                v.tag, v.bits = layout.VARIANT_REF, value.addr
            else:
                vt = value_type or ("f64" if isinstance(value, float) else "i64")
                fmt = _VALUE_FORMATS[vt]
                raw = struct.pack(fmt, _coerce(fmt, value)).ljust(8, b"\0")
                v.tag, v.bits = layout.VALUE_CODES[vt], struct.unpack("<Q", raw)[0]
            release(old)

    def append(self, value, value_type: str | None = None) -> None:
        n = len(self)
        if nativelib.fn.jv_list_resize(self.addr, n + 1):
            raise Error("out of memory growing a list")
        self.set(n, value, value_type)

    def __iter__(self):
        return (self.get(i) for i in range(len(self)))


def _coerce(fmt: str, value):
    if fmt in ("<f", "<d"):
        return float(value)
    bits = struct.calcsize(fmt) * 8
    value = int(value) & ((1 << bits) - 1)
    return value - (1 << bits) if value >> (bits - 1) else value


# --- Python-backed ref types -------------------------------------------------------------------

_live: dict[int, object] = {}  # header address -> Python object (single dict operations: atomic)
_class_layouts: dict[type, tuple[int, int, type]] = {}  # class -> (type id, size, struct)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _destroy_python_object(addr):
    """Native code's hook when a Python-backed object's last reference goes (the native side
    frees the header afterwards)."""
    if _live is None:  # interpreter shutdown: module globals are gone
        return
    obj = _live.pop(addr, None)
    if obj is not None:
        obj.on_destroy()


_DESTROY_ADDRESS = ctypes.cast(_destroy_python_object, ctypes.c_void_p).value


class NativeObject:
    """Base of ref types implemented in Python (HAL objects and the like).

    `new(...)` constructs the Python object and a native header with one reference, returned
    as a Ref. The Python object lives exactly as long as the native reference count is > 0.
    """

    type_name: ClassVar[str] = ""
    # A runtime.native.layout struct starting with the header, whose other fields `write_facts`
    # fills for native code to read (None: the header alone).
    facts: ClassVar[str | None] = None
    addr: int = 0

    @classmethod
    def new(cls, *args, **kwargs) -> Ref:
        obj = cls(*args, **kwargs)
        return obj._attach()

    def _attach(self) -> Ref:
        cls = type(self)
        known = _class_layouts.get(cls)
        if known is None:
            struct = layout.CTYPES[cls.facts] if cls.facts else ObjectT
            known = _class_layouts[cls] = (register_type(cls.type_name), ctypes.sizeof(struct), struct)
        tid, size, struct = known
        # One native call allocates and fills the header (a HAL call creates several objects).
        addr = nativelib.fn.jv_python_object_new(tid, _DESTROY_ADDRESS, size)
        if not addr:
            raise Error("out of memory allocating an object header")
        if cls.facts:
            self.write_facts(struct.from_address(addr))
        self.addr = addr
        _live[addr] = self
        return Ref(addr, retain_it=False)

    def write_facts(self, facts) -> None:
        """Fills the `facts` struct after the header (classes that declare one)."""

    def on_destroy(self) -> None:
        """Called once the last native reference is gone; release what the object holds."""

    def ref(self) -> Ref:
        """A new owning reference to this (still live) object."""
        return Ref(self.addr)


def payload(addr: int, cls: type | None = None):
    """The Python object of a Python-backed ref, or the view of an object with one
    (optionally checking its class), or None."""
    obj = _live.get(addr)
    if obj is None:
        view = _views.get(header(addr).type_id)
        obj = view(addr) if view is not None else None
    if cls is not None and not isinstance(obj, cls):
        return None
    return obj
