"""Compiled code you can ship: `jitvm compile` writes a bundle, a load with `compiled=` runs it
with no compilation at all, and a bundle (or a cache entry) that does not match or is
damaged is refused or rebuilt, never run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import jitvm
from jitvm.runtime.native import cache

EXAMPLES = Path(jitvm.__file__).parent / "examples"
CNN, HELLO = str(EXAMPLES / "cnn.vmfb"), str(EXAMPLES / "hello.vmfb")

PROBE = """
import json, sys
import numpy as np, jitvm
from jitvm.lower.backend import STATS
from jitvm.runtime.native import engine
m = jitvm.load(sys.argv[1], compiled=sys.argv[2] if len(sys.argv) > 2 else None)
out = m.predict(np.linspace(0, 1, 784, dtype=np.float32).reshape(1, 28, 28, 1))
print(json.dumps({"stats": {**STATS, **engine.STATS}, "out": out.tolist()}))
"""


def _probe(cache_dir: Path, *args) -> dict:
    env = {**os.environ, "JITVM_CACHE_DIR": str(cache_dir)}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def bundle_path(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bundle")
    out = d / "cnn.jvc"
    env = {**os.environ, "JITVM_CACHE_DIR": str(d / "cache")}
    done = subprocess.run([sys.executable, "-m", "jitvm", "compile", CNN, "-o", str(out)], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.exists() and "compiled entries" in done.stdout
    return out


def test_a_bundle_runs_with_no_compilation(bundle_path, tmp_path):
    reference = _probe(tmp_path / "plain", CNN)
    shipped = _probe(tmp_path / "empty", CNN, str(bundle_path))
    assert reference["stats"].get("compiled_modules") and reference["stats"].get("runtime_compiled")
    assert not shipped["stats"].get("compiled_modules") and not shipped["stats"].get("runtime_compiled")
    assert shipped["out"] == reference["out"]
    assert not any((tmp_path / "empty").glob("*/*")), "nothing had to be compiled and stored"


def test_a_bundle_for_another_module_is_refused(bundle_path):
    with pytest.raises(jitvm.Error, match="compiled for another module"):
        jitvm.load(HELLO, compiled=str(bundle_path))


def test_a_bundle_for_another_host_is_refused(bundle_path, tmp_path):
    other = tmp_path / "other.jvc"
    with zipfile.ZipFile(bundle_path) as src, zipfile.ZipFile(other, "w", zipfile.ZIP_STORED) as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "manifest.json":
                manifest = json.loads(data)
                manifest["target"]["cpu"] = "some-other-cpu"
                data = json.dumps(manifest).encode()
            dst.writestr(item, data)
    with pytest.raises(jitvm.Error, match="compiled for another host"):
        jitvm.load(CNN, compiled=str(other))


@pytest.mark.parametrize("damage", ["truncated", "flipped byte"])
def test_a_damaged_bundle_is_refused(bundle_path, tmp_path, damage):
    data = bytearray(bundle_path.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        with zipfile.ZipFile(bundle_path) as z:
            member = next(i for i in z.infolist() if i.filename.endswith(".o"))
            start = member.header_offset + 30 + len(member.filename) + len(member.extra)
        data[start + member.file_size // 2] ^= 0xFF
    bad = tmp_path / "bad.jvc"
    bad.write_bytes(bytes(data))
    with pytest.raises(jitvm.FormatError, match="bundle|damaged"):
        jitvm.load(CNN, compiled=str(bad))


def test_a_damaged_cache_entry_is_rebuilt_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path))
    cache.store("ab01", [b"\x7fELF" + b"\0" * 64], {"what": "test"})
    code = tmp_path / "ab" / "ab01" / "code.0.o"
    code.write_bytes(code.read_bytes()[:-1] + b"\1")  # same size, one byte changed
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert cache.load("ab01") is None
    assert any("damaged or stale" in str(w.message) for w in seen)
    assert not (tmp_path / "ab" / "ab01").exists()
