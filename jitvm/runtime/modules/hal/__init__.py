"""The `hal` native module: IREE's HAL for a synchronous local CPU device."""

from .buffer import HalBuffer
from .buffer_view import HalBufferView
from .device import HalDevice
from ...exec.dispatch import Dispatch, DispatchRunner, SerialDispatchRunner
from .executable import HalExecutable
from .fence import HalFence
from .module import HAL_MODULE_VERSION, HalModule, register_hal_types

__all__ = ["Dispatch", "DispatchRunner", "HAL_MODULE_VERSION", "HalBuffer", "HalBufferView", "HalDevice",
           "HalExecutable", "HalFence", "HalModule", "SerialDispatchRunner", "register_hal_types"]
