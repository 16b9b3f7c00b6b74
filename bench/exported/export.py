"""PyTorch module -> ONNX -> torch-dialect MLIR, as users export models for IREE.

`torch.onnx.export` (the TorchScript exporter, dynamo=False, opset 17), then
`iree-import-onnx`; the MLIR text is what bench.build caches and compiles with
`--iree-input-type=onnx`. Weights come from a seeded generator, so a build is repeatable.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

OPSET = 17
COMPILE_FLAGS = ("--iree-input-type=onnx",)


def iree_import_onnx() -> str:
    """iree-import-onnx next to this Python (the venv's), else the one on PATH."""
    local = Path(sys.executable).with_name("iree-import-onnx")
    return str(local) if local.exists() else (shutil.which("iree-import-onnx") or "iree-import-onnx")


def seeded(make, seed: int = 0):
    """`make()`'s module in eval mode with every parameter and batch-norm statistic drawn
    from a seeded generator (BN statistics too: the exporter folds them into convolutions)."""
    import torch

    torch.manual_seed(seed)
    module = make().eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            p.copy_(torch.randn(p.shape, generator=generator) / max(1.0, fan_in) ** 0.5)
        for name, b in module.named_buffers():
            if name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=generator) + 0.5)
            elif name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=generator) * 0.1)
    return module


def to_onnx(module, example_inputs: tuple, path: Path, fold_constants: bool = True) -> Path:
    """`fold_constants=False` keeps computations on constants in the graph (quantized
    weights stay int8/int4 with their dequantisation, instead of folded to float)."""
    import torch

    names = [f"input{i}" for i in range(len(example_inputs))]
    with torch.no_grad():
        torch.onnx.export(module, example_inputs, str(path), dynamo=False, opset_version=OPSET, input_names=names,
                          do_constant_folding=fold_constants)
    return path


def onnx_to_mlir(onnx_path: Path, mlir_path: Path) -> Path:
    done = subprocess.run([iree_import_onnx(), str(onnx_path), "-o", str(mlir_path)], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"iree-import-onnx failed on {onnx_path.name}:\n{done.stderr[-4000:]}")
    return mlir_path


def export_mlir(module, example_inputs: tuple, fold_constants: bool = True) -> str:
    """The module's MLIR text through ONNX (intermediate files in a temporary directory)."""
    with tempfile.TemporaryDirectory(prefix="jitvm-export-") as tmp:
        onnx_path = to_onnx(module, example_inputs, Path(tmp) / "model.onnx", fold_constants)
        return onnx_to_mlir(onnx_path, Path(tmp) / "model.mlir").read_text()
