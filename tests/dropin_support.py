"""Running one script under iree.runtime and under jitvm.runtime, and comparing what it made.

A script is Python that imports `iree.runtime as ireert`, reads its inputs from `WORKDIR`
and leaves its answer in `result`; `run_both` runs it as written and with the import
swapped to `jitvm.runtime`, in this process, and `canonical` reduces both answers to
comparable values (arrays by dtype, shape and bytes: bit for bit). `build` compiles MLIR
(or ONNX-imported MLIR) with iree-compile into a session cache keyed by content.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from jitvm.fuzz.corpus import VMVX_FLAGS, find_tool

IREE_IMPORT = "import iree.runtime as ireert"
JITVM_IMPORT = "import jitvm.runtime as ireert"
_CACHE = Path(tempfile.mkdtemp(prefix="jitvm-dropin-"))

try:  # iree.runtime's bindings report objects alive at exit (module-level caches): noise here
    from iree.runtime import _binding

    _binding.disable_leak_checker()
except ImportError:
    pass


def tool(name: str) -> str:
    path = find_tool(name)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


def build(name: str, mlir: str, *flags: str, onnx_model: bytes | None = None, target=VMVX_FLAGS) -> Path:
    """`name`.vmfb compiled from `mlir` (for `target`, VMVX by default), or from `onnx_model`
    imported by iree-import-onnx."""
    key = hashlib.sha256(repr((mlir, flags, onnx_model, target)).encode()).hexdigest()[:16]
    out = _CACHE / f"{name}-{key}.vmfb"
    if out.exists():
        return out
    source = _CACHE / f"{name}-{key}.mlir"
    if onnx_model is not None:
        model = _CACHE / f"{name}-{key}.onnx"
        model.write_bytes(onnx_model)
        subprocess.run([tool("iree-import-onnx"), str(model), "-o", str(source)], check=True, capture_output=True)
        flags = ("--iree-input-type=onnx", *flags)
    else:
        source.write_text(mlir)
    done = subprocess.run([tool("iree-compile"), *target, *flags, str(source), "-o", str(out)],
                          capture_output=True, text=True)
    if done.returncode:
        raise AssertionError(f"iree-compile failed for {name}:\n{done.stderr}")
    return out


def run(script: str, runtime: str, workdir: Path):
    """The `result` the script leaves, run against `runtime` ("iree" or "jitvm")."""
    assert IREE_IMPORT in script, "a differential script imports iree.runtime as ireert"
    text = script if runtime == "iree" else script.replace(IREE_IMPORT, JITVM_IMPORT)
    scope = {"__name__": f"__dropin_{runtime}__", "WORKDIR": workdir}
    exec(compile(text, f"<{runtime} script>", "exec"), scope)
    return scope["result"]


def canonical(value):
    """Nested lists/tuples/dicts of ('array', dtype, shape, bytes), ints, floats (by bits), strs."""
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (bool, int, str, bytes)) or value is None:
        return value
    if isinstance(value, float):
        return ("float", np.float64(value).tobytes())
    if type(value).__name__ == "DeviceArray" or isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        return ("array", arr.dtype.name, arr.dtype.str, arr.shape, np.ascontiguousarray(arr).tobytes())
    return ("repr", type(value).__name__)


def run_both(script: str, workdir: Path):
    """(iree's result, jitvm's result), both canonical; the test asserts they are equal."""
    return canonical(run(script, "iree", workdir)), canonical(run(script, "jitvm", workdir))


def write_safetensors(path: Path, arrays: dict) -> None:
    """A .safetensors file (8-byte header length, JSON header, data) of little-endian arrays."""
    import json
    import struct

    header, blobs, offset = {}, [], 0
    names = {np.dtype(np.float32): "F32", np.dtype(np.int32): "I32", np.dtype(np.float16): "F16"}
    for key, arr in arrays.items():
        data = np.ascontiguousarray(arr).tobytes()
        header[key] = {"dtype": names[arr.dtype], "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "np"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_gguf(path: Path, arrays: dict, alignment: int = 32) -> None:
    """A GGUF v3 file of f32 tensors (ggml type 0) with one metadata key."""
    import struct

    def string(s: str) -> bytes:
        b = s.encode()
        return struct.pack("<Q", len(b)) + b

    out = bytearray(struct.pack("<IIQQ", 0x46554747, 3, len(arrays), 1))
    out += string("general.name") + struct.pack("<I", 8) + string("jitvm-test")
    offset, blobs = 0, []
    for key, arr in arrays.items():
        assert arr.dtype == np.float32
        dims = list(reversed(arr.shape))  # ggml lists the fastest dimension first
        out += string(key) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", 0, offset)
        data = np.ascontiguousarray(arr).tobytes()
        pad = -len(data) % alignment
        blobs.append(data + b"\0" * pad)
        offset += len(data) + pad
    out += b"\0" * (-len(out) % alignment)
    path.write_bytes(bytes(out) + b"".join(blobs))
