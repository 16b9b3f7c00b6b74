"""An iree.runtime drop-in over jitvm: `import jitvm.runtime as ireert` where code imported
`iree.runtime`. Same names and behaviour for what user code touches (load_vm_flatbuffer*,
Config, SystemContext, VmInstance/VmModule/VmContext/VmFunction, the function invoker
with DeviceArray results, the HAL objects, parameters, PyModuleInterface), the same
exception classes for the same failures (jitvm.Error subclasses that are also the
ValueError/RuntimeError/... iree.runtime raises), bit-identical results.
"""

from .arrays import DeviceArray, asdevicearray
from .hal import (BufferCompatibility, BufferUsage, HalAllocator, HalBuffer, HalBufferView, HalDevice, HalDriver,
                  HalElementType, HalFence, HalSemaphore, MappedMemory, MemoryAccess, MemoryType, Shape, get_device,
                  get_driver, get_first_device, query_available_drivers)
from .invoke import FunctionInvoker
from .io import (FileHandle, ParameterIndex, ParameterIndexEntry, ParameterProvider, SplatValue,
                 create_io_parameters_module, parameter_index_add_numpy_ndarray,
                 parameter_index_entry_as_numpy_flat_ndarray, parameter_index_entry_as_numpy_ndarray, save_archive_file)
from .refs import VmRef
from .system import (TARGET_BACKEND_TO_DRIVER, BoundModule, BoundModules, Config, SystemContext, load_vm_flatbuffer,
                     load_vm_flatbuffer_file, load_vm_module, load_vm_modules, normalize_value)
from .vm import (Linkage, PyModuleInterface, VmBuffer, VmContext, VmFunction, VmInstance, VmModule, VmVariantList,
                 create_hal_module)

__all__ = [
    "BoundModule", "BoundModules", "BufferCompatibility", "BufferUsage", "Config", "DeviceArray", "FileHandle",
    "FunctionInvoker", "HalAllocator", "HalBuffer", "HalBufferView", "HalDevice", "HalDriver", "HalElementType",
    "HalFence", "HalSemaphore", "Linkage", "MappedMemory", "MemoryAccess", "MemoryType", "ParameterIndex",
    "ParameterIndexEntry", "ParameterProvider", "PyModuleInterface", "Shape", "SplatValue", "SystemContext",
    "TARGET_BACKEND_TO_DRIVER", "VmBuffer", "VmContext", "VmFunction", "VmInstance", "VmModule", "VmRef",
    "VmVariantList", "asdevicearray", "create_hal_module", "create_io_parameters_module", "get_device",
    "get_driver", "get_first_device", "load_vm_flatbuffer", "load_vm_flatbuffer_file", "load_vm_module",
    "load_vm_modules", "normalize_value", "parameter_index_add_numpy_ndarray",
    "parameter_index_entry_as_numpy_flat_ndarray", "parameter_index_entry_as_numpy_ndarray",
    "query_available_drivers", "save_archive_file",
]
