"""Helpers for the reference-interpreter tests: its own IREE-fact programs, and comparing with IREE.

Besides the shared corpus, the interpreter has its own VM-assembly programs in
tests/interp_programs (IREE facts it reproduces); they use the corpus directives and are
assembled with iree-as-module into the corpus cache directory, keyed by content.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import jitvm
from jitvm.fuzz.corpus import CorpusModule, cache_dir_default, parse_directives, require_tool
from jitvm.fuzz.oracles.calls import describe, same_value

PROGRAMS_DIR = Path(__file__).resolve().parent / "interp_programs"
_STATUS = re.compile(r"\b(CANCELLED|UNKNOWN|INVALID_ARGUMENT|DEADLINE_EXCEEDED|NOT_FOUND|ALREADY_EXISTS|"
                     r"PERMISSION_DENIED|RESOURCE_EXHAUSTED|FAILED_PRECONDITION|ABORTED|OUT_OF_RANGE|"
                     r"UNIMPLEMENTED|INTERNAL|UNAVAILABLE|DATA_LOSS|UNAUTHENTICATED|OK);")


def program(stem: str) -> CorpusModule:
    """tests/interp_programs/<stem>.vmasm (stem may name a subdirectory), assembled and cached."""
    source = PROGRAMS_DIR / f"{stem}.vmasm"
    text = source.read_text()
    d = parse_directives(text, "vmasm")
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    out_dir = cache_dir_default() / "interp-programs"
    out_dir.mkdir(parents=True, exist_ok=True)
    vmfb = out_dir / f"{stem.replace('/', '__')}-{key}.vmfb"
    if not vmfb.is_file():
        tmp = vmfb.with_suffix(".tmp")
        subprocess.run([require_tool("iree-as-module"), f"--output={tmp}", str(source)], check=True,
                       capture_output=True, text=True)
        tmp.replace(vmfb)
    return CorpusModule(name=f"interp/{stem}", kind="vmasm", source=source, vmfb=vmfb, executables=(),
                        flags=(), calls=d.calls, expect_trap=d.expect_trap, check_tests=False, exports=d.exports,
                        oracle_crash=d.oracle_crash, oracle_quirks=d.oracle_quirks)


def program_stems() -> list[str]:
    return sorted(p.stem for p in PROGRAMS_DIR.glob("*.vmasm"))


def iree_status(message: str) -> str | None:
    """The status name in an IREE error message ("... OUT_OF_RANGE; ..."), if any."""
    m = _STATUS.search(message)
    return m.group(1) if m else None


def compare_module(cm: CorpusModule, instance, expected) -> list[str]:
    """Mismatches between jitvm's interpreter and IREE's outcomes for every CALL of `cm`.

    Calls run in order on one instance, so module state carries over like in the oracle.
    ORACLE-CRASH calls (IREE dies with SIGFPE) must trap with INVALID_ARGUMENT; calls both
    EXPECT-TRAP and ORACLE-QUIRK (IREE reads out of bounds) must trap.
    """
    problems = []
    for call, want in zip(cm.calls, expected):
        fn = instance.lookup(call.function)
        try:
            got, trap = fn.call([a.value for a in call.args]), None
        except jitvm.Trap as e:
            got, trap = None, e
        where = str(call)
        if call.function in cm.oracle_crash:
            if trap is None or trap.status_name != "INVALID_ARGUMENT":
                problems.append(f"{where}: IREE crashes here; jitvm must trap INVALID_ARGUMENT, got {trap or got}")
            continue
        if call.function in cm.oracle_quirks and cm.expects_trap(call.function):
            if trap is None:
                problems.append(f"{where}: must trap (IREE misbehaves), returned {got}")
            continue
        if trap is not None:
            if not want.trapped:
                problems.append(f"{where}: jitvm trapped ({trap}) where IREE returned {want.results}")
            elif iree_status(want.error) != trap.status_name:
                problems.append(f"{where}: status {trap.status_name} ({trap.message}), IREE "
                                f"{iree_status(want.error)} ({want.error[:160]})")
            continue
        if want.trapped:
            problems.append(f"{where}: jitvm returned {got} where IREE trapped ({want.error[:160]})")
        elif len(got) != len(want.results) or not all(same_value(g, w) for g, w in zip(got, want.results)):
            problems.append(f"{where}: jitvm [{', '.join(map(describe, got))}] != "
                            f"IREE [{', '.join(map(describe, want.results))}]")
    return problems
