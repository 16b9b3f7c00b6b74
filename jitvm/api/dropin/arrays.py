"""DeviceArray: a function result (a buffer view) that behaves as a numpy array.

`to_host()` and `__array__` map the buffer's memory (no copy; the array keeps the buffer
alive), numpy functions and operators work on it, and `astype`/`reshape`/indexing go
through the host array, as iree.runtime's DeviceArray does.
"""

from __future__ import annotations

import numpy as np
import numpy.lib.mixins

from ...errors import ArgumentError
from .hal import BufferUsage, HalBufferView, HalDevice, HalElementType, MemoryType, as_array_argument

_HANDLED = {}


def _implements(np_function):
    def mark(func):
        _HANDLED[np_function] = func
        return func
    return mark


class DeviceArray(numpy.lib.mixins.NDArrayOperatorsMixin):
    def __init__(self, device: HalDevice, buffer_view: HalBufferView, implicit_host_transfer: bool = False,
                 override_dtype=None, host_array: np.ndarray | None = None):
        self._device = device
        self._buffer_view = buffer_view
        self._implicit_host_transfer = implicit_host_transfer
        self._override_dtype = override_dtype
        self._host_array: np.ndarray | None = None
        # the mapping of the view's memory, when its maker has it already (jitvm.api.plan's)
        self._mapped = host_array if override_dtype is None else None

    @property
    def __jitvm_ref__(self):
        return self._buffer_view.__jitvm_ref__

    def __array__(self, dtype=None, copy=None):
        host = self._transfer_to_host(True)
        return host if dtype is None else host.astype(dtype)

    def __array_function__(self, func, types, args, kwargs):
        if func in _HANDLED:
            return _HANDLED[func](*args, **kwargs)
        args = tuple(a.to_host() if isinstance(a, DeviceArray) else a for a in args)
        return func(*args, **kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(i._transfer_to_host(True) if isinstance(i, DeviceArray) else i for i in inputs)
        if kwargs.get("out") is not None:
            kwargs = dict(kwargs, out=tuple(o._transfer_to_host(True) if isinstance(o, DeviceArray) else o
                                            for o in kwargs["out"]))
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __repr__(self):
        return f"<IREE DeviceArray: shape={np.shape(self)}, dtype={self.dtype}>"

    @property
    def is_host_accessible(self) -> bool:
        return self._host_array is not None

    def to_host(self) -> np.ndarray:
        return self._transfer_to_host(False)

    def _transfer_to_host(self, implicit: bool) -> np.ndarray:
        if implicit and not self._implicit_host_transfer:
            raise ArgumentError("DeviceArray cannot be implicitly transferred to the host: "
                                "if necessary, do an explicit transfer via .to_host()")
        if self._host_array is None:
            host, self._mapped = self._mapped, None
            if host is None:
                raw = self._raw_dtype()
                view = self._buffer_view._view
                host = view.mapped_numpy(self._buffer_view.__jitvm_ref__, raw)
                if host is None:  # no elements
                    host = np.empty(view.shape, raw)
            if self._override_dtype is not None and np.dtype(self._override_dtype) != host.dtype:
                host = host.astype(self._override_dtype)
            self._host_array = host
        return self._host_array

    def _raw_dtype(self) -> np.dtype:
        return HalElementType.map_to_dtype(self._buffer_view._view.element_type)

    @property
    def dtype(self):
        return np.dtype(self._override_dtype) if self._override_dtype is not None else self._raw_dtype()

    @property
    def shape(self):
        return np.shape(self)

    def astype(self, dtype, casting="unsafe", copy=True):
        if self.dtype == dtype and not copy:
            return self
        return self.to_host().astype(dtype, casting=casting, copy=copy)

    def reshape(self, *args):
        return self.to_host().reshape(*args)

    def __iter__(self):
        return iter(self.to_host())

    def __getitem__(self, index):
        return self.to_host()[index]

    def __len__(self):
        shape = self._buffer_view.shape
        if not shape:
            raise TypeError("len() of unsized object")
        return shape[0]

    def __deepcopy__(self, memo):
        return self.to_host()

    def __reduce__(self):
        return _restore, (self.to_host(),)


def _restore(array):
    return array


@_implements(np.shape)
def _shape(arr: DeviceArray):
    return arr._buffer_view.shape


@_implements(np.reshape)
def _reshape(arr: DeviceArray, *args, **kwargs):
    return arr.to_host().reshape(*args, **kwargs)


def asdevicearray(device: HalDevice, a, dtype=None, *, implicit_host_transfer: bool = False,
                  memory_type=MemoryType.DEVICE_LOCAL, allowed_usage=BufferUsage.DEFAULT,
                  element_type=None) -> DeviceArray:
    """A DeviceArray holding a copy of array-like `a` on `device`."""
    if isinstance(a, DeviceArray) and dtype is None:
        return a
    arr = np.asarray(a.to_host() if isinstance(a, DeviceArray) else a, dtype=dtype, order="C")
    view = as_array_argument(device, arr)
    return DeviceArray(device, view, implicit_host_transfer=implicit_host_transfer, override_dtype=arr.dtype)
