"""What a fresh process pays before its first result: nothing it does not need.

Timing is not asserted (the machine is shared); what is imported is, since each of these
costs a known amount: LLVM's bindings and the pipeline ~0.1 s, ml_dtypes 0.5-0.9 s."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CNN = Path(__file__).resolve().parents[1] / "jitvm" / "examples" / "cnn.vmfb"


def _imported_after(code: str, names: list[str], env: dict | None = None) -> list[bool]:
    probe = f"import sys\n{code}\nprint(*[n in sys.modules for n in {names!r}])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, **(env or {})}).stdout
    return [w == "True" for w in out.split()]


def test_import_jitvm_loads_neither_llvm_nor_the_pipeline():
    assert _imported_after("import jitvm", ["llvmlite", "jitvm.lower", "jitvm.verify", "numpy"]) == \
        [False, False, False, False]


def test_a_module_without_bf16_or_f8_never_imports_ml_dtypes():
    code = f"import numpy as np, jitvm\nm = jitvm.load({str(CNN)!r}, backend='interp')\n" \
           "m.predict(np.zeros((1, 28, 28, 1), np.float32))"
    assert _imported_after(code, ["ml_dtypes"]) == [False]


def test_bf16_and_f8_tables_fill_in_on_first_use():
    """The tables answer for ml_dtypes' types once asked (the bf16 tests run them end to end)."""
    code = ("from jitvm.runtime.modules.hal import types as t\nfrom jitvm.api.declaration import ELEMENT_DTYPES\n"
            "import numpy as np\nassert 'bf16' in ELEMENT_DTYPES\n"
            "assert t.NUMPY_OF_ELEMENT[t.MLIR_ELEMENT_TYPES['f8E4M3FN']].name == 'float8_e4m3fn'\n"
            "import ml_dtypes\nassert t.ELEMENT_OF_NUMPY.get(np.dtype(ml_dtypes.bfloat16)) == t.MLIR_ELEMENT_TYPES['bf16']\n"
            "assert t.ELEMENT_OF_NUMPY.get(np.dtype('float32')) == t.MLIR_ELEMENT_TYPES['f32']")
    assert _imported_after(code, ["ml_dtypes"]) == [True]


LOWERING = ["jitvm.lower.module", "jitvm.lower.emit", "jitvm.lower.loops"]
# what neither a load nor a call of a VMVX program without parameters needs: the disassembler
# (verification messages), the ELF reader (llvm-cpu executables), parameter archives
UNUSED = ["jitvm.frontend.disasm", "jitvm.runtime.modules.hal.elf", "jitvm.runtime.modules.io_parameters"]
# what only compiling needs of the standard library (the compile pool's and helper's directories,
# their workers and the detached tier-up's: subprocess brings selectors, signal and locale)
COMPILING_ONLY = ["tempfile", "shutil", "subprocess", "selectors"]


def test_a_warm_load_imports_none_of_the_lowering(tmp_path):
    """Code found in the store is loaded as it is: the lowering (per-op emitters, the loop
    optimiser) is imported only by a process that compiles something."""
    code = f"import numpy as np, jitvm\nm = jitvm.load({str(CNN)!r}, tier='baseline')\n" \
           "m.predict(np.zeros((1, 28, 28, 1), np.float32))"
    env = {"JITVM_CACHE_DIR": str(tmp_path)}
    assert _imported_after(code, LOWERING, env) == [True, True, True]  # an empty store: compiled
    assert _imported_after(code, LOWERING + UNUSED + COMPILING_ONLY, env) == [False] * 10  # found


def test_run_once_code_is_compiled_to_python_once_per_store(tmp_path):
    """The interpreter's Python for `__init` (generated with no process's addresses in it)
    is compiled by the first process and read from the store by the next."""
    code = f"import numpy as np, jitvm\nfrom jitvm.fallback_interp import codegen\n" \
           f"m = jitvm.load({str(CNN)!r}, tier='baseline')\nprint(codegen.STATS['compiled'], codegen.STATS['cache_hits'])"
    env = {**os.environ, "JITVM_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
            .stdout.split() for _ in range(2)]
    assert runs[0][0] != "0" and runs[0][1] == "0"
    assert runs[1] == ["0", runs[0][0]]


def test_dataclasses_a_load_creates_have_docstrings():
    """A dataclass without a docstring gets one made from `inspect.signature` when it is
    created: some 0.6 ms each at import, a third of what a warm load spent on dataclasses."""
    code = ("import dataclasses, sys, jitvm.api\n"
            "print(*sorted(f'{c.__module__}.{c.__qualname__}' for m in list(sys.modules.values())\n"
            "      if m.__name__.startswith('jitvm') for c in vars(m).values()\n"
            "      if isinstance(c, type) and c.__module__ == m.__name__ and dataclasses.is_dataclass(c)\n"
            "      and '__doc__' in vars(c) and c.__doc__.startswith(c.__name__ + '(')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == []


def test_a_warm_load_reads_no_memory_maps(tmp_path):
    """Releasing memory at the end of a load scans the process's maps for LLVM's library
    (2-3 ms): not in a process that never loaded it."""
    code = ("import sys, jitvm\nfrom jitvm.runtime.native import memory\nscans = []\n"
            "scan = memory.clean_readonly_ranges\n"
            "memory.clean_readonly_ranges = lambda *a: scans.append(1) or scan(*a)\n"
            f"jitvm.load({str(CNN)!r}, tier='baseline')\n"
            "print(len(scans), 'llvmlite.binding' in sys.modules)")
    env = {**os.environ, "JITVM_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
            .stdout.split() for _ in range(2)]
    assert runs[1] == ["0", "False"]  # the first process filled the store (LLVM in its helper or here)
    code = "import llvmlite.binding\nfrom jitvm.runtime.native import memory\nmemory.release()\nprint(bool(memory._ranges))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() \
        == ["True"]  # once LLVM is loaded, its pages are found


def test_a_load_pauses_the_garbage_collector():
    """Importing the runtime and loading make objects that live on: the collector's passes
    over them (40-odd in a CNN load) are put off until the load returns, and it is left on
    or off as the caller had it."""
    code = ("import gc, jitvm\npasses = []\ngc.callbacks.append(lambda phase, info: passes.append(phase))\n"
            f"jitvm.load({str(CNN)!r}, backend='interp')\nprint(len(passes), gc.isenabled())\n"
            f"gc.disable()\njitvm.load({str(CNN)!r}, backend='interp')\nprint(gc.isenabled())")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() \
        == ["0", "True", "False"]
