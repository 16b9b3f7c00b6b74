"""Neural-network layers as linalg on tensors (NHWC activations, HWCF filters, f32).

Each helper appends ops to a `Function` and returns the result `Value`. Padding is an
explicit `tensor.pad` (linalg convolutions have none), as frontends emit it.
"""

from __future__ import annotations

import numpy as np

from bench.models.mlir import Function, Value, tensor_type

NEG_INF = float("-inf")


def filled(f: Function, shape, value: float = 0.0) -> Value:
    """An init tensor filled with `value` (the `outs` of a reduction)."""
    empty = f.op(f"tensor.empty() : {tensor_type(shape)}", shape)
    cst = f.scalar_const(value)
    return f.op(f"linalg.fill ins({cst} : f32) outs({empty.name} : {empty.type}) -> {empty.type}", shape)


def empty(f: Function, shape) -> Value:
    return f.op(f"tensor.empty() : {tensor_type(shape)}", shape)


def pad_hw(f: Function, x: Value, lo: int, hi: int, value: float = 0.0) -> Value:
    if lo == 0 and hi == 0:
        return x
    n, h, w, c = x.shape
    shape = (n, h + lo + hi, w + lo + hi, c)
    cst = f.scalar_const(value)
    return f.op(f"tensor.pad {x.name} low[0, {lo}, {lo}, 0] high[0, {hi}, {hi}, 0] {{\n"
                f"    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):\n"
                f"      tensor.yield {cst} : f32\n"
                f"    }} : {x.type} to {tensor_type(shape)}", shape)


def _same_padding(size: int, k: int, stride: int) -> tuple[int, int]:
    """TensorFlow-style SAME: output ceil(size/stride), extra padding at the end."""
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return total // 2, total - total // 2


