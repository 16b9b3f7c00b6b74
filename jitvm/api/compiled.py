"""Compiled code you can ship: a module's bundle (runtime.native.bundle) and what it must match.

`write_bundle` writes the code-store entries a load of a module read or wrote (`jitvm compile`
loads it with every function of the host module and of each embedded executable compiled,
as `jitvm.load` does today) and the runtime's own native code, with a manifest: the module's
digest, the host it was compiled for, jitvm's version and sources, LLVM's version. `open_bundle`
refuses a bundle made for other module bytes, another host, or another jitvm or LLVM with a
`jitvm.Error` that names the difference; a matching bundle's code is then used instead of
compiling (a fleet of machines runs one model without each compiling it).
"""

from __future__ import annotations

import hashlib

import llvmlite

from ..errors import Error
from ..lower.llvm.cache import sources_digest
from ..runtime.exec import fpu, nativecode
from ..runtime.modules.hal import native as hal_native
from ..runtime.native import bundle, cache, engine, hostinfo
from ..runtime.native import target as targets
from ..runtime.vm import nativelib
from ..version import __version__
from . import entry


def manifest_for(module) -> dict:
    """What code compiled here and now for `module` (a BytecodeModule) depends on."""
    host = targets.host()
    return {
        "module_sha256": hashlib.sha256(module.archive.flatbuffer).hexdigest(),
        "module_name": module.name,
        "target": {"triple": host.triple, "cpu": host.cpu, "features": host.features},
        "jitvm": {"version": __version__, "sources": sources_digest()},
        "llvm": {"llvmlite": llvmlite.__version__, "version": targets.llvm_version()},
    }


def write_bundle(module, keys, out) -> int:
    """Writes the code-store entries `keys` (what loading `module`, a BytecodeModule, read or
    stored: `cache.recording()`) and all of the runtime's own native code to `out`, with the
    manifest; returns how many entries the bundle holds."""
    _load_runtime_code()
    host = {hostinfo.record_key()} if cache.contains(hostinfo.record_key()) else set()  # read before LLVM on a load
    return bundle.write(out, manifest_for(module), set(keys) | engine.RUNTIME_KEYS | host)


def _load_runtime_code() -> None:
    """Compiles (or maps) every piece of the runtime's own native code now, including what a
    load alone does not need yet (the executor's, used from the first dispatch on)."""
    nativelib.load()
    fpu.register_symbols()
    nativecode.native()
    hal_native.code()
    entry.native_code()  # the call plan's and its native entry's, used from a reflected function's first call on


def open_bundle(path, module) -> bundle.Bundle:
    """The bundle at `path`, checked against `module` and this host, jitvm and LLVM."""
    opened = bundle.Bundle(path)
    hostinfo.adopt(opened)  # this host's description, if the bundle was made on such a host
    want, have = manifest_for(module), opened.manifest
    for field, what in (("module_sha256", "module"), ("target", "host"), ("jitvm", "jitvm"), ("llvm", "LLVM")):
        if have.get(field) != want[field]:
            raise Error(f"{path}: compiled for another {what} ({_show(have.get(field))}; this load has "
                        f"{_show(want[field])}); compile it again with `jitvm compile`")
    return opened


def _show(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)
