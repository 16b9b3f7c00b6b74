"""The `io_parameters` native module: parameters (weights) read from archives, as IREE reads them.

A `ParameterIndex` lists named entries (a byte range of a file, or a splat pattern) parsed
from `.irpa` (IREE's parameter archive), `.safetensors` or `.gguf` files, mapped, never
copied. A `ParameterProvider` serves one index under a scope; the module's `load`,
`gather` and `scatter` exports move parameters into and out of device buffers.
"""

from .formats import load_archive, open_index
from .writer import archive_bytes, write_archive
from .index import FileHandle, ParameterEntry, ParameterIndex, ParameterProvider
from .module import IO_PARAMETERS_MODULE_VERSION, IoParametersModule

__all__ = ["FileHandle", "IO_PARAMETERS_MODULE_VERSION", "IoParametersModule", "ParameterEntry",
           "ParameterIndex", "ParameterProvider", "archive_bytes", "load_archive", "open_index", "write_archive"]
