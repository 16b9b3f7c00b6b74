"""Parameters as IREE reads them: the same program and weights in an .irpa (with a splat), a .safetensors
and a .gguf give iree.runtime's bits under jitvm.runtime and jitvm.load, loaded from a
mapping without copies; the .irpa writer writes IREE's bytes."""

from __future__ import annotations

import numpy as np
import pytest

import jitvm
from jitvm.runtime.modules.io_parameters import (IoParametersModule, ParameterProvider, archive_bytes,
                                                  open_index)
from jitvm.runtime.modules.hal.allocator import HalAllocator
from jitvm.runtime.modules.io_parameters.index import FileHandle, ParameterEntry
from tests.dropin_support import build, run_both, write_gguf, write_safetensors
from tests.test_dropin_differential import PARAMS

W = np.linspace(-2, 2, 16, dtype=np.float32).reshape(4, 4)
B = np.array([0.5, -1, 0.25, 3], np.float32)
S = np.full(4, 1.5, np.float32)
X = np.array([1, -2, 3.5, 0.25], np.float32)


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    rt = pytest.importorskip("iree.runtime")
    d = tmp_path_factory.mktemp("params")
    (d / "p.vmfb").write_bytes(build("params", PARAMS).read_bytes())
    rt.save_archive_file({"w": W, "b": B, "s": rt.SplatValue(np.array(1.5, np.float32), 4)}, d / "p.irpa")
    write_safetensors(d / "p.safetensors", {"w": W, "b": B, "s": S})
    write_gguf(d / "p.gguf", {"w": W, "b": B, "s": S})
    return d


@pytest.mark.parametrize("archive", ["p.irpa", "p.safetensors", "p.gguf"])
def test_each_archive_format_gives_iree_bits(archives, archive):
    script = f"""
import numpy as np
import iree.runtime as ireert
index = ireert.ParameterIndex()
index.load(str(WORKDIR / "{archive}"))
config = ireert.Config("local-sync")
params = ireert.create_io_parameters_module(config.vm_instance, index.create_provider(scope="model"))
module = ireert.VmModule.mmap(config.vm_instance, str(WORKDIR / "p.vmfb"))
ctx = ireert.SystemContext(vm_modules=[params, module], config=config)
result = [ctx.modules.module.f(np.array([1, -2, 3.5, 0.25], np.float32)).to_host(),
          sorted(k for k, _ in index.items()), sorted(e.length for _, e in index.items()),
          sorted(e.is_splat for _, e in index.items()), params.function_names]
"""
    want, got = run_both(script, archives)
    assert got == want


@pytest.mark.parametrize("spec", ["model=p.irpa", "model=p.safetensors", "model=p.gguf"])
def test_jitvm_load_takes_parameters(archives, spec, monkeypatch):
    rt = pytest.importorskip("iree.runtime")
    monkeypatch.chdir(archives)
    m = jitvm.load(str(archives / "p.vmfb"), parameters=spec)
    index = rt.ParameterIndex()
    index.load(str(archives / "p.irpa"))
    config = rt.Config("local-sync")
    ctx = rt.SystemContext(vm_modules=[rt.create_io_parameters_module(config.vm_instance,
                                                                      index.create_provider(scope="model")),
                                       rt.VmModule.mmap(config.vm_instance, str(archives / "p.vmfb"))],
                           config=config)
    assert m.f(X).tobytes() == ctx.modules.module.f(X).to_host().tobytes()


def test_a_scope_without_provider_is_not_found(archives):
    with pytest.raises(jitvm.Trap, match="no provider registered that handles scopes like 'model'") as e:
        jitvm.load(str(archives / "p.vmfb"), parameters=("other", str(archives / "p.irpa")))
    assert e.value.status_name == "NOT_FOUND" and isinstance(e.value, ValueError)


def test_loaded_parameters_alias_the_mapped_file(archives):
    """A load is an import: the device buffer's bytes are the mapping's, not a copy."""
    index = open_index(str(archives / "p.irpa"))
    entry = index.lookup("w")
    ref = IoParametersModule._load_one(_Device(), entry, 0, 0, entry.length, 0, 0)
    buffer = ref.payload
    address, n = buffer.map_range(0, entry.length, 1)
    assert address == entry.handle.address + entry.offset and n == 64
    assert bytes(buffer.view()) == W.tobytes()
    assert not buffer.allowed_access & 2  # the file was mapped read-only


def test_an_unaligned_parameter_is_copied_not_aliased(tmp_path):
    """A .safetensors tensor 8 bytes past a 64-byte boundary becomes a buffer of its own at
    a 64-byte-aligned address (kernels compiled for llvm-cpu load bindings aligned)."""
    for n in range(2, 34, 2):  # a leading tensor of n floats, until w lands off a 64-byte boundary
        write_safetensors(tmp_path / f"odd{n}.safetensors", {"a": np.arange(n, dtype=np.float32), "w": W})
        index = open_index(str(tmp_path / f"odd{n}.safetensors"))
        entry = index.lookup("w")
        if (entry.handle.address + entry.offset) % 64:
            break
    else:
        pytest.fail("no leading tensor size put w off alignment")
    ref = IoParametersModule._load_one(_Device(), entry, 0, 0, entry.length, 0, 0)
    address, _ = ref.payload.map_range(0, entry.length, 1)
    assert address % 64 == 0 and address != entry.handle.address + entry.offset
    assert bytes(ref.payload.view()) == W.tobytes()


class _Device:
    """What _load_one asks of a device: an allocator (the HAL's own), which imports or copies."""

    def __init__(self):
        self.allocator = HalAllocator.create()


def test_the_irpa_writer_writes_what_iree_writes(archives, tmp_path):
    rt = pytest.importorskip("iree.runtime")
    handle = FileHandle(bytearray(b"\x01\x02\x03\x04\x05"))
    entries = [ParameterEntry("w", 64, b"", handle=FileHandle(W.tobytes())), ParameterEntry("b", 16, b"meta",
               handle=FileHandle(B.tobytes())), ParameterEntry("z", 12, b"", splat=b"\x00\x00\xc0\x3f"),
               ParameterEntry("odd", 5, b"", handle=handle)]
    index = rt.ParameterIndex()
    index.add_buffer("w", W.tobytes())
    index.add_buffer("b", B.tobytes(), metadata="meta")
    index.add_splat("z", np.array(1.5, np.float32), 12)
    index.add_buffer("odd", bytes(handle.view))
    index.create_archive_file(str(tmp_path / "iree.irpa"))
    assert archive_bytes(entries) == (tmp_path / "iree.irpa").read_bytes()


def test_malformed_archives_are_traps_with_iree_statuses(tmp_path):
    (tmp_path / "bad.irpa").write_bytes(b"NOPE" + b"\0" * 60)
    (tmp_path / "short.safetensors").write_bytes(b"\xff" * 12)
    (tmp_path / "x.bin").write_bytes(b"")
    with pytest.raises(jitvm.Trap, match="IRPA file magic missing or invalid"):
        open_index(str(tmp_path / "bad.irpa"))
    with pytest.raises(jitvm.Trap, match="safetensors header"):
        open_index(str(tmp_path / "short.safetensors"))
    with pytest.raises(jitvm.Trap, match="unsupported file format `bin`"):
        open_index(str(tmp_path / "x.bin"))
    with pytest.raises(jitvm.Trap, match="cannot open parameter file"):
        open_index(str(tmp_path / "missing.irpa"))


def test_provider_scopes(archives):
    index = open_index(str(archives / "p.irpa"))
    assert ParameterProvider(index, "model").handles("model") and not ParameterProvider(index).handles("model")
