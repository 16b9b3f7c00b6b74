"""CLI pieces about compiled code: `jitvm dump --llvm/--asm`, `jitvm cache` and `jitvm compile`."""

from __future__ import annotations

from ..errors import Error
from .paths import resolve_path


def add_dump_options(d) -> None:
    g = d.add_mutually_exclusive_group()
    g.add_argument("--llvm", action="store_true", help="print the LLVM IR the JIT generates")
    g.add_argument("--asm", action="store_true", help="print the machine code the JIT generates")
    d.add_argument("--target", default="host",
                   help="code generation target for --llvm/--asm: host, aarch64, aarch64-neoverse-n1, "
                        "x86_64, or an LLVM triple")
    d.add_argument("--unoptimized", action="store_true", help="with --llvm: the IR before optimization")


def dump_compiled(args, module) -> str:
    from ..frontend.dump import find_function
    from ..lower import inspect
    from ..runtime.native import target
    from ..verify import verify_module

    verified = verify_module(module)
    try:
        tgt = target.parse(args.target)
    except ValueError as e:
        raise Error(str(e)) from None
    ordinal = find_function(module, args.function) if args.function else None
    try:
        if args.asm:
            return inspect.assembly(verified, tgt)
        return inspect.function_ir(verified, ordinal, optimized=not args.unoptimized, target=tgt)
    except RuntimeError as e:  # llvmlite: a triple this LLVM build has no backend for
        raise Error(f"cannot generate code for target {args.target!r}: {str(e).strip()}") from None


def cmd_cache(args) -> int:
    from ..runtime.native import cache

    if args.action == "clear":
        print(f"removed {cache.clear()} cache entries (compiled modules and runtime code) from {cache.cache_dir()}")
    else:
        found = cache.entries()
        print(f"{cache.cache_dir()}: {len(found)} entries (compiled modules and runtime code), "
              f"{sum(size for _, size, _ in found) / 1e6:.1f} MB")
    return 0


def cmd_compile(args) -> int:
    from ..api import _jit_backend, load
    from ..api.compiled import write_bundle
    from ..runtime.native import cache

    with cache.recording() as keys:
        module = load(resolve_path(args.file), backend=_jit_backend())  # every function, fully optimised
    count = write_bundle(module._instance.loaded.module, keys, args.output)
    module.close()
    print(f"wrote {args.output}: {count} compiled entries (the module, its executables and the runtime's code)")
    return 0


def add_subcommands(sub) -> None:
    k = sub.add_parser("compile", help="write a module's compiled code to a bundle jitvm.load(..., compiled=) uses")
    k.add_argument("file", help=".vmfb file (or example:NAME)")
    k.add_argument("-o", "--output", required=True, help="the bundle to write (e.g. model.jvc)")
    k.set_defaults(run=cmd_compile)
    c = sub.add_parser("cache", help="show or clear the cache of compiled modules")
    c.add_argument("action", nargs="?", choices=["info", "clear"], default="info")
    c.set_defaults(run=cmd_cache)
