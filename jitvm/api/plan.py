"""A reflected function's call from numpy in one native call (invoke.ll).

Built once per function from its reflection: per input the rank, the static dims and the
numpy dtypes it takes (IREE's rule: the declared one, or integers and bools of its width,
each with the element type iree.runtime gives it); per output the view expected. A call
then costs Python only the slot array, one native call and the result arrays: the native
side checks each array (an exact ndarray, C-contiguous, of a dtype and shape the plan
takes: read through layout `NumpyArray`, numpy's public array struct, checked against a live
array once per process), copies it into a new device buffer (the caller's array never
changes), runs the function with the GIL released, and hands over each result view whose
memory nothing else can reach: numpy views it without a copy and keeps it alive
(`hand_over_numpy`'s rule). Anything else (lists, strided or foreign-endian arrays, wrong
shapes: errors to raise) is declined before anything is done, and the caller marshals that
call in Python (jitvm.api.marshal), with the same results.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..runtime.modules.hal import native as hal_native
from ..errors import STATUS_CODES
from ..runtime.modules.hal import types as hal_types
from ..runtime.modules.hal.buffer_view import HalBufferView
from ..runtime.native import engine, layout, template
from ..runtime.native.layout import CallPlanT, NumpyArrayT, PlanValueT, TrapT
from ..runtime.vm import abi, traps
from ..runtime.vm.bytecode import describe_frame
from ..runtime.vm.objects import register_type
from . import marshal
from .declaration import ValueDecl

DECLINED = -1  # jv_invoke's status when Python marshals the call itself
NPY_C_CONTIGUOUS = 0x1
_TRAP_WORDS = -(-layout.sizeof("Trap") // 8)
_INVOKE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)

_lock = threading.Lock()
_invoke = None  # jv_invoke, compiled once; False when numpy's layout is not the one expected


def _numpy_layout_ok() -> bool:
    """Whether numpy's arrays are laid out as layout `NumpyArray` says, on a live array."""
    a = np.zeros((2, 3), np.float32)
    s = NumpyArrayT.from_address(id(a))
    strided = NumpyArrayT.from_address(id(a[:, ::2]))
    return (s.type == id(np.ndarray) and s.data == a.ctypes.data and s.nd == 2 and s.descr == id(a.dtype)
            and list((ctypes.c_int64 * 2).from_address(s.dimensions)) == [2, 3]
            and bool(s.flags & NPY_C_CONTIGUOUS) and not strided.flags & NPY_C_CONTIGUOUS)


def ir_text() -> str:
    return template.render(
        __package__, "invoke.ll", DECLINED=DECLINED, NPY_C_CONTIGUOUS=NPY_C_CONTIGUOUS,
        INPUT_MEMORY_TYPE=marshal.INPUT_MEMORY_TYPE, INPUT_USAGE=marshal.INPUT_USAGE,
        ENCODING_DENSE_ROW_MAJOR=hal_types.ENCODING_DENSE_ROW_MAJOR, ACCESS_READ=hal_types.ACCESS_READ,
        HAL_BUFFER_VIEW=register_type("hal.buffer_view"), S_RESOURCE_EXHAUSTED=STATUS_CODES["RESOURCE_EXHAUSTED"],
        K_OUT_OF_MEMORY=traps.OUT_OF_MEMORY.code)


def native_code():
    """(module, jv_invoke) compiled once per process, or False when numpy's layout differs."""
    global _invoke
    with _lock:
        if _invoke is None:
            if not _numpy_layout_ok():
                _invoke = False
                return _invoke
            hal_native.code()  # the HAL functions jv_invoke calls
            code = engine.jit_module(ir_text(), export=("jv_invoke",))  # jitvm.api.entry calls it
            _invoke = (code, code.function("jv_invoke", _INVOKE))
    return _invoke


def _compatible_dtypes(want: np.dtype) -> list[np.dtype]:
    """The dtypes an argument declared `want` may have (marshal's rule), the declared first."""
    out = [want]
    if want.kind in "biu":
        out += [np.dtype(d) for d in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                      np.int64, np.uint64)
                if np.dtype(d).itemsize == want.itemsize and np.dtype(d) != want]
    return [d for d in out if d in hal_types.ELEMENT_OF_NUMPY][:4]


