"""A module with GiBs of packed 4-bit rodata: how fast it is written, opened and read.

    python bench/big_rodata.py [--gib 2] [--path /tmp/big_rodata.vmfb] [--keep] [--repeat 5]

Builds (unless the file exists) a module whose rodata[0] holds `gib` GiB of 4-bit values
(2^31 bytes = 2^32 elements at the default) from a broadcast view, so the input costs no
memory and the writer streams it in packed chunks. Then, each in a fresh process:
`jitvm.frontend.load_module` (the target: <= 0.5 s, RSS growth < 64 MiB) and `jitvm.load`
(verify + instantiate), timed with the RSS they add; and a function reading bytes at
the start, at 2^30 and at the very end of the segment, under iree.runtime and under jitvm.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

PATTERN = (np.arange(16) - 8).astype(np.int8)  # element i is PATTERN[i % 16]

READER = """
vm.export @byte_at
vm.func @byte_at(%i0:1 : i64) -> (i32) {
^bb0:
  %r0 = vm.const.ref.rodata 0
  %i2 = vm.buffer.load.i8.u %r0, %i0:1
  vm.return %i2
}

vm.export @length
vm.func @length() -> (i64) {
^bb0:
  %r0 = vm.const.ref.rodata 0
  %i0:1 = vm.buffer.length %r0
  vm.return %i0:1
}
"""


def segment_bytes(gib: float) -> int:
    return int(gib * (1 << 30))


def expected_byte(offset: int) -> int:
    """Byte `offset` of the packed pattern: elements 2*offset (low nibble) and 2*offset+1."""
    lo = int(PATTERN[(2 * offset) % 16]) & 15
    hi = int(PATTERN[(2 * offset + 1) % 16]) & 15
    return lo | hi << 4


def build(path: Path, gib: float) -> float:
    """Writes the module; returns the seconds it took."""
    from jitvm.frontend.asm import ModuleBuilder, add_functions

    elements = 2 * segment_bytes(gib)
    values = np.broadcast_to(PATTERN, (elements // 16, 16))  # no memory: stride 0 rows
    start = time.perf_counter()
    b = ModuleBuilder("big")
    b.add_rodata(values, bits=4)
    add_functions(b, READER)
    b.write(path)
    return time.perf_counter() - start


_PROBE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
import numpy, jitvm, jitvm.frontend, jitvm.api  # imports are not part of the measurement
from jitvm.frontend import load_module
path, what = sys.argv[2], sys.argv[3]
before = rss()
start = time.perf_counter()
if what == "load_module":
    m = load_module(path)
    seg = m.rodata[0]
    info = [seg.external, seg.length, seg.offset]
else:
    m = jitvm.load(path, "jit")
    info = [m.exports]
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "rss_growth": rss() - before, "info": info}))
"""


def probe(path: Path, what: str) -> dict:
    root = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run([sys.executable, "-c", _PROBE, root, str(path), what],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"probe {what} failed ({out.returncode}):\n{out.stderr.strip()[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_open(path: Path, what: str, repeat: int) -> dict:
    runs = [probe(path, what) for _ in range(repeat)]
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "rss_growth": max(r["rss_growth"] for r in runs), "info": runs[0]["info"]}


def offsets(gib: float) -> list[int]:
    n = segment_bytes(gib)
    return [0, 1, min(1 << 30, n - 1), n - 2, n - 1]


def read_with_iree(path: Path, gib: float) -> tuple[int, list[int]]:
    import iree.runtime as rt

    instance = rt.VmInstance()
    module = rt.VmModule.mmap(instance, str(path))
    context = rt.VmContext(instance, [module])

    def call(name, *args):
        arguments = rt.VmVariantList(len(args))
        for a in args:
            arguments.push_int(a)
        results = rt.VmVariantList(1)
        context.invoke(module.lookup_function(name), arguments, results)
        return results.get_variant(0)
    return call("length"), [call("byte_at", o) for o in offsets(gib)]


def read_with_jitvm(path: Path, gib: float, backend: str = "jit") -> tuple[int, list[int]]:
    import jitvm

    module = jitvm.load(str(path), backend)
    return module.length(), [module.byte_at(o) for o in offsets(gib)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gib", type=float, default=2.0)
    p.add_argument("--path", default="/tmp/big_rodata.vmfb")
    p.add_argument("--keep", action="store_true", help="keep the file afterwards")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    path = Path(args.path)
    try:
        if not path.exists() or path.stat().st_size < segment_bytes(args.gib):
            print(f"writing {path} ({args.gib} GiB of packed 4-bit rodata) ...", flush=True)
            print(f"  written in {build(path, args.gib):.2f} s, file size {path.stat().st_size} bytes")
        for what in ("load_module", "jitvm.load"):
            r = measure_open(path, what, args.repeat)
            print(f"{what:12}: {r['seconds'] * 1000:8.2f} ms (median of {args.repeat}), "
                  f"RSS growth {r['rss_growth'] / 2**20:7.2f} MiB (max)   {r['info']}")
        want = [expected_byte(o) for o in offsets(args.gib)]
        readers = (("iree.runtime", read_with_iree), ("jitvm jit", read_with_jitvm),
                   ("jitvm interp", lambda p, g: read_with_jitvm(p, g, "interp")))
        for name, reader in readers:
            length, got = reader(path, args.gib)
            ok = length == segment_bytes(args.gib) and got == want
            print(f"{name:12}: length {length}, bytes at {offsets(args.gib)} = {got} "
                  f"({'ok' if ok else f'WRONG, want {want}'})")
    finally:
        if not args.keep and path.exists():
            os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
