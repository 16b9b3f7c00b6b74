"""bench/exported: PyTorch -> ONNX -> iree-import-onnx -> VMVX works, and jitvm runs what
it produces bit for bit as iree.runtime does.

Toy sizes of the benchmark's own generators (bench.exported.tiny): an encoder layer (matmuls,
softmax, GELU's erf, layer norm), a packed int4 weight-quantized matmul (shifts, per-group
scales) and an EfficientNet-Lite-style CNN (NCHW, TF SAME pads, depthwise, ReLU6). Skipped
when torch (the bench extra) or onnx is missing.
"""

from __future__ import annotations


import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

import jitvm  # noqa: E402
from bench.build import compile_into  # noqa: E402
from bench.exported import tiny  # noqa: E402

TINY = tiny()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Each tiny exported model compiled for VMVX, as path by name."""
    return compile_into(TINY, tmp_path_factory.mktemp("exported"))


def test_the_export_is_repeatable():
    """Seeded weights: two exports of one spec are the same MLIR (the build cache relies on it)."""
    spec = TINY["tiny_qmatmul_int4"]
    assert spec.build() == spec.build()


@pytest.mark.parametrize("name", list(TINY))
def test_jitvm_matches_iree_runtime_bit_for_bit(compiled, name):
    import iree.runtime as ireert

    spec = TINY[name]
    inputs = spec.make_inputs(seed=3)
    reference = ireert.load_vm_flatbuffer_file(str(compiled[name]), driver="local-sync")
    expected = np.asarray(getattr(reference, spec.function)(*inputs))
    assert np.isfinite(expected).all() and np.abs(expected).max() > 0
    for threads in (1, 2):
        got = np.asarray(jitvm.load(str(compiled[name]), threads=threads).function(spec.function)(*inputs))
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes(), f"{name} on {threads} thread(s) differs from iree.runtime"
