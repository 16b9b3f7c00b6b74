"""CLI pieces about compiled code: `jitvm dump --llvm/--asm` and `jitvm cache`."""

from __future__ import annotations

from ..errors import Error


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
    from ..lower.llvm import cache

    if args.action == "clear":
        print(f"removed {cache.clear()} cached modules from {cache.cache_dir()}")
    else:
        d = cache.cache_dir()
        entries = list(d.glob("*/*")) if d.exists() else []
        size = sum(f.stat().st_size for e in entries for f in e.iterdir() if f.is_file())
        print(f"{d}: {len(entries)} compiled modules, {size / 1e6:.1f} MB")
    return 0


def add_subcommands(sub) -> None:
    c = sub.add_parser("cache", help="show or clear the cache of compiled modules")
    c.add_argument("action", nargs="?", choices=["info", "clear"], default="info")
    c.set_defaults(run=cmd_cache)
