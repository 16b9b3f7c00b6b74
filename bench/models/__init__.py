"""The benchmark suite: MLIR generators for kernels and a ResNet-50-style network."""

from __future__ import annotations

from bench.models.kernels import conv, depthwise, matmul, mlp, softmax
from bench.models.resnet import resnet50
from bench.models.spec import ModelSpec


def suite(resolution: int = 64) -> dict[str, ModelSpec]:
    """Every model of the full run, by name, in table order."""
    specs = [matmul(128), matmul(256), matmul(512),
             conv(56, 64, 64, 3, bias_relu=False), conv(56, 64, 64, 3, bias_relu=True),
             conv(28, 128, 512, 1, bias_relu=True), depthwise(56, 64),
             softmax(1, 1000), softmax(32, 512), mlp(), resnet50(resolution)]
    return {s.name: s for s in specs}


__all__ = ["ModelSpec", "conv", "depthwise", "matmul", "mlp", "resnet50", "softmax", "suite"]
