"""hal.executable.create: the executable's format decides who loads its bytes.

VMVX modules are loaded by jitvm itself (hal.executable), llvm-cpu libraries from their
ELF (hal.native_executable); the device's format policy (hal.formats) says which formats
it offers the program.
"""

from __future__ import annotations

from ...exec.dispatch import DispatchRunner
from .errors import hal_error
from .executable import ExecutableLoader, HalExecutable, create_vmvx_executable
from .formats import loader_for, supported_formats
from .native_executable import create_library_executable


def create_executable(executable_format: str, data: bytes, constants: bytes | None, loader: ExecutableLoader,
                      runner: DispatchRunner, vmvx_module_factory, policy=None) -> HalExecutable:
    kind = loader_for(executable_format)
    if kind is None:
        raise hal_error("NOT_FOUND", f"no executable loader registered for the executable format "
                                     f"'{executable_format}'; the local CPU device loads "
                                     f"{', '.join(repr(f) for f in supported_formats())}")
    if kind != "vmvx":
        return create_library_executable(kind, executable_format, data, constants, policy, runner)
    return create_vmvx_executable(data, constants, loader, runner, vmvx_module_factory)
