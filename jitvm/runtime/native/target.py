"""Target machines: the host (detected through llvmlite, arm64 features through hwcaps) and
named cross targets.

The host's CPU name and features decide code generation and are part of the compile-cache
key; EXT_F32/EXT_F64 availability follows from the host having hardware floating point.
LLVM is asked once per host: the answer is kept in the code store (runtime.native.hostinfo),
so a process that only maps stored code never imports llvmlite's bindings.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from . import hostinfo, hwcaps, offload


def binding():
    """llvmlite's bindings, imported on first use (loading libLLVM costs 35-55 ms)."""
    import llvmlite.binding as llvm

    return llvm


class _LazyBinding:
    """llvmlite's bindings for modules that only compile (`from ...target import llvm`): the
    import happens at the first attribute used, not when the module is imported."""

    def __getattr__(self, name: str):
        return getattr(binding(), name)


llvm = _LazyBinding()


def initialize_llvm() -> None:
    """Initializes LLVM's native target once per process (idempotent)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@dataclass(frozen=True)
class Target:
    """What native code is compiled for: triple, CPU name and features."""

    triple: str
    cpu: str
    features: str

    @property
    def arch(self) -> str:
        return self.triple.split("-")[0]

    def describe(self) -> str:
        return f"{self.triple} cpu={self.cpu}"


@lru_cache(maxsize=None)
def host() -> Target:
    """The machine this process runs on. On arm64 Linux its features are the kernel's hwcaps
    (runtime.native.hwcaps: what IREE reads), not LLVM's reading of /proc/cpuinfo."""
    d = hostinfo.description(_ask)
    return Target(d["triple"], d["cpu"], d["features"])


def llvm_version() -> str:
    """The version of the LLVM this process compiles with ("22.1.0"), as the cache keys spell it."""
    return hostinfo.description(_ask)["llvm"]


def host_features() -> dict[str, bool]:
    """The host's features as LLVM names them: name -> enabled (from `host().features`)."""
    return {f[1:]: f[0] == "+" for f in host().features.split(",") if f[:1] in "+-" and len(f) > 1}


def _ask() -> dict[str, str]:
    """LLVM's answer about this host: from the JIT's compile worker when there is one
    (runtime.native.offload: this process need not load libLLVM), else from here."""
    return offload.host_description() or ask_llvm()


def ask_llvm() -> dict[str, str]:
    """What `host` and `llvm_version` answer, from LLVM (runtime.native.hostinfo stores it)."""
    initialize_llvm()
    arm64 = hwcaps.host_features()
    features = llvm.get_host_cpu_features().flatten() if arm64 is None else hwcaps.llvm_feature_string(arm64)
    return {"triple": llvm.get_process_triple(), "cpu": llvm.get_host_cpu_name(), "features": features,
            "llvm": ".".join(map(str, llvm.llvm_version_info))}


def wide_vectors(target: Target) -> bool:
    """Whether code for `target` should prefer 512-bit vectors: x86 with AVX-512 (32 registers
    of 16 floats), where LLVM's tuning otherwise keeps to 256 bits."""
    return target.arch == "x86_64" and "+avx512f" in target.features.split(",")


# Named cross targets for `jitvm dump --asm --target=...` and the aarch64 compile test.
CROSS = {
    "aarch64": Target("aarch64-unknown-linux-gnu", "generic", ""),
    "aarch64-neoverse-n1": Target("aarch64-unknown-linux-gnu", "neoverse-n1", "+neon,+fp-armv8,+lse,+crc"),
    "x86_64": Target("x86_64-unknown-linux-gnu", "x86-64", ""),
}


def parse(name: str | None) -> Target:
    if name in (None, "", "host"):
        return host()
    if name in CROSS:
        return CROSS[name]
    if "-" in name:
        return Target(name, "generic", "")
    raise ValueError(f"unknown target {name!r}; known: host, {', '.join(CROSS)}, or an LLVM triple")


def new_machine(target: Target, opt: int = 2, jit: bool = True):
    """A TargetMachine of its own: what an MCJIT engine needs (runtime.native.engine), since
    the engine takes ownership of its machine and frees it when disposed."""
    initialize_llvm()
    if target != host():
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
    t = llvm.Target.from_triple(target.triple)
    return t.create_target_machine(cpu=target.cpu, features=target.features, opt=opt,
                                   reloc="default" if jit else "pic",
                                   codemodel="jitdefault" if jit else "default")


# Machines for compiling to object code and assembly, shared (never handed to an engine).
machine = lru_cache(maxsize=None)(new_machine)
