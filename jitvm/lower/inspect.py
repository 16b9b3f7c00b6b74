"""What the JIT makes of a module, for people: LLVM IR and machine code per function."""

from __future__ import annotations

import re

from ..verify.model import VerifiedModule
from .llvm import compiler
from ..runtime.native import target as targets
from .llvm import vector_math
from .module import ModuleLowering

_FUNCTION = re.compile(r"^define .*?@\"?(jv_[0-9a-f]+_f(\d+))\"?\(", re.M)


def _vector_math(target: targets.Target, on: bool | None = None) -> bool:
    """Vector forms of libm calls as the backend lowers them: on the host, where its libm is
    the one they reproduce; never for another target (its libm is not the one checked)."""
    if on is not None:
        return on
    return target == targets.host() and vector_math.available()


def lowered_ir(verified: VerifiedModule, optimized: bool = True, target: targets.Target | None = None,
               speed: int = 2, vector_math_on: bool | None = None) -> str:
    """`vector_math_on`: lower libm calls to vecmath's wrappers (default: as the backend does here)."""
    target = target or targets.host()
    lowered = ModuleLowering(verified, "dump", triple=target.triple, vector_math=_vector_math(target, vector_math_on),
                             wide_vectors=targets.wide_vectors(target)).lower()
    if not optimized:
        return str(lowered)
    return str(compiler.optimize(str(lowered), target, speed))


def function_ir(verified: VerifiedModule, ordinal: int | None, optimized: bool = True,
                target: targets.Target | None = None) -> str:
    """The IR of one function (all when `ordinal` is None), each headed by its VM name."""
    text = lowered_ir(verified, optimized, target)
    if ordinal is None:
        return text
    out, keep = [], False
    for line in text.splitlines():
        m = re.match(r"^define .*@\"?jv_dump_f(\d+)\"?\(", line)
        if m:
            keep = int(m.group(1)) == ordinal
        if keep:
            out.append(line)
            if line == "}":
                keep = False
    return "\n".join(out)


def assembly(verified: VerifiedModule, target: targets.Target | None = None, speed: int = 2) -> str:
    target = target or targets.host()
    lowered = ModuleLowering(verified, "dump", triple=target.triple, vector_math=_vector_math(target),
                             wide_vectors=targets.wide_vectors(target)).lower()
    mod = compiler.optimize(str(lowered), target, speed)
    return compiler.emit_assembly(mod, target)


def object_code(verified: VerifiedModule, target: targets.Target, speed: int = 2, codegen: int = 2) -> bytes:
    lowered = ModuleLowering(verified, "obj", triple=target.triple, vector_math=_vector_math(target),
                             wide_vectors=targets.wide_vectors(target)).lower()
    mod = compiler.optimize(str(lowered), target, speed, codegen)
    return compiler.emit_object(mod, target, codegen)
