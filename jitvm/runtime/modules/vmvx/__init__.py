"""The `vmvx` native module: IREE's VMVX microkernels over vm.buffers, in numpy."""

from .module import EXPORTS, VMVX_MODULE_VERSION, VmvxModule

__all__ = ["EXPORTS", "VMVX_MODULE_VERSION", "VmvxModule"]
