"""Imports point down the pipeline: every module belongs to a stage (a folder), and a stage
imports only the stages before it. Function-level imports count like any other, so none can
hide a cycle; the modules' import graph has no cycle at all.

The order below is the layout README's "What is inside" describes.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "jitvm"

# Bottom to top. A module's stage is the longest entry its dotted name starts with.
STAGES = [
    "jitvm.errors", "jitvm.version",
    "jitvm.frontend",           # .vmfb -> BytecodeModule: archive, tables, ISA, decode, disassembly
    "jitvm.frontend.asm",       # the authoring side: assembler, ModuleBuilder, encoder, writer
    "jitvm.verify",             # -> VerifiedModule
    "jitvm.runtime.native",     # native code, one idiom: struct layout, IR builder, target, libm
    "jitvm.runtime.vm",         # the object model, ABI, traps, module instances, contexts
    "jitvm.runtime.exec",       # the executor: dispatch interface, grid workers, pool, replay
    "jitvm.fallback_interp",    # the reference interpreter
    "jitvm.lower.emit",         # the JIT's per-op lowering
    "jitvm.lower.loops",        # the loop optimiser
    "jitvm.lower.llvm",         # LLVM toolchain: optimisation, compile pool, cache
    "jitvm.lower",              # the JIT backend: the three together
    "jitvm.runtime.modules",    # native modules: hal, check, vmvx
    "jitvm.api",                # jitvm.load, numpy marshalling
    "jitvm.cli", "jitvm.__main__",
    "jitvm",                    # the package itself: re-exports the API
    "jitvm.fuzz",               # program generators, mutators and differential runners (users of the API)
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The jitvm modules `name` imports, anywhere in its code."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in modules else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in modules and m != name}


def _stage(name: str) -> int:
    best = max((s for s in STAGES if name == s or name.startswith(s + ".")), key=len)
    return STAGES.index(best)


def test_every_import_points_down_the_pipeline():
    modules = _modules()
    upward = []
    for name, path in sorted(modules.items()):
        for target in sorted(_imports(name, path, modules)):
            if _stage(target) > _stage(name):
                upward.append(f"{name} ({STAGES[_stage(name)]}) imports {target} ({STAGES[_stage(target)]})")
    assert not upward, "imports pointing up the pipeline:\n" + "\n".join(upward)


def test_the_import_graph_has_no_cycle():
    modules = _modules()
    graph = {name: _imports(name, path, modules) - {"jitvm"} for name, path in modules.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_every_module_has_a_stage():
    assert all(any(n == s or n.startswith(s + ".") for s in STAGES) for n in _modules())
