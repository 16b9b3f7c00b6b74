"""jitvm on an emulated arm64 host (bench/aarch64.sh: Debian arm64 root, qemu-user-static).

Outside the default run (marker `aarch64`; `python -m pytest -m aarch64 tests/test_aarch64.py`,
as root, with the project's venv active: it builds the root on first use). Emulated runs
are slow: the chosen tests take an hour or more, the fuzz campaign longer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "aarch64.sh"

pytestmark = [
    pytest.mark.aarch64,
    pytest.mark.skipif(os.geteuid() != 0, reason="bench/aarch64.sh needs root"),
    pytest.mark.skipif(shutil.which("apt-get") is None, reason="bench/aarch64.sh needs a Debian host"),
]


def _script(*args, env=None, timeout=None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), timeout=timeout)


@pytest.fixture(scope="module")
def root():
    r = _script("setup", timeout=1800)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "aarch64" in r.stdout


# qemu CPU models: plain armv8-a, a server core with dotprod and LSE, one with SVE, everything.
CPUS = {"cortex-a57": {"sve": 0, "lse": 0}, "neoverse-n1": {"dotprod": 1, "lse": 1, "sve": 0},
        "a64fx": {"sve": 1}, "max": {"sve": 1, "sve2": 1, "i8mm": 1}}


@pytest.mark.parametrize("cpu", sorted(CPUS))
def test_feature_detection_matches_iree(root, cpu):
    r = _script("cpu", "-c", cpu, timeout=600)
    assert r.returncode == 0, r.stderr
    probe = json.loads(r.stdout)
    assert probe["hal.cpu"] == probe["iree-cpuinfo"]
    for name, value in CPUS[cpu].items():
        assert probe["hal.cpu"][name] == value, (cpu, name)
    features = dict((f[1:], f[0] == "+") for f in probe["target"]["features"].split(","))
    assert features["sve"] == bool(CPUS[cpu]["sve"]) and features["neon"]
    assert probe["target"]["triple"].startswith("aarch64")


def test_disable_features_works_there(root):
    r = _script("cpu", "-c", "cortex-a57", env={"JITVM_DISABLE_FEATURES": "EXT_F64,YIELD"}, timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["vm_features"] == "EXT_F32|UNWIND"


def test_chosen_tests_pass(root):
    r = _script("test", "-c", "max", timeout=6 * 3600)
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-3000:]


def test_fuzz_campaign_matches(root):
    r = _script("fuzz", "-c", "max", "1000", "0", timeout=6 * 3600)
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-3000:]
    total = [line for line in r.stdout.splitlines() if line.startswith("total:")]
    assert total and "programs 1000" in total[-1], r.stdout[-3000:]
    assert "MISMATCH" not in r.stdout and "ERROR" not in r.stdout, r.stdout[-5000:]
