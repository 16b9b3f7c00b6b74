"""RESULTS.md and speedups.png from a run's results (the dict bench/run.py builds).

Every ratio is a median time of IREE's interpreter (local-sync) divided by the median
time of the configuration, both from the same run, so machine noise between runs cancels.
"""

from __future__ import annotations

import statistics
from pathlib import Path

REFERENCE = "interp-sync"
VMVX_JITS = ("jit-1", "jit-all")  # jitvm JIT-compiling the VMVX module
LLVM_PAIRS = (("jit-llvm-1", "llvm-sync"), ("jit-llvm-all", "llvm-cpu"))  # (jitvm, IREE) on the llvm-cpu module
TARGET_SPEEDUP = 25.0  # issue 6: JIT one thread >= 25x IREE's interpreter


def median_s(entry: dict) -> float:
    return statistics.median(entry["per_call_s"])


def speedup(model: dict, key: str) -> float | None:
    ref, cfg = model["configs"].get(REFERENCE), model["configs"].get(key)
    if not ref or not cfg or "per_call_s" not in cfg or "per_call_s" not in ref:
        return None
    return median_s(ref) / median_s(cfg)


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.3g} ms" if ms < 100 else f"{ms:,.0f} ms"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
            *("| " + " | ".join(r) + " |" for r in rows)]


def _time_cell(model: dict, key: str) -> str:
    cfg = model["configs"].get(key)
    if not cfg:
        return "-"
    if "error" in cfg:
        return "FAILED"
    text = _ms(median_s(cfg))
    if key != REFERENCE:
        text += f" **{speedup(model, key):.1f}x**"
    if not cfg.get("ok", True):
        text += " MISMATCH"
    return text


def _gap(model: dict) -> str:
    native = model["configs"].get("llvm-cpu", {})
    jits = [median_s(c) for k, c in model["configs"].items() if k in VMVX_JITS and "per_call_s" in c]
    if not jits or "per_call_s" not in native:
        return "-"
    return f"{min(jits) / median_s(native):.1f}x"


def _host_gap(model: dict) -> str:
    """jitvm running the llvm-cpu module over IREE running it: one thread over local-sync, all
    threads over local-task (the same kernels: what differs is host code and dispatch)."""
    cells = []
    for ours, theirs in LLVM_PAIRS:
        a, b = model["configs"].get(ours, {}), model["configs"].get(theirs, {})
        cells.append(f"{median_s(a) / median_s(b):.2f}" if "per_call_s" in a and "per_call_s" in b else "-")
    return " / ".join(cells)


def _samples(cfg: dict) -> str:
    if "per_call_s" not in cfg:
        return "-"
    text = f"{len(cfg['per_call_s'])} x {cfg['iterations']}"
    if cfg.get("cpu_per_call_s"):
        busy = statistics.median(c / r for c, r in zip(cfg["cpu_per_call_s"], cfg["per_call_s"]) if r > 0)
        text += f", {busy:.2f} cores"
    return text


