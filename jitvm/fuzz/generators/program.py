"""Whole programs: a module of several generated functions plus the calls that run them.

`generate(chooser, kind)` builds one module (`strategies.programs(kind)` is the hypothesis
strategy).
Kinds:
- "scalar": straight-line arithmetic/compare/conversion/shift/bit ops of every value bank;
- "control": branches with remap lists, br_table, counted loops (top- and bottom-tested,
  with breaks), internal calls (bounded recursion included), vm.fail/cond_fail, yields;
- "memory": buffers (alloc/clone/copy/fill/compare/hash, loads and stores of every width,
  read-only rodata), lists of values and refs, value and ref globals (direct and indirect);
- "kernel": VMVX-shaped loop nests over global buffers (see kernel.py);
- "mixed": some of each.
Control and mixed modules also get scalar helpers and a recursive function to call. Every
module has `@setup` (fills the ref globals; called first) and `@observe` (returns the whole
module state; called after every call).
"""

from __future__ import annotations

from . import control, kernel, memory, scalar
from .emit import Chooser, ModuleGen, Program

KINDS = ("scalar", "control", "memory", "kernel", "mixed")

_MAKERS = {
    "scalar": scalar.scalar_function,
    "control": control.control_function,
    "memory": memory.memory_function,
    "kernel": kernel.kernel_function,
}


def generate(c: Chooser, kind: str, functions: int | None = None) -> Program:
    mg = ModuleGen(c)
    memory.declare_state(mg)
    if kind in ("kernel", "mixed"):
        kernel.declare_buffers(mg)
    for _ in range(c.int(0, 2) if kind in ("control", "mixed") else 0):
        mg.add(scalar.scalar_function(mg, mg.name("h"), ncalls=1))
    if kind in ("control", "mixed") and c.chance(60):
        mg.add(control.recursive_function(mg))
    n = functions if functions is not None else c.int(2, 4)
    for _ in range(n):
        k = kind if kind != "mixed" else c.choice(("scalar", "control", "memory", "kernel"))
        mg.add(_MAKERS[k](mg), callable_=k != "kernel")
    setup = kernel.setup_function(mg)
    observe = memory.observe_function(mg)
    called = list(mg.functions)
    mg.functions = [setup] + called + [observe]
    return Program(text=mg.text(), functions=called, setup=setup.sig.name, observe=observe.sig.name,
                   observe_values=sum(1 for b in observe.sig.results if b != "ref"),
                   ref_globals=list(mg.ref_globals), loose_ref_globals=dict(mg.loose_ref_globals))