class CallPlan:
    """The native call of one reflected function (None from `build` when its signature has
    what the native path does not take: ref arguments, dtypes numpy lacks).

    Results are numpy arrays (jitvm.api), or with `raw_results` a list of (VM value, array)
    pairs: buffer views as owned Refs, each with the numpy array over its memory when it was
    handed over, else None (the iree.runtime drop-in makes DeviceArrays of them)."""

    def __init__(self, call: "Callee", invoke, entry: tuple[int, int], allocator: int, raw_results: bool):
        decl = call.declaration
        self.raw_results = raw_results
        self.input_count, self.output_count = len(decl.inputs), len(decl.outputs)
        self._invoke = invoke
        self._keep = []
        self._inputs = (PlanValueT * max(1, self.input_count))()
        self._scalars = []  # (index, VM code, decl, label) of scalar inputs
        for k, (d, value) in enumerate(zip(decl.inputs, self._inputs)):
            if d.is_tensor:
                self._tensor(value, d, _compatible_dtypes(d.dtype))
            else:
                self._scalars.append((k, call.cconv.args[k], d, f"{call.name} argument {k} ({d})"))
        self._outputs = (PlanValueT * max(1, self.output_count))()
        self._results = []  # per output: (VM code, dtype, static shape or None, its memory's ctypes type)
        for d, value, code in zip(decl.outputs, self._outputs, call.cconv.results):
            if d.is_tensor and d.dtype is not None and code == "r" and \
                    hal_types.MLIR_ELEMENT_TYPES.get(d.element) in hal_types.NUMPY_OF_ELEMENT:
                element = hal_types.MLIR_ELEMENT_TYPES[d.element]
                self._tensor(value, d, [])
                value.element_types[0] = element
                dtype = hal_types.NUMPY_OF_ELEMENT[element]
                static = None if None in d.shape else tuple(d.shape)
                memory = None if static is None else \
                    ctypes.c_uint8 * (int(np.prod(static, dtype=np.int64)) * dtype.itemsize)
                self._results.append((code, dtype, static, memory))
            else:
                self._results.append((code, None, None, None))
        self.struct = CallPlanT(fn=entry[0], ctx=entry[1], allocator=allocator, ndarray=id(np.ndarray),
                                inputs=ctypes.addressof(self._inputs), input_count=self.input_count,
                                outputs=ctypes.addressof(self._outputs), output_count=self.output_count,
                                fenced=int(call.fenced))
        self._what = f"{call.name} (coarse-fences)".encode()
        self.struct.what = ctypes.cast(ctypes.c_char_p(self._what), ctypes.c_void_p).value
        self.address = ctypes.addressof(self.struct)
        self._slots = self.input_count + 2 * self.output_count
        self.io_words = self._slots + _TRAP_WORDS  # jv_invoke's io array: slots, then the trap record
        self._io = ctypes.c_uint64 * self.io_words
        self._all_tensors = not self._scalars
        self.direct = self._direct_call()

    @property
    def result_kinds(self) -> list[tuple]:
        """Per output: (VM code, dtype, static shape or None, its memory's ctypes type); the last
        three None for a result that is not an array."""
        return self._results

    @property
    def static_results(self) -> bool:
        """Whether a call takes arrays only and gives arrays of static shapes (what
        `direct` and jitvm.api.entry make without Python), at least one."""
        return self._all_tensors and not self.raw_results and self.output_count > 0 and \
            all(memory is not None for _, _, _, memory in self._results)

    def complete(self, status: int, address: int):
        """The call's results, or its trap raised, from jv_invoke's io array at `address`
        (jitvm.api.entry's calls end here when not all their results were handed over)."""
        io = self._io.from_address(address)
        if status:
            return self._failed(status, io)
        return self._finish(io)

    def _tensor(self, value, d: ValueDecl, dtypes: list[np.dtype]) -> None:
        dims = (ctypes.c_int64 * max(1, len(d.shape)))(*[-1 if s is None else s for s in d.shape])
        self._keep.append(dims)
        value.tensor, value.rank, value.dims, value.dtype_count = 1, len(d.shape), ctypes.addressof(dims), len(dtypes)
        for i, dt in enumerate(dtypes):
            value.dtypes[i], value.element_types[i], value.itemsizes[i] = \
                id(dt), hal_types.ELEMENT_OF_NUMPY[dt], dt.itemsize

    @classmethod
    def build(cls, function) -> "CallPlan | None":
        """The plan of a `jitvm.api.Function`."""
        return cls.for_function(Callee(function.name, function.cconv, function.declaration, function.fenced),
                                function.vm_function, function.module.hal)

    @classmethod
    def for_function(cls, call: "Callee", vm_function, hal, raw_results: bool = False) -> "CallPlan | None":
        """The plan of `vm_function` (a loaded function with a native entry) called as
        `call` describes, its input buffers from `hal`'s device allocator."""
        decl = call.declaration
        if decl is None or hal is None or any(not (d.is_tensor or d.is_scalar) for d in decl.inputs) or \
                any(d.is_tensor and (d.dtype is None or d.dtype not in hal_types.ELEMENT_OF_NUMPY)
                    for d in decl.inputs) or \
                len(decl.outputs) != len(call.cconv.results) or \
                getattr(vm_function.instance.loaded.executable, "call_pool", None) is not None:
            return None
        invoke = native_code()
        if not invoke:
            return None
        plan = cls(call, invoke, vm_function.native_entry(), hal.device.allocator.addr, raw_results)
        plan._alive = (vm_function, hal)  # what keeps the entry, its context and the allocator alive
        return plan

    def __call__(self, args):
        """The call's result (one value, a tuple, None), or DECLINED (`direct` is the same, faster)."""
        if len(args) != self.input_count:
            return DECLINED
        if self._all_tensors:
            io = self._io(*map(id, args))
        else:
            io = self._io(*[id(a) for a in args])
            for k, code, d, label in self._scalars:
                io[k] = abi.argument_slot(code, marshal.scalar_argument(args[k], d, label), label)
        status = self._invoke[1](self.address, io)
        if status:
            return self._failed(status, io)
        if self.raw_results:
            n, m = self.input_count, self.output_count
            return [self._raw_result(code, dtype, shape, memory, io[n + j], io[n + m + j])
                    for j, (code, dtype, shape, memory) in enumerate(self._results)]
        return self._finish(io)

    def _direct_call(self):
        """`self.__call__` for the common call (arrays in, arrays of static shapes out) with
        the least Python between the caller and jv_invoke: the slot array, the native call,
        each result array over its handed-over memory, kept alive by its view; any
        other outcome (a wrong argument count, a decline, a trap, a result not handed over,
        a dynamic shape) takes `__call__`'s way, with its results and errors."""
        invoke, address, io_type = self._invoke[1], self.address, self._io
        n, m = self.input_count, self.output_count
        if not self.static_results:
            return self.__call__
        arrays = [(dtype, shape, memory) for _, dtype, shape, memory in self._results]
        array = CallPlan._array

        def one(io, j):
            dtype, shape, memory = arrays[j]
            return array(dtype, shape, memory, HalBufferView(io[n + j], retain_it=False), io[n + m + j])

        def call(args):
            if len(args) != n:
                return DECLINED
            io = io_type(*map(id, args))
            status = invoke(address, io)
            if status:
                return self._failed(status, io)
            if m == 1:
                if io[n + m]:
                    return one(io, 0)
            elif all(io[n + m + j] for j in range(m)):
                return tuple(one(io, j) for j in range(m))
            return self._finish(io)
        return call

    def _failed(self, status: int, io):
        """DECLINED, or the trap's exception raised, as `__call__` does."""
        if status == DECLINED:
            return DECLINED
        raise traps.take_exception(TrapT.from_address(ctypes.addressof(io) + 8 * self._slots), describe_frame)

    def _finish(self, io):
        """A completed call's results: one value, a tuple, or None."""
        n, m = self.input_count, self.output_count
        out = [self._result(code, dtype, shape, memory, io[n + j], io[n + m + j])
               for j, (code, dtype, shape, memory) in enumerate(self._results)]
        if not out:
            return None
        return out[0] if m == 1 else tuple(out)

    @staticmethod
    def _raw_result(code, dtype, shape, memory, slot, data):
        """(the VM value, an array over its memory when handed over, else None)."""
        if not data:
            return abi.from_slot(code, slot, owned=True), None
        owner = HalBufferView(slot, retain_it=False)
        return owner, CallPlan._array(dtype, shape, memory, owner, data)

    @staticmethod
    def _result(code, dtype, shape, memory, slot, data):
        if not data:
            return marshal.result_value(abi.from_slot(code, slot, owned=True))
        return CallPlan._array(dtype, shape, memory, HalBufferView(slot, retain_it=False), data)

    @staticmethod
    def _array(dtype, shape, memory, owner, data):
        if shape is None:
            shape = owner.shape
            memory = _memory_type(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
        view = memory.from_address(data)
        view.owner = owner  # the array keeps the view (and so its memory) alive
        array = np.frombuffer(view, dtype)
        return array if len(shape) == 1 else array.reshape(shape)


class Callee:
    """What a plan needs to know of the function it calls: its name, calling convention,
    reflection (`declaration`) and whether it is coarse-fenced."""

    __slots__ = ("name", "cconv", "declaration", "fenced")

    def __init__(self, name: str, cconv, declaration, fenced: bool):
        self.name, self.cconv, self.declaration, self.fenced = name, cconv, declaration, fenced


_memory_types: dict[int, type] = {}  # ctypes array types by size (dynamic results)


def _memory_type(size: int):
    t = _memory_types.get(size)
    if t is None:
        t = ctypes.c_uint8 * size
        if len(_memory_types) < 256:
            _memory_types[size] = t
    return t

