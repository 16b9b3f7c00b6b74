"""Single-kernel models: matmul, convolutions at ResNet shapes, softmax, a small MLP.

Each returns a ModelSpec; weights are seeded (He-style scale for layers followed by ReLU)
and activations are function arguments, so a kernel's time is the kernel's alone.
"""

from __future__ import annotations

import numpy as np

from bench.models import ops
from bench.models.mlir import Function, module
from bench.models.spec import ModelSpec


def he(rng: np.random.Generator, shape, fan_in: int, gain: float = 2.0) -> np.ndarray:
    """Normal weights with variance gain/fan_in: keeps activations O(1) through ReLU layers."""
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(np.sqrt(gain / fan_in))).astype(np.float32)


def small_bias(rng: np.random.Generator, n: int) -> np.ndarray:
    return (0.01 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)


def matmul(n: int) -> ModelSpec:
    def build() -> str:
        f = Function("matmul")
        a, b = f.arg((n, n)), f.arg((n, n))
        f.ret(ops.matmul(f, a, b))
        return module(f)

    return ModelSpec(f"matmul{n}", "matmul", (((n, n), "float32"),) * 2, build, {"n": n}, flops=2 * n ** 3)


def conv(size: int, cin: int, cout: int, k: int, bias_relu: bool, seed: int = 1) -> ModelSpec:
    """A k x k NHWC convolution, SAME padding, stride 1 (+ bias and ReLU when asked)."""
    name = f"conv{k}x{k}_{size}x{size}x{cin}_{cout}" + ("_bias_relu" if bias_relu else "")

    def build() -> str:
        rng = np.random.default_rng(seed)
        f = Function("conv")
        x = f.arg((1, size, size, cin))
        y = ops.conv2d(f, x, he(rng, (k, k, cin, cout), k * k * cin))
        if bias_relu:
            y = ops.bias(f, y, small_bias(rng, cout), relu=True)
        f.ret(y)
        return module(f)

    return ModelSpec(name, "conv", (((1, size, size, cin), "float32"),), build,
                     {"size": size, "cin": cin, "cout": cout, "k": k, "bias_relu": bias_relu, "seed": seed},
                     flops=2 * size * size * k * k * cin * cout)


def depthwise(size: int, channels: int, k: int = 3, seed: int = 2) -> ModelSpec:
    """A k x k depthwise NHWC convolution, SAME padding, + bias and ReLU."""

    def build() -> str:
        rng = np.random.default_rng(seed)
        f = Function("dwconv")
        x = f.arg((1, size, size, channels))
        y = ops.depthwise_conv2d(f, x, he(rng, (k, k, channels), k * k))
        f.ret(ops.bias(f, y, small_bias(rng, channels), relu=True))
        return module(f)

    return ModelSpec(f"dwconv{k}x{k}_{size}x{size}x{channels}_bias_relu", "dwconv",
                     (((1, size, size, channels), "float32"),), build,
                     {"size": size, "channels": channels, "k": k, "seed": seed},
                     flops=2 * size * size * k * k * channels)


def softmax(rows: int, cols: int) -> ModelSpec:
    def build() -> str:
        f = Function("softmax")
        f.ret(ops.softmax(f, f.arg((rows, cols))))
        return module(f)

    return ModelSpec(f"softmax{rows}x{cols}", "softmax", (((rows, cols), "float32"),), build,
                     {"rows": rows, "cols": cols}, exact=False, flops=5 * rows * cols)


def mlp(batch: int = 16, sizes: tuple[int, ...] = (784, 1024, 1024, 10), seed: int = 3) -> ModelSpec:
    """Dense layers with ReLU between them (none after the last)."""

    def build() -> str:
        rng = np.random.default_rng(seed)
        f = Function("mlp")
        x = f.arg((batch, sizes[0]))
        for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
            last = i == len(sizes) - 2
            x = ops.dense_layer(f, x, he(rng, (a, b), a, 1.0 if last else 2.0), small_bias(rng, b), relu=not last)
        f.ret(x)
        return module(f)

    name = f"mlp{batch}x" + "-".join(map(str, sizes))
    return ModelSpec(name, "mlp", (((batch, sizes[0]), "float32"),), build,
                     {"batch": batch, "sizes": list(sizes), "seed": seed},
                     flops=sum(2 * batch * a * b for a, b in zip(sizes, sizes[1:])))
