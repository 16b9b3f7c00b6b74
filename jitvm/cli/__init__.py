"""The `jitvm` command line: one subcommand per job, in the spirit of IREE's tools."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import Error
from .paths import resolve_path

def cmd_dump(args) -> int:
    from ..frontend.dump import dump_json, iter_dump_text
    from ..frontend.module import load_module

    m = load_module(resolve_path(args.file))
    if args.llvm or args.asm:
        from .compiled import dump_compiled

        print(dump_compiled(args, m))
        return 0
    if args.json:
        print(dump_json(m, args.function))
    else:
        for piece in iter_dump_text(m, args.function, summary=not args.no_summary):
            sys.stdout.write(piece)
    return 0


def cmd_asm(args) -> int:
    """Assembles VM assembly (what `jitvm dump` prints) into a .vmfb."""
    from ..frontend.asm import assemble_builder

    if args.file == "-":
        text, source = sys.stdin.read(), "<stdin>"
    else:
        try:
            text, source = Path(args.file).read_text(encoding="utf-8"), args.file
        except (OSError, UnicodeDecodeError) as e:
            raise Error(f"{args.file}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    if args.output:
        output = Path(args.output)
    elif args.file != "-":
        output = Path(args.file).with_suffix(".vmfb")
    else:
        raise Error("reading from stdin needs -o OUTPUT.vmfb")
    assemble_builder(text, source).write(output)
    return 0


def cmd_verify(args) -> int:
    """One line per module (embedded VMVX executables included): `FILE: ok` or its first error."""
    from ..verify.report import verdicts

    failed = False
    for text in args.files:
        for label, error in verdicts(resolve_path(text), text):
            if error is None and label == text:
                error = _unrunnable_executables(resolve_path(text))
            print(f"{label}: {'ok' if error is None else 'error: ' + error}", flush=True)
            failed |= error is not None
    return 1 if failed else 0


def _unrunnable_executables(path: str) -> str | None:
    """Why no device here can run the module's executables, or None when one can (or it has none)."""
    from ..frontend.module import load_module
    from ..runtime.modules.hal.formats import FormatPolicy, supported_formats
    from ..verify.embedded import executable_formats

    module = load_module(path)
    formats = executable_formats(module)
    policy = FormatPolicy.for_program(module)
    if not formats or any(policy.supports(f) for f in formats):
        return None
    return (f"no device here can run its executables (formats {', '.join(formats)}; "
            f"this runtime's local device loads {', '.join(supported_formats())})")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jitvm", description="A JIT compiler for IREE VM bytecode (.vmfb).")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("dump", help="print a module's metadata and disassembly")
    d.add_argument("file", help="a .vmfb path, or example:NAME for a bundled module")
    d.add_argument("--function", help="only this function (export name, debug name or ordinal)")
    d.add_argument("--json", action="store_true", help="machine-readable output")
    d.add_argument("--no-summary", action="store_true",
                   help="only the module's assembly (what `jitvm asm` reads), no summary comments")
    from .compiled import add_dump_options

    add_dump_options(d)
    d.set_defaults(run=cmd_dump)

    a = sub.add_parser("asm", help="assemble VM assembly text (jitvm dump's syntax) into a .vmfb")
    a.add_argument("file", help="a .vmasm path, or - for stdin")
    a.add_argument("-o", "--output", help="the .vmfb to write (default: FILE with .vmfb)")
    a.set_defaults(run=cmd_asm)

    v = sub.add_parser("verify", help="verify modules (and the executables embedded in them)")
    v.add_argument("files", nargs="+", metavar="FILE", help="a .vmfb path, or example:NAME")
    v.set_defaults(run=cmd_verify)

    from .execute import add_subcommands

    add_subcommands(sub)  # run, check, demo
    from .compiled import add_subcommands as add_jit_subcommands

    add_jit_subcommands(sub)  # cache
    from .benchmark import add_subcommands as add_bench_subcommands

    add_bench_subcommands(sub)  # benchmark
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except Error as e:
        print(f"jitvm {args.command}: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except OSError as e:  # a file the command was given cannot be read or written
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"jitvm {args.command}: error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug, but still one line (JITVM_TRACEBACK=1 shows it)
        if os.environ.get("JITVM_TRACEBACK"):
            raise
        print(f"jitvm {args.command}: internal error: {type(e).__name__}: {e} (JITVM_TRACEBACK=1 shows where)",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
