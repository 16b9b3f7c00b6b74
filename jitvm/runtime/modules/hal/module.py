"""The `hal` native module: one synchronous local CPU device, IREE hal ABI version 7.

Instantiate one per context with the backend the context's bytecode modules use; that
backend also prepares the VMVX executables the program creates, and its dispatch runner
(if it has one) runs their workgroups.
"""

from __future__ import annotations

from ...vm.interface import NativeModule
from .allocator import HalAllocator
from .buffer import HalBuffer
from .buffer_view import HalBufferView
from .command_buffer import HalCommandBuffer
from .device import HalDevice
from ...exec.dispatch import DispatchRunner, runner_for
from .executable import HalExecutable
from .exports_buffer import BufferExports
from .exports_command import CommandExports
from .exports_device import DeviceExports
from .exports_fence import FenceExports
from .fence import HalFence
from .formats import FormatPolicy
from .file import HalFile
from ...vm.objects import NativeObject, register_type

HAL_MODULE_VERSION = 7


class HalChannel(NativeObject):
    type_name = "hal.channel"


class HalEvent(NativeObject):
    type_name = "hal.event"


class HalSemaphore(NativeObject):
    type_name = "hal.semaphore"


class HalModule(DeviceExports, BufferExports, CommandExports, FenceExports, NativeModule):
    name = "hal"
    version = HAL_MODULE_VERSION
    ref_types = (HalAllocator, HalBuffer, HalBufferView, HalChannel, HalCommandBuffer, HalDevice, HalEvent,
                 HalExecutable, HalFence, HalFile, HalSemaphore)

    def __init__(self, backend=None, runner: DispatchRunner | None = None, trace_sink=None,
                 policy: FormatPolicy | None = None):
        """`backend` prepares executables (default: the reference interpreter); `policy`
        (FormatPolicy.for_program(host module)) decides which executable variants the device
        offers the program: llvm-cpu first, JITVM_PREFER=vmvx, CPU features (hal.formats)."""
        super().__init__()
        self.register_types()
        if backend is None:
            from ....api import get_backend
            backend = get_backend("interp")
        self.backend = backend
        self.runner = runner if runner is not None else runner_for(backend)
        self.trace_sink = trace_sink
        self.devices = [HalDevice.new(backend, self.runner, policy or FormatPolicy.for_program(None))]

    @property
    def device(self) -> HalDevice:
        return self.devices[0].payload

    def vmvx_module(self):
        from ..vmvx import VmvxModule
        return VmvxModule()


def register_hal_types() -> None:
    """Makes the HAL's ref types known (the verifier refuses modules naming unknown types)."""
    for cls in HalModule.ref_types:
        register_type(cls.type_name)
