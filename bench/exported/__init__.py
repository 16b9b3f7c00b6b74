"""Workloads as users bring them: PyTorch modules exported through ONNX (bench.exported.export).

`exported_suite()` names the full-size models; `tiny()` the same generators at toy sizes
(tests). Building a spec imports torch (the bench extra); listing specs does not.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from bench.models.spec import ModelSpec

_HERE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def _source_digest() -> str:
    """The exporter and model sources: a change to either rebuilds the cached MLIR."""
    h = hashlib.sha256()
    for path in sorted(_HERE.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def _exported(name: str, model: str, kwargs: dict, inputs: list[tuple[int, ...]], flops: int,
              fold_constants: bool = True) -> ModelSpec:
    def build() -> str:
        import torch

        from bench.exported import torch_models
        from bench.exported.export import export_mlir, seeded

        module = seeded(lambda: getattr(torch_models, model)(**kwargs))
        return export_mlir(module, tuple(torch.zeros(s) for s in inputs), fold_constants)

    from bench.exported.export import COMPILE_FLAGS

    return ModelSpec(name, "main_graph", tuple((s, "float32") for s in inputs), build,
                     params={"model": model, "kwargs": kwargs, "inputs": inputs, "source": _source_digest(),
                             "fold_constants": fold_constants},
                     flops=flops, compile_flags=COMPILE_FLAGS)


def encoder(name="minilm_l6", layers=6, hidden=384, heads=12, ffn=1536, seq=128) -> ModelSpec:
    flops = layers * (2 * seq * hidden * (4 * hidden + 2 * ffn) + 4 * seq * seq * hidden)
    return _exported(name, "Encoder", dict(layers=layers, hidden=hidden, heads=heads, ffn=ffn),
                     [(1, seq, hidden)], flops)


def efficientnet_lite0(name="efficientnet_lite0", resolution=224, width_divisor=1, classes=1000) -> ModelSpec:
    return _exported(name, "EfficientNetLite", dict(width_divisor=width_divisor, classes=classes),
                     [(1, 3, resolution, resolution)], int(0.8e9 * (resolution / 224) ** 2 / width_divisor ** 2))


def resnet50_zoo(name="resnet50_zoo", resolution=224, width=64, classes=1000) -> ModelSpec:
    return _exported(name, "ResNet50", dict(width=width, classes=classes),
                     [(1, 3, resolution, resolution)], int(7.7e9 * (resolution / 224) ** 2 * (width / 64) ** 2))


def gpt2_step(name="gpt2_step", layers=2, width=768, heads=12, cache=128) -> ModelSpec:
    head = width // heads
    caches = [(1, heads, cache, head)] * (2 * layers)
    flops = layers * (2 * width * 12 * width + 4 * (cache + 1) * width)
    return _exported(name, "DecoderStep", dict(layers=layers, width=width, heads=heads), [(1, 1, width), *caches], flops)


def qmatmul(bits: int, m=16, k=2048, n=2048, group=128, name=None) -> ModelSpec:
    return _exported(name or f"qmatmul_int{bits}", "QuantMatmul", dict(k=k, n=n, bits=bits, group=group),
                     [(m, k)], 2 * m * k * n, fold_constants=False)  # the weights stay quantized


def exported_suite() -> dict[str, ModelSpec]:
    """The full-size exported models, by name, in table order."""
    specs = [encoder(), efficientnet_lite0(), resnet50_zoo(), gpt2_step(), qmatmul(8), qmatmul(4)]
    return {s.name: s for s in specs}


def tiny() -> dict[str, ModelSpec]:
    """Toy sizes of the same generators, seconds to export and compile (tests)."""
    specs = [encoder("tiny_encoder", layers=1, hidden=32, heads=2, ffn=64, seq=8),
             qmatmul(4, m=2, k=64, n=16, group=32, name="tiny_qmatmul_int4"),
             efficientnet_lite0("tiny_efficientnet", resolution=32, width_divisor=8, classes=10)]
    return {s.name: s for s in specs}
