"""What a worker does with one mutant (`CHECKS`), and the runners of accepted ones (`RUNNERS`).

"jitvm" loads and verifies, then renders every verified instruction (the disassembler must
cope with whatever verifies) and, with options["run"], runs the module with that runner;
"iree" is IREE's loader; "elf" loads an embedded ELF mutant (elf_fields.py); "selftest" proves the pool's bookkeeping. Anything but jitvm.Error
out of jitvm is a BUG.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from typing import Callable

from .protocol import ACCEPTED, BUG, REJECTED, phase

RUNNERS: dict[str, Callable] = {}
"""name -> runner(verified_module, data) -> counts: calls the module's exports; returns or
raises jitvm.Error"""


def _check_jitvm(data: bytes, options: dict) -> tuple[str, str]:
    import jitvm
    from jitvm.frontend.disasm import Names, Renderer
    from jitvm.frontend.module import load_module
    from jitvm.verify import verify_module

    try:
        verified = verify_module(load_module(data))
        for f in verified.functions:  # the disassembler must cope with whatever verifies
            r = Renderer(Names.of(verified.module), dict(f.block_of_pc))
            for ins in f.instructions:
                r.instruction(ins)
    except jitvm.Error as e:
        return REJECTED, f"{type(e).__name__}: {e}"
    except Exception:  # noqa: BLE001 - the finding: anything but jitvm.Error is a bug
        return BUG, traceback.format_exc()
    runner = options.get("run")
    if runner:
        counts: dict = {}
        try:
            counts = RUNNERS[runner](verified, data) or {}
        except jitvm.Error as e:
            return ACCEPTED, f"ran; raised {type(e).__name__}: {e}", {"runner_errors": 1}
        except Exception:  # noqa: BLE001
            return BUG, traceback.format_exc(), counts
        return ACCEPTED, "ran", counts
    return ACCEPTED, ""


_iree_instance = None


def _check_iree(data: bytes, options: dict) -> tuple[str, str]:
    global _iree_instance
    import iree.runtime as rt

    if _iree_instance is None:
        _iree_instance = rt.VmInstance()
    try:
        rt.VmModule.copy_buffer(_iree_instance, data)
    except Exception as e:  # noqa: BLE001 - IREE reports every load failure as some exception
        if "Error creating vm module" in str(e):
            return REJECTED, f"{type(e).__name__}: {e}"
        # The C loader took the module; the Python binding then failed on it (a name that
        # is not UTF-8): for agreement purposes IREE accepted it.
        return ACCEPTED, f"loaded; the binding then raised {type(e).__name__}: {e}"
    return ACCEPTED, ""


_elf_seeds: dict[int, tuple] = {}  # seed index -> (query symbol value, its code bytes)


def _check_elf(data: bytes, options: dict) -> tuple[str, str]:
    """An embedded ELF mutant (elf_fields.py): `data` is the seed's index (u32) and the
    mutant. It is read and validated, mapped, relocated and protected; when its query
    function is the seed's, same address and same bytes once mapped, and it has no
    initializers, the query is called and the library's tables read and checked as
    executable.create does. Code a mutant points elsewhere (a moved query symbol, code
    bytes that changed, an initializer) is not run: machine code is trusted, as IREE trusts it."""
    import ctypes
    import struct

    import jitvm
    from jitvm.runtime.modules.hal import elf as elfmod
    from jitvm.runtime.modules.hal.library import Library, check_constants

    (index,) = struct.unpack_from("<I", data)
    mutant = data[4:]
    seed = _elf_seeds.get(index)
    if seed is None:
        original = elfmod.read_elf(options["seeds"][index], "<seed>")
        q = original.query_symbol()
        seed = _elf_seeds[index] = (q.value, q.size, original.file_bytes(q.value, q.size, "query"))
    image = None
    try:
        parsed = elfmod.read_elf(mutant, "<mutant>")
        image = elfmod.load(parsed, run_initializers=False)
        q = parsed.query_symbol()
        if parsed.init is not None or parsed.init_array is not None:
            return ACCEPTED, "mapped; not queried (an initializer would run code the mutant points at)"
        address = image.address(elfmod.QUERY_SYMBOL)
        if (q.value, q.size) != seed[:2] or ctypes.string_at(address, q.size) != seed[2]:
            return ACCEPTED, "mapped; not queried (the query function's code is not the seed's)"
        library = Library(address, "<mutant>", None, image.readable, image)
        try:
            check_constants(library)
        finally:
            library.close()
    except jitvm.Error as e:
        return REJECTED, f"{type(e).__name__}: {e}"
    except Exception:  # noqa: BLE001 - the finding: anything but jitvm.Error is a bug
        return BUG, traceback.format_exc()
    finally:
        if image is not None:
            image.close()
    return ACCEPTED, "loaded and queried"


def _check_selftest(data: bytes, options: dict) -> tuple[str, str]:
    """Proves the pool's bookkeeping: b"crash" kills the worker, b"hang" never answers."""
    if data == b"crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if data == b"hang":
        time.sleep(3600)
    if data == b"slow":
        phase("call", "selftest", {"calls": 1})
        time.sleep(3600)
    return ACCEPTED, data.decode(errors="replace")


CHECKS: dict[str, Callable[[bytes, dict], tuple[str, str]]] = {
    "jitvm": _check_jitvm, "iree": _check_iree, "elf": _check_elf, "selftest": _check_selftest}
