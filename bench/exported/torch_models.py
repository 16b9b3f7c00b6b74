"""The exported workloads as plain PyTorch modules (no torchvision, no transformers).

Shapes follow the models users export: a MiniLM-L6-style encoder (post-norm BERT layers,
GELU), EfficientNet-Lite0 (NCHW, ReLU6, no squeeze-excite, TF "SAME" padding as explicit
pads before strided convolutions), ResNet-50 v1 as the ONNX model zoo's resnet50-v1 defines
it (stride on the bottleneck's first 1x1 convolution), a GPT-2 decoder step over a KV
cache, and weight-only quantized linear layers whose int8 / packed int4 weights and
per-group scales are constants dequantised inside the graph. Weights are random, drawn
from a seeded generator, so every build of a model is the same model.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


# --- transformer encoder (MiniLM-L6 shape) --------------------------------------------------

class EncoderLayer(nn.Module):
    """One BERT layer: self-attention, add & layer norm, GELU feed-forward, add & layer norm."""

    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(3))
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.up = nn.Linear(hidden, ffn)
        self.down = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = (p(x).view(b, s, self.heads, h // self.heads).transpose(1, 2) for p in self.qkv)
        scores = q @ k.transpose(-1, -2) / math.sqrt(h // self.heads)
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, h)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.down(F.gelu(self.up(x))))


class Encoder(nn.Module):
    """Hidden states in (batch, seq, hidden), hidden states out: the encoder stack after
    the embedding lookup (inputs stay float, so the benchmark's random inputs are valid)."""

    def __init__(self, layers=6, hidden=384, heads=12, ffn=1536):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(hidden, heads, ffn) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# --- EfficientNet-Lite0 ---------------------------------------------------------------------

def _same_pad(kernel: int, stride: int) -> tuple[int, int, int, int]:
    """TensorFlow's SAME padding of an even input for a strided convolution (F.pad order)."""
    total = max(kernel - stride, 0)
    return (total // 2, total - total // 2, total // 2, total - total // 2)


class ConvBnAct(nn.Sequential):
    def __init__(self, cin, cout, kernel, stride=1, groups=1, act=True):
        pad = [nn.ZeroPad2d(_same_pad(kernel, stride))] if stride > 1 else []
        layers = pad + [nn.Conv2d(cin, cout, kernel, stride, 0 if stride > 1 else kernel // 2, groups=groups, bias=False),
                        nn.BatchNorm2d(cout)]
        super().__init__(*layers, *([nn.ReLU6()] if act else []))


class MBConv(nn.Module):
    def __init__(self, cin, cout, expand, kernel, stride):
        super().__init__()
        mid = cin * expand
        self.residual = stride == 1 and cin == cout
        self.block = nn.Sequential(*([ConvBnAct(cin, mid, 1)] if expand != 1 else []),
                                   ConvBnAct(mid, mid, kernel, stride, groups=mid),
                                   ConvBnAct(mid, cout, 1, act=False))

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


LITE0_STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]  # expand, kernel, stride, out, repeats


class EfficientNetLite(nn.Module):
    def __init__(self, stages=LITE0_STAGES, stem=32, head=1280, classes=1000, width_divisor=1):
        super().__init__()
        w = lambda c: max(8, c // width_divisor)
        layers = [ConvBnAct(3, w(stem), 3, 2)]
        cin = w(stem)
        for expand, kernel, stride, cout, repeats in stages:
            for i in range(repeats):
                layers.append(MBConv(cin, w(cout), expand, kernel, stride if i == 0 else 1))
                cin = w(cout)
        layers.append(ConvBnAct(cin, w(head), 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(w(head), classes)

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


# --- ResNet-50 v1 (ONNX model zoo) ----------------------------------------------------------

class Bottleneck(nn.Module):
    def __init__(self, cin, mid, stride):
        super().__init__()
        cout = mid * 4
        self.body = nn.Sequential(nn.Conv2d(cin, mid, 1, stride, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                                  nn.Conv2d(mid, mid, 3, 1, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                                  nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        return F.relu(self.body(x) + self.down(x))


class ResNet50(nn.Module):
    def __init__(self, blocks=(3, 4, 6, 3), width=64, classes=1000):
        super().__init__()
        layers = [nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        cin = width
        for stage, count in enumerate(blocks):
            mid = width * 2 ** stage
            for i in range(count):
                layers.append(Bottleneck(cin, mid, 2 if i == 0 and stage > 0 else 1))
                cin = mid * 4
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


# --- GPT-2 decoder step ---------------------------------------------------------------------

class DecoderLayer(nn.Module):
    """Pre-norm GPT-2 block for one new token attending to a KV cache plus itself."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x, past_k, past_v):
        b, s, w = x.shape
        q, k, v = (t.view(b, s, self.heads, w // self.heads).transpose(1, 2) for t in self.attn(self.norm1(x)).split(w, -1))
        k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
        weights = (q @ k.transpose(-1, -2) / math.sqrt(w // self.heads)).softmax(-1)
        x = x + self.proj((weights @ v).transpose(1, 2).reshape(b, s, w))
        return x + self.down(F.gelu(self.up(self.norm2(x)), approximate="tanh")), k, v


class DecoderStep(nn.Module):
    """(token embedding, K and V cache per layer) -> (hidden state, grown caches)."""

    def __init__(self, layers=2, width=768, heads=12):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)

    def forward(self, x, *caches):
        grown = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, caches[2 * i], caches[2 * i + 1])
            grown += [k, v]
        return (self.norm(x), *grown)


# --- weight-quantized matmuls ---------------------------------------------------------------

class QuantLinear(nn.Module):
    """y = x @ dequant(W).T: W as int8 or as int4 packed two to a byte (low nibble first,
    offset 8), one float scale per `group` consecutive input channels of each output."""

    def __init__(self, k: int, n: int, bits: int, group: int, generator: torch.Generator):
        super().__init__()
        self.bits, self.group = bits, group
        levels = 2 ** (bits - 1)
        q = torch.randint(-levels, levels, (n, k), generator=generator, dtype=torch.int32)
        if bits == 8:
            self.register_buffer("weight", q.to(torch.int8))
        else:
            u = (q + 8).to(torch.uint8)
            self.register_buffer("weight", u[:, 0::2] | (u[:, 1::2] << 4))
        self.register_buffer("scales", torch.rand(n, k // group, generator=generator) * 0.02 + 0.001)

    def dequantized(self):
        if self.bits == 8:
            q = self.weight.to(torch.float32)
        else:
            high = self.weight >> 4  # shifts and a subtraction: ONNX opset 17 has BitShift, no BitwiseAnd
            low = self.weight - (high << 4)
            q = torch.stack([low, high], -1).reshape(self.weight.shape[0], -1).to(torch.float32) - 8.0
        n, k = q.shape
        return (q.view(n, k // self.group, self.group) * self.scales.unsqueeze(-1)).view(n, k)

    def forward(self, x):
        return x @ self.dequantized().t()


class QuantMatmul(nn.Module):
    """One weight-quantized linear layer (the matmul of a weight-only quantized LLM)."""

    def __init__(self, k=2048, n=2048, bits=8, group=128):
        super().__init__()
        self.linear = QuantLinear(k, n, bits, group, torch.Generator().manual_seed(0))

    def forward(self, x):
        return self.linear(x)
