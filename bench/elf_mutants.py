"""ELF mutant campaign: structural-field mutants of real embedded ELF executables, loaded.

    python bench/elf_mutants.py --count 2000 --seed 2026 [--workers 2] [--json out.json]

The seeds are the llvm-cpu executables iree-compile makes of corpus programs for this host
(cached in bench/.cache/elf-seeds). Each mutant rewrites one or two fields the loader reads
(ELF and program headers, section headers, PT_DYNAMIC entries, relocations, dynamic symbols:
jitvm/fuzz/mutation/elf_fields.py) and is loaded in a worker process by the "elf" check:
read and validated, mapped, relocated, protected and, when its query function is still the
seed's code, queried and its library tables checked. Outcomes: rejected (a jitvm.Error, by
class and message), accepted (loaded and queried, or mapped only when the mutant points the
code elsewhere: machine code is trusted, as IREE trusts it), bug (another exception), crash
(the worker died), hang (no answer within --timeout). The issue's target: 0 crashes, 0
hangs, 0 bugs; the exit status is 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jitvm.fuzz.mutation import BUG, CRASH, HANG, MutantPool  # noqa: E402
from jitvm.fuzz.mutation.elf_fields import mutants, seed_elfs  # noqa: E402

SOURCES = ["matmul", "conv2d", "softmax", "reductions", "elementwise_f32", "quant_matmul_i8", "dynamic_shapes"]
FAILURES = (BUG, CRASH, HANG)


def _reason(detail: str) -> str:
    """A rejection's message with its numbers blanked, to count kinds of reasons."""
    text = detail.split(": ", 2)[-1] if detail.count(": ") >= 2 else detail
    return re.sub(r"0x[0-9a-f]+|\d+", "N", text)[:110]


def campaign(count: int, seed: int, workers: int, timeout: float, seeds_dir: Path) -> dict:
    sources = [ROOT / "tests" / "corpus" / "mlir" / f"{name}.mlir" for name in SOURCES]
    seeds = seed_elfs(sources, seeds_dir)
    made = {key: (data, what) for key, data, what in mutants(seeds, count, seed)}
    outcomes, findings, reasons, accepted = Counter(), [], Counter(), Counter()
    start = time.perf_counter()
    with MutantPool("elf", workers=workers, timeout=timeout, batch=16, options={"seeds": seeds}) as pool:
        for key, (status, detail, _) in pool.run((k, d) for k, (d, _) in made.items()):
            outcomes[status] += 1
            if status in FAILURES:
                findings.append({"key": key, "status": status, "mutation": made[key][1], "detail": detail[-2000:]})
            elif status == "rejected":
                reasons[f"{detail.split(':', 1)[0]}: {_reason(detail)}"] += 1
            else:
                accepted[detail] += 1
        restarts = pool.stats.restarts
    return {"count": count, "seed": seed, "seeds": len(seeds), "seconds": time.perf_counter() - start,
            "outcomes": dict(outcomes), "accepted": dict(accepted), "restarts": restarts,
            "top_reasons": reasons.most_common(25), "findings": findings}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python bench/elf_mutants.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=2000)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=20.0, help="seconds a mutant may take before it is a hang")
    p.add_argument("--seeds-dir", type=Path, default=ROOT / "bench" / ".cache" / "elf-seeds")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    r = campaign(args.count, args.seed, args.workers, args.timeout, args.seeds_dir)
    print(f"{r['count']} mutants of {r['seeds']} embedded ELFs (seed {r['seed']}) in {r['seconds']:.1f} s: " +
          ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items())))
    for detail, n in sorted(r["accepted"].items(), key=lambda kv: -kv[1]):
        print(f"  accepted: {n:5}  {detail}")
    print("most frequent rejections:")
    for reason, n in r["top_reasons"]:
        print(f"  {n:5}  {reason}")
    for f in r["findings"]:
        print(f"\n{f['status'].upper()} mutant {f['key']} ({f['mutation']}):\n{f['detail']}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=1))
    return 1 if r["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
