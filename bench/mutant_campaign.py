"""Mutant campaign: N byte-mutants of the corpus through jitvm's loader+verifier and IREE's.

    python bench/mutant_campaign.py --count 10000 --seed 2026 [--workers 2] [--no-iree]
                                    [--run interp --runner-module jitvm.somewhere] [--json out.json]

Every mutant changes 1-3 bytes of a corpus module or VMVX executable, biased to the
bytecode and the function descriptors. Both sides run in worker processes (tests/mutation.py),
so crashes and hangs are counted. The report gives jitvm's outcomes (rejected, accepted,
crash, hang, bug = an exception that is not jitvm.Error), IREE's outcomes, the cross table of
the two verdicts, and the most frequent reasons on each side of a disagreement.

`--run NAME` is the hook for the backends: once the interpreter or the JIT registers a runner
in `tests.mutation.RUNNERS` (from a module named with --runner-module), every accepted mutant's
exports are called through it in the workers; a runner may return or raise jitvm.Error, and
anything else (or a crash) is counted against jitvm.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.corpus import build_corpus  # noqa: E402
from tests.mutation import (ACCEPTED, BUG, CRASH, HANG, REJECTED, RUNNERS, MutantPool,  # noqa: E402
                            mutate, seed_from_file)

STATUSES = (REJECTED, ACCEPTED, CRASH, HANG, BUG)


@dataclass
class Mutant:
    seed: str
    changes: tuple
    data: bytes = field(repr=False)


@dataclass
class Report:
    total: int = 0
    seconds: dict = field(default_factory=dict)
    jitvm: Counter = field(default_factory=Counter)
    iree: Counter = field(default_factory=Counter)
    cross: Counter = field(default_factory=Counter)  # (jitvm status, iree status) -> count
    jitvm_reasons: Counter = field(default_factory=Counter)
    only_iree_rejects: Counter = field(default_factory=Counter)  # IREE's reason, jitvm accepted
    only_jitvm_rejects: Counter = field(default_factory=Counter)  # jitvm's reason, IREE accepted
    notable: list = field(default_factory=list)  # (side, status, seed, changes, detail)
    iree_failures_vs_jitvm: Counter = field(default_factory=Counter)  # jitvm's verdict where IREE died/hung

    def examples(self, status: str) -> list:
        return [n for n in self.notable if n[1] == status]

    def as_json(self) -> dict:
        return {"total": self.total, "seconds": self.seconds, "jitvm": dict(self.jitvm), "iree": dict(self.iree),
                "cross": {f"jitvm {a} / iree {b}": n for (a, b), n in sorted(self.cross.items())},
                "jitvm_reasons": self.jitvm_reasons.most_common(),
                "only_iree_rejects": self.only_iree_rejects.most_common(),
                "only_jitvm_rejects": self.only_jitvm_rejects.most_common(),
                "iree_failures_vs_jitvm": self.iree_failures_vs_jitvm.most_common(),
                "notable": self.notable}


def make_mutants(count: int, seed: int) -> list[Mutant]:
    seeds = [seed_from_file(p, f"{cm.name}:{p.name}") for cm in build_corpus()
             for p in (cm.vmfb, *cm.executables)]
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        s = rng.choice(seeds)
        data, changes = mutate(s, rng)
        out.append(Mutant(s.name, changes, data))
    return out


_NUMBER = re.compile(r"(?<![A-Za-z_0-9])-?(0x[0-9A-Fa-f]+|\d+)")
_REGISTER = re.compile(r"%([iRr])\d+(:\d+)?")


def reason(detail: str) -> str:
    """A rejection message reduced to its rule: site, instruction and numbers dropped."""
    text = detail.split("; source ")[0]
    if "`: " in text:
        text = text.split("`: ", 1)[1]  # after the instruction
    elif "verifier.c" in text or "archive.c" in text or "module.c" in text or "block_list.c" in text:
        text = text.split(";", 1)[1] if ";" in text else text  # IREE: after the status code
        text = text.split("; at ")[0]
    else:
        text = re.sub(r"^(\w+Error: )?(module '[^']*'( function '[^']*' \(#\d+\))?: )?", "", text)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = _REGISTER.sub(lambda m: f"%{m.group(1)}N" + (":N" if m.group(2) else ""), text)
    text = re.sub(r"\b[0-9A-F]{8}\b", "N", text)  # IREE's hex pcs
    return _NUMBER.sub("N", text).strip()[:140]


def _run(check: str, mutants: list[Mutant], workers: int, timeout: float, options: dict) -> dict:
    with MutantPool(check, workers=workers, timeout=timeout, options=options) as pool:
        return dict(pool.run((i, m.data) for i, m in enumerate(mutants)))


def run_campaign(count: int = 10_000, seed: int = 2026, workers: int = 2, iree: bool = True,
                 timeout: float = 10.0, run: str | None = None, runner_modules: tuple = (),
                 iree_timeout: float = 5.0) -> Report:
    """`timeout`: seconds without an answer that count as a jitvm hang; `iree_timeout` the same
    for IREE's loader, whose hangs are real (a mutated block count keeps it busy for minutes)
    and would otherwise dominate the campaign's time."""
    mutants = make_mutants(count, seed)
    report = Report(total=len(mutants))
    options = {"run": run, "runner_modules": tuple(runner_modules)} if run else {}
    t = time.monotonic()
    ours = _run("jitvm", mutants, workers, timeout, options)
    report.seconds["jitvm"] = round(time.monotonic() - t, 1)
    theirs = {}
    if iree:
        t = time.monotonic()
        theirs = _run("iree", mutants, workers, iree_timeout, {})
        report.seconds["iree"] = round(time.monotonic() - t, 1)
    for i, m in enumerate(mutants):
        status, detail = ours[i]
        report.jitvm[status] += 1
        if status == REJECTED:
            report.jitvm_reasons[reason(detail)] += 1
        elif status in (CRASH, HANG, BUG):
            report.notable.append(("jitvm", status, m.seed, m.changes, detail[-2000:]))
        if not iree:
            continue
        their_status, their_detail = theirs[i]
        report.iree[their_status] += 1
        report.cross[(status, their_status)] += 1
        if their_status in (CRASH, HANG):
            report.iree_failures_vs_jitvm[reason(detail) if status == REJECTED else status] += 1
            if sum(1 for n in report.notable if n[0] == "iree") < 20:
                report.notable.append(("iree", their_status, m.seed, m.changes, their_detail))
        if status == ACCEPTED and their_status == REJECTED:
            report.only_iree_rejects[reason(their_detail)] += 1
        if status == REJECTED and their_status == ACCEPTED:
            report.only_jitvm_rejects[reason(detail)] += 1
    return report


