"""Which executable formats the local device loads, and which it offers a program.

Loaders (as IREE's local-sync device registers them):
  `vmvx-bytecode-fb`            VMVX modules, run by jitvm's backends;
  `embedded-elf-<arch>`         llvm-cpu, IREE's own ELF loader (hal.elf);
  `system-elf-<arch>`           llvm-cpu linked as a platform shared object (ctypes.CDLL), on
                                Linux (`system-dylib-*` / `system-dll-*` elsewhere are not loaded);
where <arch> is IREE's name for the host architecture (x86_64, arm_64). Like IREE, a
format is accepted when it starts with one of these names.

A program picks a variant of each executable by asking the device about formats in the
order the compiler chose (llvm-cpu before VMVX). Two things decline an llvm-cpu format
whose program also carries a VMVX executable, so that the program takes the VMVX variant:
`JITVM_PREFER=vmvx`, and a host that lacks CPU features the llvm-cpu code was compiled for.
Without a VMVX alternative nothing is declined: the executable loads, or fails with a
message naming what is missing, instead of the program's "no variant" trap.

CPU features: IREE 3.13's libraries do not declare the ISA extensions their code uses
(`header.features` has no bits defined; IREE itself checks nothing and a mismatch dies of
SIGILL). The compiler's target description, `#hal.executable.target<"llvm-cpu", "<format>",
{cpu = ..., cpu_features = "+avx2,..."}>`, survives only as text in the host module (the
diagnostic of its device-selection failure). When it is there, its `+features` (last
mention wins, as in LLVM) are compared with the host's features that LLVM knows.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field

from ....errors import ArgumentError, UnsupportedError

VMVX_FORMAT = "vmvx-bytecode-fb"
FAMILIES = ("llvm-cpu", "vmvx")
PREFER_ENV = "JITVM_PREFER"


def iree_arch() -> str | None:
    from ...native import target

    arch = target.host().arch
    return {"x86_64": "x86_64", "aarch64": "arm_64", "arm64": "arm_64"}.get(arch)


def embedded_prefix() -> str | None:
    arch = iree_arch()
    return f"embedded-elf-{arch}" if arch else None


def system_prefix() -> str | None:
    arch = iree_arch()
    return f"system-elf-{arch}" if arch and sys.platform.startswith("linux") else None


def loader_for(fmt: str) -> str | None:
    """"vmvx", "embedded-elf" or "system-library": the loader of `fmt` on this host, or None."""
    if fmt == VMVX_FORMAT:
        return "vmvx"
    emb, sysl = embedded_prefix(), system_prefix()
    if emb and fmt.startswith(emb):
        return "embedded-elf"
    if sysl and fmt.startswith(sysl):
        return "system-library"
    return None


def family(fmt: str) -> str | None:
    if fmt == VMVX_FORMAT:
        return "vmvx"
    if fmt.startswith(("embedded-elf-", "system-elf-", "system-dylib-", "system-dll-")):
        return "llvm-cpu"
    return None


def supported_formats() -> list[str]:
    return [f for f in (embedded_prefix(), system_prefix(), VMVX_FORMAT) if f]


def preference() -> str:
    value = os.environ.get(PREFER_ENV, "").strip() or "llvm-cpu"
    if value not in FAMILIES:
        raise ArgumentError(f"{PREFER_ENV} must be one of {', '.join(FAMILIES)}, got {value!r}")
    return value


_TARGET_RE = re.compile(rb'#hal\.executable\.target<"llvm-cpu", "([\w.-]+)", \{')
_FEATURES_RE = re.compile(rb'\bcpu_features = "([^"]*)"')
_CPU_RE = re.compile(rb'\bcpu = "([^"]*)"')


@dataclass(frozen=True)
class TargetInfo:
    """What the compiler recorded about one llvm-cpu target."""

    format: str
    cpu: str
    features: frozenset[str]  # enabled LLVM features ("+name", last mention wins)

    def missing(self, host: dict[str, bool]) -> list[str]:
        """Required features the host lacks (features this LLVM does not know are not judged)."""
        return sorted(f for f in self.features if f in host and not host[f])


def recorded_targets(text) -> list[TargetInfo]:
    """llvm-cpu target descriptions in a host module's bytecode text."""
    data = bytes(text)
    out = []
    for m in _TARGET_RE.finditer(data):
        # The attribute dictionary runs to the closing "}>"; its strings hold no braces.
        end = data.find(b"}>", m.end())
        body = data[m.end():end if end >= 0 else m.end() + 65536]
        fm, cm = _FEATURES_RE.search(body), _CPU_RE.search(body)
        state: dict[str, bool] = {}
        for item in (fm.group(1).decode("ascii", "replace").split(",") if fm else ()):
            item = item.strip()
            if len(item) > 1 and item[0] in "+-":
                state[item[1:]] = item[0] == "+"
        info = TargetInfo(m.group(1).decode("ascii", "replace"), cm.group(1).decode() if cm else "",
                          frozenset(k for k, v in state.items() if v))
        if info not in out:
            out.append(info)
    return out


