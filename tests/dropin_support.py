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

from tests.corpus import VMVX_FLAGS, find_tool

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


def build(name: str, mlir: str, *flags: str, onnx_model: bytes | None = None) -> Path:
    """`name`.vmfb compiled from `mlir` (VMVX), or from `onnx_model` imported by iree-import-onnx."""
    key = hashlib.sha256(repr((mlir, flags, onnx_model)).encode()).hexdigest()[:16]
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
    done = subprocess.run([tool("iree-compile"), *VMVX_FLAGS, *flags, str(source), "-o", str(out)],
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
