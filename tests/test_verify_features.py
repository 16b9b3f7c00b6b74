"""Feature bits: what this runtime provides, and the refusal when a module needs more."""

from __future__ import annotations

import platform
from functools import lru_cache

import pytest

import jitvm
from jitvm.frontend.module import load_module
from jitvm.verify import FeatureError, available_features, verify_module
from jitvm.verify.features import DISABLE_ENV, EXT_F32, EXT_F64, UNWIND, YIELD, FeatureConfigError, format_features, hardware_features
from tests.corpus import build_corpus
from tests.verify_support import find, patch, patch_descriptor, root_field_offset, u32

HAVE_WITHOUT_F64 = "have [EXT_F32|YIELD|UNWIND]"


@lru_cache(maxsize=None)
def vmfb(name):
    return build_corpus(names=[name])[0].vmfb


def test_hardware_floats_on_mainstream_hosts():
    if platform.machine().lower() in ("x86_64", "amd64", "aarch64", "arm64"):
        assert hardware_features() == EXT_F32 | EXT_F64


def test_available_features_default(monkeypatch):
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    assert available_features() == hardware_features() | YIELD | UNWIND


def test_environment_removes_features(monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "ext_f64, YIELD")
    assert available_features() == (hardware_features() | UNWIND) & ~EXT_F64


def test_environment_rejects_unknown_feature_names(monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "EXT_F16")
    with pytest.raises(FeatureConfigError, match="unknown feature 'EXT_F16'"):
        available_features()


def test_format_matches_iree_spelling():
    assert format_features(EXT_F32 | YIELD | UNWIND) == "EXT_F32|YIELD|UNWIND"
    assert format_features(0) == ""


def test_module_requirements_refused_with_missing_and_available(monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "EXT_F64")
    with pytest.raises(FeatureError) as e:
        verify_module(load_module(vmfb("vmasm/float_f64")))
    assert str(e.value) == ("module 'float_f64': required module features [EXT_F64] are not available "
                            f"in this runtime configuration; {HAVE_WITHOUT_F64}")
    assert isinstance(e.value, jitvm.VerifyError) and isinstance(e.value, jitvm.UnsupportedError)


def test_explicit_features_argument_overrides_the_host():
    with pytest.raises(FeatureError, match=r"required module features \[EXT_F32\] .*; have \[YIELD\]$"):
        verify_module(load_module(vmfb("vmasm/float_f32")), features=YIELD)


def test_function_requirements_refused_when_module_claims_none(monkeypatch):
    """The module-level bits are cleared; the per-function bits must still be honoured."""
    path = vmfb("vmasm/float_f64")
    m = load_module(path)
    data = patch(path.read_bytes(), root_field_offset(m, "requirements"), u32(0))
    monkeypatch.setenv(DISABLE_ENV, "EXT_F64")
    with pytest.raises(FeatureError) as e:
        verify_module(load_module(data))
    name = m.display_name(0)
    assert str(e.value) == (f"module 'float_f64' function '{name}' (#0): required module features "
                            f"[EXT_F64] are not available in this runtime configuration; {HAVE_WITHOUT_F64}")


def test_opcode_needs_its_extension_in_the_function_requirements():
    loc = find(vmfb("vmasm/float_f32"), lambda m, i: i.op.opset == "ext_f32")
    data = patch_descriptor(loc.path.read_bytes(), loc.module, loc.ordinal, "requirements", 0)
    with pytest.raises(jitvm.VerifyError) as e:
        verify_module(load_module(data))
    assert str(e.value).endswith(f"{loc.ins.op.mnemonic} needs feature EXT_F32 but the function declares only []")
    assert f"at pc {loc.ins.pc} in ^bb0: `%i" in str(e.value)