def markdown(results: dict) -> str:
    columns = results["columns"]
    out = ["# jitvm benchmark results", "",
           "Median time per call (warm-up excluded) and, in bold, speed-up over IREE's VMVX interpreter "
           "(local-sync) measured in the same run. Each configuration ran in its own process.", "",
           "```", results["command"], "```", ""]
    out += _table(["model", "GFLOP"] + [c["label"] for c in columns] + ["JIT / llvm-cpu", "jitvm llvm-cpu / IREE"],
                  [[m["name"], f"{m['flops'] / 1e9:.3g}"] + [_time_cell(m, c["key"]) for c in columns] +
                   [_gap(m), _host_gap(m)] for m in results["models"]])
    out += ["", "JIT / llvm-cpu: the faster JIT column's time over IREE llvm-cpu's: how far the JIT is from "
            "native code compiled from the same model. jitvm llvm-cpu / IREE: the llvm-cpu module under jitvm "
            "over the same module under iree.runtime, one thread over local-sync / all threads over local-task "
            "(the same kernels; below 1: jitvm is faster)."]
    out += ["", "## Output checks against IREE's interpreter (local-sync)", "",
            "Bit-exact expected from interpreters of the same bytecode except where a model calls "
            "transcendental functions (softmax: `exp`); llvm-cpu is another compiler, so a relative "
            "difference (max |diff| / max |reference|) is reported.", ""]
    others = [c for c in columns if c["key"] != REFERENCE]
    out += _table(["model"] + [c["label"] for c in others],
                  [[m["name"]] + [m["configs"].get(c["key"], {}).get("check", "-") for c in others]
                   for m in results["models"]])
    out += ["", "## jitvm load times", "",
            "Cold: a fresh process with an empty JITVM_CACHE_DIR (every function compiled). Cached: a fresh "
            "process reusing that cache. First call: the first call after the cached load.", ""]
    rows = []
    for m in results["models"]:
        load = m.get("jit_load", {})
        stats = load.get("stats", {})
        rows.append([m["name"], f"{load['cold_s']:.2f} s" if "cold_s" in load else "-",
                     f"{load['warm_s']:.3f} s" if "warm_s" in load else "-",
                     _ms(load["first_call_s"]) if "first_call_s" in load else "-",
                     str(stats.get("llvm_functions", "-")), str(stats.get("fallback_functions", 0))])
    out += _table(["model", "cold load", "cached load", "first call", "functions compiled",
                   "functions interpreted (fallback)"], rows)
    out += ["", "## Peak resident memory", "", "Each configuration's process high-water RSS (VmHWM) after "
            "loading, calling and timing the model; the inputs and outputs held by the runner are in every column.", ""]
    out += _table(["model"] + [c["label"] for c in columns],
                  [[m["name"]] + [f"{cfg['peak_rss_bytes'] / 1e6:.0f} MB" if "peak_rss_bytes" in cfg else "-"
                                  for cfg in (m["configs"].get(c["key"], {}) for c in columns)]
                   for m in results["models"]])
    out += ["", "## Samples", "", "Repetitions x calls per repetition behind each median, and the cores kept busy "
            "on average (process CPU time / wall time, median): a multi-threaded configuration near 1.0 did not "
            "run in parallel, whether for lack of work to split or of an idle core (see parallel capacity below).",
            ""]
    out += _table(["model"] + [c["label"] for c in columns],
                  [[m["name"]] + [_samples(cfg) for cfg in (m["configs"].get(c["key"], {}) for c in columns)]
                   for m in results["models"]])
    errors = [(m["name"], c["label"], m["configs"][c["key"]]["error"]) for m in results["models"]
              for c in columns if "error" in m["configs"].get(c["key"], {})]
    if errors:
        out += ["", "## Failures", ""] + [f"- {n}, {label}: `{e}`" for n, label, e in errors]
    out += ["", "## Machine", ""] + [f"- {k}: {v}" for k, v in results["facts"].items()]
    out += [f"- {note}" for note in results.get("notes", [])]
    return "\n".join(out) + "\n"


def chart(results: dict, path: Path) -> bool:
    """A grouped bar chart of speed-ups (log scale); False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    columns = [c for c in results["columns"] if c["key"] != REFERENCE]
    models = results["models"]
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(models) + 3), 5.5))
    width = 0.8 / len(columns)
    for i, c in enumerate(columns):
        values = [speedup(m, c["key"]) or 0 for m in models]
        xs = [j + (i - (len(columns) - 1) / 2) * width for j in range(len(models))]
        bars = ax.bar(xs, values, width, label=c["label"])
        for x, v, bar in zip(xs, values, bars):
            if v:
                ax.text(x, v * 1.05, f"{v:.0f}" if v >= 10 else f"{v:.1f}", ha="center", va="bottom", fontsize=6)
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(TARGET_SPEEDUP, color="grey", linestyle="--", linewidth=0.8, label=f"{TARGET_SPEEDUP:.0f}x target")
    ax.set_xticks(range(len(models)), [m["name"] for m in models], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("speed-up over IREE interpreter (local-sync), log scale")
    ax.set_title("jitvm vs IREE: median time per call, ratios within one run")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: bars reach the top
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    """Re-renders RESULTS.md and speedups.png from a results.json (e.g. after a report change)."""
    import argparse
    import json

    p = argparse.ArgumentParser(prog="python -m bench.report", description=main.__doc__)
    p.add_argument("results", type=Path, help="a results.json written by bench.run")
    args = p.parse_args(argv)
    results = json.loads(args.results.read_text())
    (args.results.parent / "RESULTS.md").write_text(markdown(results))
    chart(results, args.results.parent / "speedups.png")
    print(f"wrote {args.results.parent / 'RESULTS.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
