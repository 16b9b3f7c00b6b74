"""The CLI commands that execute programs: `jitvm run`, `jitvm check`, `jitvm demo`.

`run` mirrors iree-run-module (same input syntax and result printing), `check` runs a
check-dialect test module's no-argument exports as tests, `demo` runs the bundled CNN.
"""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import ArgumentError, Error
from ..api import marshal
from ..runtime.modules.hal import types as hal_types
from .values import format_result, parse_input

BACKEND_HELP = "jit (default; the interpreter until the JIT is available) or interp"
TIER_HELP = ("how the JIT compiles, each function when first called: auto (quickly first, optimised in the "
             "background once called again), baseline (quickly only) or full (optimised at once); "
             "default JITVM_TIER, else auto")


def _vm_arguments(fn, inputs: list[str]) -> list:
    """The --input texts as VM values for `fn` (arrays become buffer views)."""
    decl = fn.declaration
    codes = [c if isinstance(c, str) else "r" for c in fn.cconv.args][:fn.inputs]
    if len(inputs) != len(codes):
        expected = ", ".join(map(str, decl.inputs)) if decl else fn.cconv.text
        raise ArgumentError(f"{fn.name} takes {len(codes)} inputs ({expected}), got {len(inputs)} --input values")
    hal = fn.module.hal
    out = []
    for i, (text, code) in enumerate(zip(inputs, codes)):
        d = decl.inputs[i] if decl else None
        label = f"{fn.name} input {i}" + (f" ({d})" if d else "")
        value = parse_input(text, d, code)
        if d is not None and d.is_tensor:
            out.append(marshal.array_argument(hal, value, d, label))
        elif d is not None and d.is_scalar:
            out.append(marshal.scalar_argument(value, d, label))
        elif isinstance(value, np.ndarray):
            etype = hal_types.ELEMENT_OF_NUMPY.get(value.dtype)
            if etype is None or hal is None:
                raise ArgumentError(f"{label}: cannot pass an array of {value.dtype}")
            out.append(marshal.array_to_view(hal, value, etype))
        else:
            out.append(value)
    return out


def cmd_run(args) -> int:
    from ..api import load
    from ..runtime.modules.hal.fence import HalFence, wait_all
    from .outputs import check_expected, emit
    from .paths import resolve_path

    sources = [resolve_path(m) for m in (args.module or [])] + ([resolve_path(args.file)] if args.file else [])
    if not sources:
        raise ArgumentError("give the module to run (FILE or --module=FILE; --module repeats for modules "
                            "that import from each other, the last one runs)")
    module = load(sources, backend=args.backend, driver=args.device or None, parameters=args.parameters,
                  tier=args.tier)
    name = args.function or _single_function(module)
    fn = module.function(name)
    vm_args = _vm_arguments(fn, args.input or [])
    print(f"EXEC @{name}")
    if fn.fenced:  # async-external: nothing to wait on, then wait for the signal as iree-run-module does
        signal = HalFence.create()
        results = fn.vm_function.call(vm_args + [None, signal])
        wait_all([signal], f"{fn.name} (coarse-fences)")
    else:
        results = fn.vm_function.call(vm_args)
    if args.expected_output:
        return check_expected(args.expected_output, fn.cconv.results, results)
    emit(args.output or [], fn.cconv.results, results)
    return 0


def _single_function(module) -> str:
    if len(module.exports) == 1:
        return module.exports[0]
    raise ArgumentError(f"--function is required: module '{module.name}' exports {', '.join(module.exports)}")


