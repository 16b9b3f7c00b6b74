"""The `hal` native module: one synchronous local CPU device, IREE hal ABI version 7.

Instantiate one per context with the backend the context's bytecode modules use; that
backend also prepares the VMVX executables the program creates, and its dispatch runner
(if it has one) runs their workgroups. What a model call uses is native (hal.native:
buffers, views, fences, the queue); what runs once per module or per recorded command
buffer is Python (the exports_* mixins).
"""

from __future__ import annotations

from ...vm.interface import NativeModule
from .allocator import HalAllocator
from .buffer import HalBuffer
from .buffer_view import HalBufferView
from .command_buffer import HalCommandBuffer
from .device import HalDevice
from ...exec.dispatch import DispatchRunner, runner_for
from ..vmvx import VmvxModule
from .errors import hal_error
from .executable import ExecutableLoader, HalExecutable
from .exports_buffer import BufferExports
from .exports_command import CommandExports
from .exports_device import DeviceExports
from .fence import HalFence, HalSemaphore
from .formats import FormatPolicy
from .file import HalFile
from . import native
from ...vm.objects import NativeObject, register_type

HAL_MODULE_VERSION = 7


class HalChannel(NativeObject):
    type_name = "hal.channel"


class HalEvent(NativeObject):
    type_name = "hal.event"


class HalModule(DeviceExports, BufferExports, CommandExports, NativeModule):
    name = "hal"
    version = HAL_MODULE_VERSION
    ref_types = (HalAllocator, HalBuffer, HalBufferView, HalChannel, HalCommandBuffer, HalDevice, HalEvent,
                 HalExecutable, HalFence, HalFile, HalSemaphore)

    def __init__(self, loader: ExecutableLoader | None, runner: DispatchRunner | None = None, trace_sink=None,
                 policy: FormatPolicy | None = None, devices=None):
        """`loader` loads the executables the program creates, with the backend the host
        module uses (None: a HAL that creates none); that backend's runner (if it has one)
        dispatches them unless `runner` is given. `policy` (FormatPolicy.for_program(host
        module)) decides which executable variants the device offers the program: llvm-cpu
        first, JITVM_PREFER=vmvx, CPU features (hal.formats). `devices` (device Refs, made
        by the caller, e.g. one per `--device`) replaces the one device made here."""
        super().__init__()
        self.register_types()
        self.loader = loader if loader is not None else _NoExecutables()
        self.runner = runner if runner is not None else runner_for(self.loader.backend)
        self.trace_sink = trace_sink
        self.devices = list(devices) if devices else \
            [HalDevice.new(self.loader, self.runner, policy or FormatPolicy.for_program(None))]

    def native_functions(self) -> dict[str, tuple[str, int]]:
        return native.exports()

    @property
    def device(self) -> HalDevice:
        return self.devices[0].payload

    def vmvx_module(self):
        return VmvxModule()


class _NoExecutables:
    """The loader of a HAL without a backend: executable.create fails as for a bad format."""

    backend = None

    def __call__(self, data: bytes, origin: str):
        raise hal_error("UNAVAILABLE", f"{origin}: this HAL was created without an executable loader")


def register_hal_types() -> None:
    """Makes the HAL's ref types known (the verifier refuses modules naming unknown types)."""
    for cls in HalModule.ref_types:
        register_type(cls.type_name)
