"""FunctionInvoker: calls a VmFunction with Python values, as iree.runtime's invoker does.

Arguments convert by what they are (iree.runtime's dynamic mode): arrays and numpy scalars
become device-local buffer views (0-d included), ints i64 and floats f64 variants, lists
and tuples variant lists, API objects their refs; the VM signature then takes them.
Buffer-view results come back as DeviceArrays, values as ints and floats, other refs as VmRef.

A function whose reflection declares tensor inputs only (no fences) is called through the
native call plan (jitvm.api.plan) when its arguments are C-contiguous arrays of the declared
shapes and dtypes: the arrays are checked and copied into device buffers of their own dtype
(what the conversion above makes of them) by one native call; anything else is converted here.
"""

from __future__ import annotations

import numpy as np

from ...errors import ArgumentError
from ...runtime.vm.objects import Ref
from ..declaration import parse_declaration
from ..plan import DECLINED, CallPlan, Callee
from .arrays import DeviceArray
from .hal import HalBufferView, HalDevice, _HalShim, as_array_argument
from .refs import VmRef, wrap
from .vm import VmContext, VmFunction, VmVariantList


def _push(out: VmVariantList, device: HalDevice, value) -> None:
    ref = getattr(value, "__jitvm_ref__", None)
    if ref is not None or isinstance(value, Ref):
        out._list.append(ref if ref is not None else value)
    elif value is None:
        out._list.append(None)
    elif isinstance(value, (np.ndarray, np.generic)):
        out._list.append(as_array_argument(device, value).__jitvm_ref__)
    elif isinstance(value, (bool, int)):
        out.push_int(int(value))
    elif isinstance(value, float):
        out.push_float(value)
    elif isinstance(value, (list, tuple)):
        inner = VmVariantList(len(value))
        for v in value:
            _push(inner, device, v)
        out.push_list(inner)
    else:
        raise ArgumentError(f"could not convert python value to VM: {value!r}")


def _result(device: HalDevice, value, host: np.ndarray | None = None):
    """A result as iree.runtime gives it; `host`: the array over a view's memory, if made."""
    if value is None or isinstance(value, (int, float)):
        return value
    if value.type_name == "hal.buffer_view":
        return DeviceArray(device, HalBufferView._wrap(value), implicit_host_transfer=True, host_array=host)
    return wrap(value)


class FunctionInvoker:
    """A VmFunction bound to a context and the device its array arguments are made on."""

    __slots__ = ("_vm_context", "_device", "_vm_function", "_plan")

    def __init__(self, vm_context: VmContext, device: HalDevice, vm_function: VmFunction):
        self._vm_context = vm_context
        self._device = device
        self._vm_function = vm_function
        self._plan = None  # the native call (jitvm.api.plan), built on the first call; False: none

    def _native_plan(self):
        reflection = self._vm_function.reflection
        decl = parse_declaration(reflection.get("iree.abi.declaration"))
        if decl is None or reflection.get("iree.abi.model") == "coarse-fences" or \
                any(not d.is_tensor for d in decl.inputs):
            return False
        fn = self._vm_context._instance_of(self._vm_function)
        if not hasattr(fn, "native_entry") or not hasattr(fn, "instance") or len(decl.inputs) != len(fn.cconv.args):
            return False
        plan = CallPlan.for_function(Callee(fn.name, fn.cconv, decl, False), fn, _HalShim(self._device),
                                     raw_results=True)
        return plan if plan is not None else False

    @property
    def vm_function(self) -> VmFunction:
        return self._vm_function

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise ArgumentError(f"{self._vm_function.name}: keyword arguments need function reflection "
                                f"this function does not carry")
        plan = self._plan
        if plan is None:
            plan = self._plan = self._native_plan()
        if plan and len(args) == plan.input_count:
            out = plan(args)
            if out is not DECLINED:
                results = [_result(self._device, value, host) for value, host in out]
                if len(results) == 1:
                    return results[0]
                return None if not results else tuple(results)
        arg_list = VmVariantList(len(args))
        for value in args:
            _push(arg_list, self._device, value)
        ret_list = VmVariantList(1)
        self._vm_context.invoke(self._vm_function, arg_list, ret_list)
        results = [_result(self._device, ret_list._list.get(i)) for i in range(len(ret_list))]
        if len(results) == 1:
            return results[0]
        return None if not results else tuple(results)

    def __repr__(self):
        return repr(self._vm_function)


__all__ = ["FunctionInvoker", "VmRef"]