def conv2d(f: Function, x: Value, w: np.ndarray, stride: int = 1) -> Value:
    """linalg.conv_2d_nhwc_hwcf with SAME padding; `w` is HWCF."""
    kh, kw, _, cout = w.shape
    lo, hi = _same_padding(x.shape[1], kh, stride)
    xp = pad_hw(f, x, lo, hi)
    n, h, wd, _ = xp.shape
    out = (n, (h - kh) // stride + 1, (wd - kw) // stride + 1, cout)
    wv = f.const(w)
    init = filled(f, out)
    return f.op(f"linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, "
                f"strides = dense<{stride}> : tensor<2xi64>}} ins({xp.name}, {wv.name} : {xp.type}, {wv.type}) "
                f"outs({init.name} : {init.type}) -> {init.type}", out)


def depthwise_conv2d(f: Function, x: Value, w: np.ndarray, stride: int = 1) -> Value:
    """linalg.depthwise_conv_2d_nhwc_hwc with SAME padding; `w` is HWC."""
    kh, kw, c = w.shape
    lo, hi = _same_padding(x.shape[1], kh, stride)
    xp = pad_hw(f, x, lo, hi)
    n, h, wd, _ = xp.shape
    out = (n, (h - kh) // stride + 1, (wd - kw) // stride + 1, c)
    wv = f.const(w)
    init = filled(f, out)
    return f.op(f"linalg.depthwise_conv_2d_nhwc_hwc {{dilations = dense<1> : tensor<2xi64>, "
                f"strides = dense<{stride}> : tensor<2xi64>}} ins({xp.name}, {wv.name} : {xp.type}, {wv.type}) "
                f"outs({init.name} : {init.type}) -> {init.type}", out)


def _map(rank: int, dims) -> str:
    ds = ", ".join(f"d{i}" for i in range(rank))
    return f"affine_map<({ds}) -> ({', '.join(f'd{i}' for i in dims)})>"


def _elementwise(f: Function, inputs: list[Value], maps: list[str], body: list[str], shape) -> Value:
    """A parallel linalg.generic over `shape`; `body` uses %a0.. for inputs and yields."""
    out = empty(f, shape)
    rank = len(shape)
    args = ", ".join(f"%a{i}: f32" for i in range(len(inputs))) + ", %out: f32"
    return f.op(
        "linalg.generic {indexing_maps = [" + ", ".join(maps + [_map(rank, range(rank))]) + "], "
        "iterator_types = [" + ", ".join(['"parallel"'] * rank) + "]} "
        f"ins({', '.join(v.name for v in inputs)} : {', '.join(v.type for v in inputs)}) "
        f"outs({out.name} : {out.type}) {{\n"
        f"    ^bb0({args}):\n" + "".join(f"      {line}\n" for line in body) + f"    }} -> {out.type}", shape)


def bias(f: Function, x: Value, b: np.ndarray, relu: bool = False) -> Value:
    """x + b (broadcast over the last dimension), then ReLU if asked: one fused generic."""
    bv = f.const(b)
    rank = len(x.shape)
    zero = f.scalar_const(0.0) if relu else None
    if relu:
        body = ["%s = arith.addf %a0, %a1 : f32", f"%r = arith.maximumf %s, {zero} : f32"]
    else:
        body = ["%r = arith.addf %a0, %a1 : f32"]
    body.append("linalg.yield %r : f32")
    return _elementwise(f, [x, bv], [_map(rank, range(rank)), _map(rank, [rank - 1])], body, x.shape)


def relu(f: Function, x: Value) -> Value:
    rank = len(x.shape)
    zero = f.scalar_const(0.0)
    return _elementwise(f, [x], [_map(rank, range(rank))],
                        [f"%r = arith.maximumf %a0, {zero} : f32", "linalg.yield %r : f32"], x.shape)


def add_relu(f: Function, x: Value, y: Value) -> Value:
    """relu(x + y): the residual join of a ResNet block."""
    rank = len(x.shape)
    zero = f.scalar_const(0.0)
    ident = _map(rank, range(rank))
    return _elementwise(f, [x, y], [ident, ident],
                        ["%s = arith.addf %a0, %a1 : f32", f"%r = arith.maximumf %s, {zero} : f32",
                         "linalg.yield %r : f32"], x.shape)


def max_pool(f: Function, x: Value, k: int, stride: int) -> Value:
    """k x k max pool, SAME padding with -inf (so padding never wins)."""
    lo, hi = _same_padding(x.shape[1], k, stride)
    xp = pad_hw(f, x, lo, hi, NEG_INF)
    n, h, w, c = xp.shape
    out = (n, (h - k) // stride + 1, (w - k) // stride + 1, c)
    window = empty(f, (k, k))
    init = filled(f, out, NEG_INF)
    return f.op(f"linalg.pooling_nhwc_max {{dilations = dense<1> : tensor<2xi64>, "
                f"strides = dense<{stride}> : tensor<2xi64>}} ins({xp.name}, {window.name} : {xp.type}, {window.type}) "
                f"outs({init.name} : {init.type}) -> {init.type}", out)


def global_avg_pool(f: Function, x: Value) -> Value:
    """NHWC -> NxC mean over H and W: a sum reduction, then one scale."""
    n, h, w, c = x.shape
    init = filled(f, (n, c))
    total = f.op(
        "linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, "
        "affine_map<(d0, d1, d2, d3) -> (d0, d3)>], "
        'iterator_types = ["parallel", "reduction", "reduction", "parallel"]} '
        f"ins({x.name} : {x.type}) outs({init.name} : {init.type}) {{\n"
        "    ^bb0(%a0: f32, %acc: f32):\n"
        "      %s = arith.addf %a0, %acc : f32\n"
        "      linalg.yield %s : f32\n"
        f"    }} -> {init.type}", (n, c))
    scale = f.scalar_const(1.0 / (h * w))
    return _elementwise(f, [total], [_map(2, range(2))],
                        [f"%r = arith.mulf %a0, {scale} : f32", "linalg.yield %r : f32"], (n, c))


def matmul(f: Function, a: Value, b: Value) -> Value:
    m, k = a.shape
    _, n = b.shape
    init = filled(f, (m, n))
    return f.op(f"linalg.matmul ins({a.name}, {b.name} : {a.type}, {b.type}) "
                f"outs({init.name} : {init.type}) -> {init.type}", (m, n))


def dense_layer(f: Function, x: Value, w: np.ndarray, b: np.ndarray, relu: bool = False) -> Value:
    """x @ w + b (w is in x out), ReLU if asked."""
    return bias(f, matmul(f, x, f.const(w)), b, relu)


def softmax(f: Function, x: Value) -> Value:
    """linalg.softmax over the last dimension."""
    out = empty(f, x.shape)
    return f.op(f"linalg.softmax dimension({len(x.shape) - 1}) ins({x.name} : {x.type}) "
                f"outs({out.name} : {out.type}) -> {out.type}", x.shape)
