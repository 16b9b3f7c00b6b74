"""Mutant campaign: N byte-mutants of the corpus through jitvm's loader+verifier and IREE's.

    python bench/mutant_campaign.py --count 10000 --seed 2026 [--workers 2] [--no-iree]
                                    [--run jit] [--run interp] [--json out.json]

Every mutant changes 1-3 bytes of a corpus module (tests/corpus) or VMVX executable, biased
to the bytecode and the function descriptors. Both sides run in worker processes
(jitvm.fuzz.mutation), so crashes and hangs are counted. The report gives jitvm's outcomes
(rejected, accepted, crash, hang, bug = an exception that is not jitvm.Error), IREE's
outcomes, the cross table of the two verdicts, and the most frequent reasons on each side of
a disagreement.

`--run NAME` (repeatable) calls every accepted mutant's exports with the runner NAME of
`jitvm.fuzz.mutation.RUNNERS`: "jit" and "interp" from jitvm/fuzz/mutation/runners.py
(imported by default; --runner-module adds others). A call may return or raise jitvm.Error; anything else
is a BUG and a dead worker a CRASH. Budgets: `--timeout` for loading+verifying (no answer =
HANG), `--compile-budget` for the backend preparing the module (no answer = HANG, reported
as a hang while compiling), `--call-budget` per call (no answer = SLOW_CALL: a mutated loop
bound may legitimately run for hours; the worker is killed and the mutant's remaining calls
are skipped). Each run reports its calls, traps and the time per mutant, and when several
backends ran, the mutants on which their call outcomes (results, trap statuses and
messages) differ.
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

from jitvm.fuzz.corpus import Corpus  # noqa: E402
from jitvm.fuzz.mutation import (ACCEPTED, BUG, CRASH, HANG, REJECTED, RUNNER_MODULE, RUNNERS, SLOW_CALL,  # noqa: E402
                                 MutantPool, mutate, seed_from_file)

STATUSES = (REJECTED, ACCEPTED, SLOW_CALL, CRASH, HANG, BUG)
DEFAULT_RUNNER_MODULES = (RUNNER_MODULE,)
CORPUS = Corpus(Path(__file__).resolve().parent.parent / "tests" / "corpus")  # the tests' corpus


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
    runs: dict = field(default_factory=dict)  # runner -> RunReport
    disagreements: list = field(default_factory=list)  # (seed, changes, {runner: digest}) of accepted mutants

    def examples(self, status: str) -> list:
        return [n for n in self.notable if n[1] == status]

    def failures(self) -> int:
        """Crashes, hangs and bugs of jitvm, loading or running."""
        bad = self.jitvm[CRASH] + self.jitvm[HANG] + self.jitvm[BUG]
        return bad + sum(r.statuses[s] for r in self.runs.values() for s in (CRASH, HANG, BUG))

    def as_json(self) -> dict:
        return {"total": self.total, "seconds": self.seconds, "jitvm": dict(self.jitvm), "iree": dict(self.iree),
                "runs": {name: r.as_json() for name, r in self.runs.items()},
                "disagreements": self.disagreements,
                "cross": {f"jitvm {a} / iree {b}": n for (a, b), n in sorted(self.cross.items())},
                "jitvm_reasons": self.jitvm_reasons.most_common(),
                "only_iree_rejects": self.only_iree_rejects.most_common(),
                "only_jitvm_rejects": self.only_jitvm_rejects.most_common(),
                "iree_failures_vs_jitvm": self.iree_failures_vs_jitvm.most_common(),
                "notable": self.notable}


@dataclass
class RunReport:
    """One backend's run over the accepted mutants."""

    seconds: float = 0.0
    statuses: Counter = field(default_factory=Counter)
    counts: Counter = field(default_factory=Counter)  # calls, dispatches, traps, ... summed
    notable: list = field(default_factory=list)  # (status, seed, changes, detail)
    slow: Counter = field(default_factory=Counter)  # where calls ran past the budget (phase and export)
    digests: dict = field(default_factory=dict)  # mutant index -> outcome digest (all calls done, no OOM)
    restarts: int = 0

    def as_json(self) -> dict:
        return {"seconds": self.seconds, "statuses": dict(self.statuses), "counts": dict(self.counts),
                "slow": self.slow.most_common(), "notable": self.notable, "restarts": self.restarts}