def cmd_check(args) -> int:
    from ..api import load
    from .paths import resolve_path

    passed = failed = 0
    for path in args.files:
        label = Path(path).name
        try:
            module = load(resolve_path(path), backend=args.backend)
        except Error as e:
            print(f"ERROR {label}: {e}")
            failed += 1
            continue
        tests = [n for n in module.exports if not module.function(n).cconv.args]
        for name in tests:
            start = time.perf_counter()
            try:
                module.function(name)()
            except Error as e:
                failed += 1
                print(f"FAIL {label}::{name}")
                print("  " + str(e).replace("\n", "\n  "))
                continue
            passed += 1
            print(f"PASS {label}::{name} ({(time.perf_counter() - start) * 1e3:.1f} ms)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def demo_input() -> np.ndarray:
    """A 28x28 'seven': a horizontal bar and a diagonal stroke, deterministic."""
    img = np.zeros((28, 28), np.float32)
    img[5:8, 6:22] = 1.0
    for r in range(8, 24):
        c = 21 - (r - 8) * 10 // 16
        img[r, c - 1:c + 2] = 1.0
    return img.reshape(1, 28, 28, 1)


def cmd_demo(args) -> int:
    from ..api import load

    path = resources.files("jitvm") / "examples" / "cnn.vmfb"
    start = time.perf_counter()
    module = load(str(path), backend=args.backend, tier=args.tier)
    loaded = time.perf_counter()
    x = demo_input()
    probs = module.predict(x)
    first = time.perf_counter()
    runs = max(1, args.repeat)
    for _ in range(runs):
        module.predict(x)
    mean = (time.perf_counter() - first) / runs
    np.set_printoptions(precision=4, suppress=True)
    print("jitvm demo: a small CNN (conv-relu, strided conv-relu, avg pool, fc, softmax) compiled for VMVX")
    print(f"module:      {path.name} (@predict: tensor<1x28x28x1xf32> -> tensor<1x10xf32>)")
    print(f"backend:     {module.backend}")
    print(f"input:       a 28x28 drawing of a seven, sum {x.sum():.0f}")
    print(f"result:      {probs.reshape(-1)}")
    print(f"top class:   {int(np.argmax(probs))} (p={float(np.max(probs)):.4f}; the weights are seeded, not trained)")
    print(f"load:        {(loaded - start) * 1e3:.1f} ms (verify + prepare + __init)")
    print(f"first call:  {(first - loaded) * 1e3:.1f} ms")
    print(f"mean call:   {mean * 1e3:.2f} ms over {runs} calls")
    _compare_with_iree(str(path), x, probs, mean, runs)
    return 0


def _compare_with_iree(path: str, x: np.ndarray, probs: np.ndarray, mean: float, runs: int) -> None:
    """The same calls under IREE's own VMVX interpreter, when iree-base-runtime is installed."""
    try:
        import iree.runtime as rt
    except ImportError:
        print("IREE:        install iree-base-runtime==3.13.0 (the test extra) to compare with IREE's interpreter")
        return
    iree_module = rt.load_vm_flatbuffer_file(path, driver="local-sync")
    want = np.asarray(iree_module.predict(x))
    start = time.perf_counter()
    for _ in range(runs):
        iree_module.predict(x)
    iree_mean = (time.perf_counter() - start) / runs
    same = want.dtype == probs.dtype and want.tobytes() == np.asarray(probs).tobytes()
    print(f"IREE interp: {iree_mean * 1e3:.2f} ms per call (its VMVX interpreter, local-sync, in this process)")
    print(f"speed-up:    {iree_mean / mean:.2f}x over IREE's interpreter; results "
          f"{'bit-identical' if same else 'DIFFER'}")


def add_subcommands(sub) -> None:
    r = sub.add_parser("run", help="run one function, like iree-run-module")
    r.add_argument("file", nargs="?", help="a .vmfb path, or example:NAME for a bundled module (the last module)")
    r.add_argument("--module", action="append", metavar="FILE",
                   help="a module to load first (repeatable, in order; later modules import from earlier ones)")
    r.add_argument("--function", help="export to call (optional when there is only one)")
    r.add_argument("--input", action="append", metavar="VALUE",
                   help="an argument: 2x2xf32=1,2,3,4 | 4xf32=[1 2 3 4] | 5 | @x.npy | 2xi32=@raw.bin")
    r.add_argument("--output", action="append", metavar="@FILE.npy",
                   help="one per result: @FILE.npy saves it, - prints it (default: print every result)")
    r.add_argument("--expected_output", action="append", metavar="VALUE",
                   help="one per result, compared as iree-run-module does ((ignored) skips one); exit 1 on mismatch")
    r.add_argument("--parameters", action="append", metavar="[SCOPE=]FILE",
                   help="a parameter archive (.irpa, .safetensors, .gguf), optionally for one scope (repeatable)")
    r.add_argument("--device", action="append", choices=("local-sync", "local-task"),
                   help="the device (repeat for programs that use several); local-sync runs dispatches on one thread")
    r.add_argument("--backend", default="jit", help=BACKEND_HELP)
    r.add_argument("--tier", choices=("auto", "baseline", "full"), help=TIER_HELP)
    r.set_defaults(run=cmd_run)

    c = sub.add_parser("check", help="run check-dialect test modules: every no-argument export is a test")
    c.add_argument("files", nargs="+", metavar="FILE", help=".vmfb test modules")
    c.add_argument("--backend", default="jit", help=BACKEND_HELP)
    c.set_defaults(run=cmd_check)

    d = sub.add_parser("demo", help="run the bundled example CNN and time it")
    d.add_argument("--backend", default="jit", help=BACKEND_HELP)
    d.add_argument("--tier", choices=("auto", "baseline", "full"), help=TIER_HELP)
    d.add_argument("--repeat", type=int, default=20, help="timed calls after the first (default 20)")
    d.set_defaults(run=cmd_demo)


__all__ = ["add_subcommands", "cmd_check", "cmd_demo", "cmd_run", "demo_input"]