def embedded_families(module) -> frozenset[str]:
    """The executable kinds a host module carries in its rodata ("vmvx", "llvm-cpu")."""
    from ....errors import FormatError
    from ....verify.embedded import looks_like_module

    kinds = set()
    for seg in module.rodata:
        try:
            data = seg.data
        except FormatError:
            continue
        if bytes(data[:4]) == b"\x7fELF":
            kinds.add("llvm-cpu")
        elif looks_like_module(data):
            kinds.add("vmvx")
    return frozenset(kinds)


@dataclass
class FormatPolicy:
    """The device's answers to `hal.executable.format` queries for one program."""

    prefer: str = "llvm-cpu"
    offered: frozenset[str] | None = None  # executable kinds the program carries; None: unknown
    targets: list[TargetInfo] = field(default_factory=list)

    @classmethod
    def for_program(cls, module=None) -> "FormatPolicy":
        if module is None:
            return cls(preference())
        return cls(preference(), embedded_families(module), recorded_targets(module.bytecode))

    def missing_features(self, fmt: str) -> tuple[TargetInfo, list[str]] | None:
        """(target, features the host lacks) when every recorded target of `fmt` needs some."""
        from .library import host_features

        mine = [t for t in self.targets if fmt.startswith(t.format) or t.format.startswith(fmt)]
        if not mine:
            return None
        host = host_features()
        misses = [(t, t.missing(host)) for t in mine]
        if any(not m for _, m in misses):
            return None
        return min(misses, key=lambda tm: len(tm[1]))

    def usable(self, fam: str) -> bool:
        """Whether executables of family `fam` can run here (llvm-cpu: a loader, and the CPU
        features of some recorded target, if any is recorded)."""
        if fam == "vmvx":
            return True
        if embedded_prefix() is None:
            return False
        formats = {t.format for t in self.targets if loader_for(t.format)}
        return not formats or any(self.missing_features(f) is None for f in formats)

    def supports(self, fmt: str) -> bool:
        if loader_for(fmt) is None:
            return False
        fam = family(fmt)
        alternatives = (self.offered or frozenset()) - {fam}
        if not alternatives:
            return True  # the program has nothing else to fall back on: load it or say why not
        if fam == "llvm-cpu" and self.missing_features(fmt) is not None:
            return False
        return not (self.prefer != fam and self.prefer in alternatives and self.usable(self.prefer))

    def picks_vmvx(self) -> bool:
        """Whether the program's VMVX executables are the ones it will run (the JIT then
        compiles them ahead; otherwise the llvm-cpu variants run and VMVX is left alone)."""
        offered = self.offered or frozenset()
        if "vmvx" not in offered:
            return False
        if "llvm-cpu" not in offered:
            return True
        return self.prefer == "vmvx" or not self.usable("llvm-cpu")

    def check_loadable(self, fmt: str, origin: str) -> None:
        """Raises UnsupportedError when the host cannot run the llvm-cpu code of `fmt`."""
        found = self.missing_features(fmt)
        if found is not None:
            target, missing = found
            raise UnsupportedError(
                f"{origin}: the executable was compiled for CPU '{target.cpu}' with features this host "
                f"lacks: {', '.join(missing)} (recompile with --iree-llvmcpu-target-cpu=host on this machine, "
                f"or add a VMVX variant)")