def make_mutants(count: int, seed: int) -> list[Mutant]:
    seeds = [seed_from_file(p, f"{cm.name}:{p.name}") for cm in CORPUS.build()
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


def _run(check: str, mutants: list[Mutant], workers: int, timeout: float, options: dict,
         budgets: dict | None = None, stats: list | None = None, only=None) -> dict:
    with MutantPool(check, workers=workers, timeout=timeout, options=options, budgets=budgets) as pool:
        out = dict(pool.run((i, m.data) for i, m in enumerate(mutants) if only is None or i in only))
        if stats is not None:
            stats.append(pool.stats.restarts)
        return out


def run_campaign(count: int = 10_000, seed: int = 2026, workers: int = 2, iree: bool = True,
                 timeout: float = 10.0, run: str | tuple | None = None, runner_modules: tuple = (),
                 iree_timeout: float = 5.0, call_budget: float = 2.0, compile_budget: float = 60.0,
                 memory_limit: int = 6 << 30) -> Report:
    """`timeout`: seconds without an answer that count as a jitvm hang; `iree_timeout` the same
    for IREE's loader, whose hangs are real (a mutated block count keeps it busy for minutes)
    and would otherwise dominate the campaign's time. `run`: runner name(s) for the accepted
    mutants, each with `call_budget` seconds per call and `compile_budget` for preparing a
    module, in workers limited to `memory_limit` bytes of address space."""
    mutants = make_mutants(count, seed)
    report = Report(total=len(mutants))
    t = time.monotonic()
    ours = _run("jitvm", mutants, workers, timeout, {})
    report.seconds["jitvm"] = round(time.monotonic() - t, 1)
    runs = (run,) if isinstance(run, str) else tuple(run or ())
    accepted = {i for i, o in ours.items() if o[0] == ACCEPTED}
    for name in runs:
        options = {"run": name, "runner_modules": tuple(dict.fromkeys(DEFAULT_RUNNER_MODULES + tuple(runner_modules))),
                   "memory_limit": memory_limit}
        budgets = {"compile": compile_budget, "init": call_budget, "call": call_budget}
        restarts: list = []
        t = time.monotonic()
        outcomes = _run("jitvm", mutants, workers, timeout, options, budgets, restarts, only=accepted)
        rr = report.runs[name] = RunReport(seconds=round(time.monotonic() - t, 1), restarts=restarts[0])
        for i, (status, detail, counts) in sorted(outcomes.items()):
            m = mutants[i]
            rr.statuses[status] += 1
            rr.counts.update({k: v for k, v in counts.items() if k != "digest"})
            if status in (CRASH, HANG, BUG):
                rr.notable.append((status, m.seed, m.changes, detail[-3000:]))
            elif status == SLOW_CALL:
                rr.slow[detail.split(":")[0]] += 1
                if sum(1 for n in rr.notable if n[0] == SLOW_CALL) < 10:
                    rr.notable.append((status, m.seed, m.changes, detail))
            elif status == ACCEPTED and not counts.get("out_of_memory"):
                rr.digests[i] = counts.get("digest")
    if len(runs) > 1:
        first, *others = runs
        for i, digest in sorted(report.runs[first].digests.items()):
            got = {name: report.runs[name].digests.get(i, "not run to the end") for name in others}
            if any(d != digest and d != "not run to the end" for d in got.values()):
                report.disagreements.append((mutants[i].seed, mutants[i].changes, {first: digest, **got}))
    theirs = {}
    if iree:
        t = time.monotonic()
        theirs = _run("iree", mutants, workers, iree_timeout, {})
        report.seconds["iree"] = round(time.monotonic() - t, 1)
    for i, m in enumerate(mutants):
        status, detail, _ = ours[i]
        report.jitvm[status] += 1
        if status == REJECTED:
            report.jitvm_reasons[reason(detail)] += 1
        elif status in (CRASH, HANG, BUG):
            report.notable.append(("jitvm", status, m.seed, m.changes, detail[-2000:]))
        if not iree:
            continue
        their_status, their_detail, _ = theirs[i]
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
    for name, rr in r.runs.items():
        n = sum(rr.statuses.values())
        c = rr.counts
        out += ["", f"run {name!r}: {n} accepted mutants in {rr.seconds} s "
                    f"({1000 * rr.seconds / max(1, n):.0f} ms each on the workers together; {rr.restarts} worker restarts)",
                "  " + ", ".join(f"{s} {rr.statuses[s]}" for s in (ACCEPTED, SLOW_CALL, CRASH, HANG, BUG)),
                f"  calls {c['calls']} (+ {c['dispatches']} dispatches of executables, {c['inits']} inits, "
                f"{c['deinits']} deinits); traps {c['traps']}, other jitvm errors {c['errors']}, "
                f"prepare errors {c['prepare_errors']}, slow calls {c['slow_calls']}, out of memory {c['out_of_memory']}, "
                f"JIT fallbacks {c['fallbacks']}"]
        if rr.slow:
            out += ["  calls past the budget (phase and call):"]
            out += [f"    {k:6}  {text}" for text, k in rr.slow.most_common(top)]
        for status, seed, changes, detail in rr.notable:
            last = detail.strip().splitlines()[-1] if detail.strip() else ""
            out.append(f"  {status} {seed} {changes}: {last}")
    if len(r.runs) > 1:
        out += ["", f"mutants on which the runs' call outcomes differ: {len(r.disagreements)}"]
        out += [f"  {seed} {changes}: {digests}" for seed, changes, digests in r.disagreements[:top]]
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds without an answer = jitvm hang")
    p.add_argument("--iree-timeout", type=float, default=5.0, help="seconds without an answer = IREE hang")
    p.add_argument("--no-iree", action="store_true", help="skip the comparison with IREE's loader")
    p.add_argument("--run", metavar="NAME", action="append", default=[],
                   help="call accepted mutants' exports with runner NAME (jit, interp); repeatable")
    p.add_argument("--runner-module", action="append", default=[],
                   help="another module to import (in the workers) that registers runners in "
                        "jitvm.fuzz.mutation.RUNNERS")
    p.add_argument("--call-budget", type=float, default=2.0, help="seconds per call before SLOW_CALL")
    p.add_argument("--compile-budget", type=float, default=60.0,
                   help="seconds for a backend to prepare a module before it counts as a hang")
    p.add_argument("--memory-limit", type=float, default=6.0, help="GiB of address space per worker")
    p.add_argument("--json", type=Path, help="also write the full report as JSON")
    args = p.parse_args(argv)
    if args.run:
        import importlib

        for name in DEFAULT_RUNNER_MODULES + tuple(args.runner_module):
            importlib.import_module(name)
        missing = [name for name in args.run if name not in RUNNERS]
        if missing:
            print(f"no runner {missing[0]!r} is registered (have: {', '.join(RUNNERS) or 'none'})", file=sys.stderr)
            return 2
    report = run_campaign(args.count, args.seed, args.workers, not args.no_iree, args.timeout, tuple(args.run),
                          tuple(args.runner_module), args.iree_timeout, args.call_budget, args.compile_budget,
                          int(args.memory_limit * (1 << 30)))
    print(format_report(report))
    if args.json:
        args.json.write_text(json.dumps(report.as_json(), indent=1, default=str))
    return 1 if report.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
