"""A ResNet-50-style network (v1.5 topology, inference form) with seeded random weights.

7x7/2 stem conv 64 + ReLU, 3x3/2 max pool, bottleneck stages [3, 4, 6, 3] with widths
64-256, 128-512, 256-1024, 512-2048 (1x1 reduce, 3x3 carrying the stage's stride, 1x1
expand; projection shortcut on each stage's first block), global average pool, a
1000-way fully connected layer and softmax. Batch normalisation is folded into conv
biases, as deployed models have it. Weights are He-scaled (gain 2 before a ReLU, a
damped gain on the convs feeding each residual sum) so activations stay O(1) through 16
blocks and the softmax is not one-hot: results are then worth comparing.
`width_divisor` shrinks every channel count (tests compile a tiny variant).
"""

from __future__ import annotations

import numpy as np

from bench.models import ops
from bench.models.kernels import he, small_bias
from bench.models.mlir import Function, Value, module
from bench.models.spec import ModelSpec

STAGES = ((3, 64, 256), (4, 128, 512), (6, 256, 1024), (3, 512, 2048))
RESIDUAL_GAIN = 0.5  # measured: 1.0 gives logits of std ~30 (one-hot softmax), 0.5 std ~2, 0.2 std ~0.2


class _Net:
    """Emits layers into one function, drawing weights from one seeded generator."""

    def __init__(self, f: Function, rng: np.random.Generator):
        self.f = f
        self.rng = rng

    def conv(self, x: Value, cout: int, k: int, stride: int = 1, relu: bool = True) -> Value:
        cin = x.shape[-1]
        w = he(self.rng, (k, k, cin, cout), k * k * cin, 2.0 if relu else RESIDUAL_GAIN)
        y = ops.conv2d(self.f, x, w, stride)
        return ops.bias(self.f, y, small_bias(self.rng, cout), relu=relu)

    def bottleneck(self, x: Value, mid: int, out: int, stride: int) -> Value:
        shortcut = x
        if stride != 1 or x.shape[-1] != out:
            shortcut = self.conv(x, out, 1, stride, relu=False)
        y = self.conv(x, mid, 1)
        y = self.conv(y, mid, 3, stride)
        y = self.conv(y, out, 1, relu=False)
        return ops.add_relu(self.f, y, shortcut)


def resnet50(resolution: int = 64, width_divisor: int = 1, classes: int = 1000, seed: int = 50) -> ModelSpec:
    def scaled(c: int) -> int:
        return max(1, c // width_divisor)

    def build() -> str:
        f = Function("predict")
        net = _Net(f, np.random.default_rng(seed))
        x = net.conv(f.arg((1, resolution, resolution, 3)), scaled(64), 7, 2)
        x = ops.max_pool(f, x, 3, 2)
        for i, (blocks, mid, out) in enumerate(STAGES):
            for b in range(blocks):
                x = net.bottleneck(x, scaled(mid), scaled(out), 2 if (b == 0 and i > 0) else 1)
        x = ops.global_avg_pool(f, x)
        fan_in = x.shape[-1]
        x = ops.dense_layer(f, x, he(net.rng, (fan_in, classes), fan_in, 1.0), small_bias(net.rng, classes))
        f.ret(ops.softmax(f, x))
        return module(f)

    name = f"resnet50_{resolution}" + (f"_w{width_divisor}" if width_divisor != 1 else "")
    return ModelSpec(name, "predict", (((1, resolution, resolution, 3), "float32"),), build,
                     {"resolution": resolution, "width_divisor": width_divisor, "classes": classes, "seed": seed},
                     exact=False, flops=_flops(resolution, width_divisor, classes))


def _flops(resolution: int, width_divisor: int, classes: int) -> int:
    """Convolution and FC FLOPs (2 per multiply-add), computed from shapes alone."""
    def c(n):
        return max(1, n // width_divisor)

    def out(size, stride):
        return -(-size // stride)

    s = out(resolution, 2)
    total = 2 * s * s * 49 * 3 * c(64)
    s = out(s, 2)
    cin = c(64)
    for i, (blocks, mid, o) in enumerate(STAGES):
        for b in range(blocks):
            stride = 2 if (b == 0 and i > 0) else 1
            so = out(s, stride)
            if stride != 1 or cin != c(o):
                total += 2 * so * so * cin * c(o)
            total += 2 * s * s * cin * c(mid) + 2 * so * so * 9 * c(mid) * c(mid) + 2 * so * so * c(mid) * c(o)
            s, cin = so, c(o)
    return total + 2 * cin * classes
