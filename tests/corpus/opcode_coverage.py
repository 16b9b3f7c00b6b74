"""Dev tool: which VM opcodes does the corpus exercise?

    python -m tests.corpus.opcode_coverage [--isa /work/ref/isa.json] [--verbose]

Builds the corpus (cached), disassembles every compiled module and every dumped VMVX
executable with ``iree-dump-module``, collects the ``vm.<mnemonic>`` of each instruction line
and compares them with the mnemonics of the ISA description (``isa.json``; prefix and marker
pseudo-entries are ignored). Prints the mnemonics no corpus program uses and exits 1 if any.

The ISA file is read only if it exists (default: /work/ref/isa.json or ``$JITVM_ISA_JSON``);
this is a development aid, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

if __package__ in (None, ""):  # allow running as a plain script
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from jitvm.fuzz.corpus import require_tool  # type: ignore
    from tests.corpus import build_corpus  # type: ignore
else:
    from jitvm.fuzz.corpus import require_tool
    from tests.corpus import build_corpus

DEFAULT_ISA = os.environ.get("JITVM_ISA_JSON", "/work/ref/isa.json")

# "  %i2 = vm.add.i32 ..." / "  vm.return ..." inside a vm.func body of the dump.
_OP_RE = re.compile(r"^\s+(?:[%\w:, ]+=\s*)?vm\.([a-z0-9_.]+)\b")


def isa_mnemonics(path: str) -> set[str]:
    data = json.loads(Path(path).read_text())
    return {
        i["mnemonic"]
        for i in data["instructions"]
        if i.get("mnemonic") and i.get("kind") not in ("prefix", "marker")
    }


def disassembled_ops(vmfb: Path, dump_tool: str) -> Counter:
    out = subprocess.run([dump_tool, str(vmfb)], capture_output=True, text=True, check=False)
    ops: Counter = Counter()
    in_func = False
    for line in out.stdout.splitlines():
        if line.startswith("vm.func "):
            in_func = True
            continue
        if line.startswith("}"):
            in_func = False
            continue
        if in_func:
            m = _OP_RE.match(line)
            if m:
                ops[m.group(1)] += 1
    return ops


def source_ops(path: Path) -> Counter:
    ops: Counter = Counter()
    for line in path.read_text().splitlines():
        line = line.split("//", 1)[0]
        m = _OP_RE.match(line)
        if m:
            ops[m.group(1)] += 1
    return ops


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--isa", default=DEFAULT_ISA)
    ap.add_argument("--verbose", "-v", action="store_true", help="list where each op is used")
    args = ap.parse_args(argv)

    if not Path(args.isa).is_file():
        print(f"ISA description {args.isa} not found; nothing to compare against", file=sys.stderr)
        return 2
    wanted = isa_mnemonics(args.isa)
    dump = require_tool("iree-dump-module")

    used: dict[str, set[str]] = defaultdict(set)
    source_only: dict[str, set[str]] = defaultdict(set)
    for m in build_corpus():
        files = [(m.name, m.vmfb)] + [(f"{m.name}:{e.stem}", e) for e in m.executables]
        dumped: set[str] = set()
        for label, path in files:
            for op in disassembled_ops(path, dump):
                used[op].add(label)
                dumped.add(op)
        if m.kind == "vmasm":
            # iree-dump-module 3.13 stops a function at ops its disassembler does not handle
            # ("unhandled ext opcode"), so also count what the assembled source says.
            for op in source_ops(m.source):
                if op not in dumped:
                    source_only[op].add(m.name)
                used[op].add(m.name)

    missing = sorted(wanted - set(used))
    unknown = sorted(set(used) - wanted)
    print(f"{len(wanted) - len(missing)}/{len(wanted)} ISA mnemonics used by the corpus")
    if args.verbose:
        for op in sorted(used):
            print(f"  {op:28s} {len(used[op]):3d}  {', '.join(sorted(used[op])[:4])}")
    if source_only:
        print(
            "seen only in vmasm source (functions iree-dump-module stopped printing early): "
            + ", ".join(sorted(source_only))
        )
    if unknown:
        print("mnemonics in the dumps that the ISA file does not list: " + ", ".join(unknown))
    if missing:
        print("NOT COVERED: " + ", ".join(missing))
        return 1
    print("every opcode is covered")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