def format_report(r: Report, top: int = 15) -> str:
    out = [f"{r.total} mutants (1-3 bytes; biased to bytecode and function descriptors); "
           f"wall time: " + ", ".join(f"{k} {v} s" for k, v in r.seconds.items()), ""]
    out.append("jitvm: " + ", ".join(f"{s} {r.jitvm[s]}" for s in STATUSES))
    if r.iree:
        out.append("IREE:  " + ", ".join(f"{s} {r.iree[s]}" for s in (REJECTED, ACCEPTED, CRASH, HANG)))
        out += ["", "cross table (rows jitvm, columns IREE):",
                f"  {'':10}" + "".join(f"{s:>10}" for s in (REJECTED, ACCEPTED, CRASH, HANG))]
        for a in STATUSES:
            if r.jitvm[a]:
                out.append(f"  {a:10}" + "".join(f"{r.cross[(a, b)]:>10}" for b in (REJECTED, ACCEPTED, CRASH, HANG)))
    sections = [("jitvm's most frequent rejection reasons", r.jitvm_reasons),
                ("jitvm rejects, IREE accepts (jitvm's reason)", r.only_jitvm_rejects),
                ("jitvm accepts, IREE rejects (IREE's reason)", r.only_iree_rejects),
                ("IREE crashes or hangs at load; jitvm's verdict", r.iree_failures_vs_jitvm)]
    for title, counter in sections:
        if counter:
            out += ["", f"{title}:"] + [f"  {n:6}  {text}" for text, n in counter.most_common(top)]
    if r.notable:
        out += ["", "crashes, hangs and bugs (side, status, seed module, changes (offset, old, new)):"]
        out += [f"  {side} {status} {seed} {changes}: {detail.strip().splitlines()[-1] if detail else ''}"
                for side, status, seed, changes, detail in r.notable]
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds without an answer = jitvm hang")
    p.add_argument("--iree-timeout", type=float, default=5.0, help="seconds without an answer = IREE hang")
    p.add_argument("--no-iree", action="store_true", help="skip the comparison with IREE's loader")
    p.add_argument("--run", metavar="NAME", help="call accepted mutants' exports with runner NAME")
    p.add_argument("--runner-module", action="append", default=[],
                   help="module to import (in the workers) that registers runners in tests.mutation.RUNNERS")
    p.add_argument("--json", type=Path, help="also write the full report as JSON")
    args = p.parse_args(argv)
    if args.run:
        import importlib

        for name in args.runner_module:
            importlib.import_module(name)
        if args.run not in RUNNERS:
            print(f"no runner {args.run!r} is registered (have: {', '.join(RUNNERS) or 'none'}); the "
                  f"interpreter/JIT must register one in tests.mutation.RUNNERS from a --runner-module",
                  file=sys.stderr)
            return 2
    report = run_campaign(args.count, args.seed, args.workers, not args.no_iree, args.timeout, args.run,
                          tuple(args.runner_module), args.iree_timeout)
    print(format_report(report))
    if args.json:
        args.json.write_text(json.dumps(report.as_json(), indent=1, default=str))
    bad = report.jitvm[CRASH] + report.jitvm[HANG] + report.jitvm[BUG]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
