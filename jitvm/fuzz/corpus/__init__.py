"""A corpus: small MLIR and VM-assembly programs plus their compiled modules, and how to call them.

A corpus is a directory of programs (``mlir/*.mlir``, ``vmasm/*.vmasm``); the caller names
it (`Corpus(root)`; tests/corpus binds jitvm's own). Each program starts with directive
comments that say how the differential tests should call it:

``// FLAGS: <extra iree-compile flags>``
    Extra flags for ``iree-compile`` (MLIR only), appended to the target's flags.
``// LLVM-CPU-FLAGS: <extra iree-compile flags>``
    More flags when the program is compiled for llvm-cpu (e.g. a system shared object, for
    kernels calling libm, which an embedded ELF cannot link).
``// TARGETS: llvm-cpu``  (MLIR)
    The backends the program compiles for (vmvx, llvm-cpu; default both), the first being
    the one the corpus is built for: VMVX cannot lower f16/bf16 arithmetic, llvm-cpu cannot
    lower f64 math.erf. ``Corpus.build(target=...)`` builds every program listing a target
    for that target (llvm-cpu: a generic CPU of this machine's architecture, or of
    ``$JITVM_CORPUS_LLVM_TRIPLE``'s when another host's corpus is built here).
``// CALL @fn(2x3xf32, 3xi32, i32)``  (MLIR)
    One call with deterministic pseudo-random inputs of these shapes/dtypes (see
    :func:`make_inputs`). Scalars are written as a bare dtype. Dtypes: f16 bf16 f32 f64 i8 i16
    i32 i64 i1.
``// CALL @fn(i32=5, f32=1.5, f64=nan, i64=-0x8000000000000000)``  (VM assembly)
    One call with these raw VM argument values.
``// EXPECT-TRAP @fn``
    Calls of ``@fn`` must fail (trap / vm.fail / failed check) instead of returning.
``// ORACLE-CRASH @fn``
    IREE's own C interpreter does not trap here but kills the process (SIGFPE on integer
    division by zero or INT_MIN / -1): the VM semantics are a trap (list ``@fn`` under
    EXPECT-TRAP too), and the oracle runs these calls in a subprocess.
``// ORACLE-QUIRK @fn``
    What IREE returns for ``@fn`` comes from a known IREE bug or from C implementation-defined
    behaviour (e.g. f32 -> i32 casts of NaN); differential tests may report a mismatch
    there instead of failing.
``// NOT-CALLED @fn``
    Exported but not called (for example because IREE's Python invoke spins forever when a
    function executes vm.yield); it is still assembled, verified and disassembled.
``// CHECK-TESTS``
    The exports are ``check`` dialect tests: every public no-argument function is called once.

VM assembly comes in two syntaxes: ``vmasm/*.vmasm`` is IREE's VM dialect, assembled by
``iree-as-module``; ``vmasm/*.jvasm`` is the syntax ``jitvm dump`` prints, assembled by
``jitvm asm`` (for what iree-as-module refuses to assemble, such as ``vm.switch.ref``). Both
are of kind ``vmasm`` and are called the same way.

VM-assembly exports that have no CALL line are called once with no arguments.

Compiled modules go to a content-keyed cache (sha256 of the source text, the flags and the tool
version), ``jitvm-corpus-cache/`` in the system's temporary directory by default (tests write
nothing outside temporary directories) or ``$JITVM_CORPUS_CACHE``. Only missing entries are
compiled, two at a time; a fully warm build starts no subprocess.

    >>> from jitvm.fuzz.corpus import Corpus, make_inputs
    >>> mods = Corpus("tests/corpus").build(names=["mlir/matmul"])
    >>> m = mods[0]; call = m.calls[0]
    >>> args = make_inputs(m, 0)        # numpy arrays / numpy scalars, deterministic
"""

from __future__ import annotations

from .build import DEFAULT_CACHE_DIR, LLVM_CPU_FLAGS, TARGET_FLAGS, VMVX_FLAGS, Corpus, cache_dir_default, compile_command
from .directives import parse_arg, parse_directives
from .inputs import make_inputs, random_array
from .model import DTYPES, ArgSpec, Call, CorpusError, CorpusModule, Directives
from .tools import find_tool, require_tool, tool_version

__all__ = [
    "ArgSpec",
    "Call",
    "Corpus",
    "CorpusError",
    "CorpusModule",
    "DEFAULT_CACHE_DIR",
    "DTYPES",
    "Directives",
    "LLVM_CPU_FLAGS",
    "TARGET_FLAGS",
    "VMVX_FLAGS",
    "cache_dir_default",
    "compile_command",
    "find_tool",
    "make_inputs",
    "parse_arg",
    "parse_directives",
    "random_array",
    "require_tool",
    "tool_version",
]
