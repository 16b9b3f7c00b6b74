"""Byte mutants of real modules, run in child processes so a crash or a hang is a number.

Used by the verifier's property test and by `bench/mutant_campaign.py`:

- `Seed` is a module file plus the regions worth mutating (its bytecode, its function
  descriptors, the whole file); `mutate` changes 1-3 bytes, biased to the first two.
- `MutantPool` feeds batches of mutants to worker processes. Each worker reports one outcome
  per mutant as it goes, so when a worker dies (SIGSEGV) or stops answering (a hang) the
  mutant it was on is known: it is recorded as "crash" or "hang", the worker is replaced and
  the rest of its batch is resent.
- `CHECKS` are what a worker does with a mutant: "jitvm" (load_module + verify_module, then
  render every verified instruction) or "iree" (IREE's loader, `VmModule.copy_buffer`).
- `RUNNERS` is the hook for running accepted mutants: once the interpreter / JIT exist, they
  register a function here (name -> runner(verified_module)) and `--run NAME` calls every
  accepted mutant's exports through it; a runner may return or raise jitvm.Error.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable, Iterable, Iterator

ACCEPTED, REJECTED, BUG, CRASH, HANG = "accepted", "rejected", "bug", "crash", "hang"

# Where mutations land: most in the bytecode and the function descriptors, where the
# verifier's rules live; the rest anywhere in the file (tables, envelope, rodata).
REGION_WEIGHTS = (("bytecode", 50), ("descriptors", 30), ("file", 20))


@dataclass(frozen=True)
class Seed:
    name: str
    data: bytes
    regions: dict = field(hash=False, compare=False)  # region name -> (start, length)


def seed_from_file(path, name: str | None = None) -> Seed:
    from jitvm.frontend.module import load_module
    from tests.verify_support import descriptor_table_offset

    data = Path(path).read_bytes()
    m = load_module(data, str(path))
    regions = {"file": (0, len(data)),
               "bytecode": (m.bytecode_file_offset, len(m.bytecode)),
               "descriptors": (descriptor_table_offset(m), 20 * len(m.functions))}
    return Seed(name or str(path), data, {k: v for k, v in regions.items() if v[1] > 0})


_BYTE_CHANGES = (
    lambda old, rng: rng.randrange(256),
    lambda old, rng: old ^ (1 << rng.randrange(8)),
    lambda old, rng: (old + rng.choice((1, -1))) & 0xFF,
    lambda old, rng: rng.choice((0x00, 0xFF, 0x7F, 0x80)),
)


def mutate(seed: Seed, rng: random.Random) -> tuple[bytes, tuple[tuple[int, int, int], ...]]:
    """1-3 changed bytes; returns the mutant and its (offset, old, new) changes."""
    data = bytearray(seed.data)
    names = [n for n, _ in REGION_WEIGHTS if n in seed.regions]
    weights = [w for n, w in REGION_WEIGHTS if n in seed.regions]
    changes = []
    for _ in range(rng.randint(1, 3)):
        start, length = seed.regions[rng.choices(names, weights)[0]]
        at = start + rng.randrange(length)
        old = data[at]
        new = old
        while new == old:
            new = rng.choice(_BYTE_CHANGES)(old, rng)
        data[at] = new
        changes.append((at, old, new))
    return bytes(data), tuple(changes)


# --- what a worker does with one mutant ---------------------------------------------------

RUNNERS: dict[str, Callable] = {}
"""name -> runner(verified_module): calls the module's exports; returns or raises jitvm.Error"""


def _check_jitvm(data: bytes, options: dict) -> tuple[str, str]:
    import jitvm
    from jitvm.frontend.disasm import Names, Renderer
    from jitvm.frontend.module import load_module
    from jitvm.verify import verify_module

    try:
        verified = verify_module(load_module(data))
        for f in verified.functions:  # the disassembler must cope with whatever verifies
            r = Renderer(Names.of(verified.module), dict(f.block_of_pc))
            for ins in f.instructions:
                r.instruction(ins)
    except jitvm.Error as e:
        return REJECTED, f"{type(e).__name__}: {e}"
    except Exception:  # noqa: BLE001 - the finding: anything but jitvm.Error is a bug
        return BUG, traceback.format_exc()
    runner = options.get("run")
    if runner:
        try:
            RUNNERS[runner](verified)
        except jitvm.Error as e:
            return ACCEPTED, f"ran; raised {type(e).__name__}: {e}"
        except Exception:  # noqa: BLE001
            return BUG, traceback.format_exc()
        return ACCEPTED, "ran"
    return ACCEPTED, ""


_iree_instance = None


def _check_iree(data: bytes, options: dict) -> tuple[str, str]:
    global _iree_instance
    import iree.runtime as rt

    if _iree_instance is None:
        _iree_instance = rt.VmInstance()
    try:
        rt.VmModule.copy_buffer(_iree_instance, data)
    except Exception as e:  # noqa: BLE001 - IREE reports every load failure as some exception
        if "Error creating vm module" in str(e):
            return REJECTED, f"{type(e).__name__}: {e}"
        # The C loader took the module; the Python binding then failed on it (a name that
        # is not UTF-8): for agreement purposes IREE accepted it.
        return ACCEPTED, f"loaded; the binding then raised {type(e).__name__}: {e}"
    return ACCEPTED, ""


def _check_selftest(data: bytes, options: dict) -> tuple[str, str]:
    """Proves the pool's bookkeeping: b"crash" kills the worker, b"hang" never answers."""
    if data == b"crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if data == b"hang":
        time.sleep(3600)
    return ACCEPTED, data.decode(errors="replace")


CHECKS: dict[str, Callable[[bytes, dict], tuple[str, str]]] = {
    "jitvm": _check_jitvm, "iree": _check_iree, "selftest": _check_selftest}


# --- the pool -----------------------------------------------------------------------------

def _worker(conn, check: str, options: dict) -> None:
    fn = CHECKS[check]
    if options.get("run"):
        import importlib

        for module in options.get("runner_modules", ()):
            importlib.import_module(module)  # modules that register RUNNERS
    while True:
        try:
            batch = conn.recv()
        except EOFError:
            return
        if batch is None:
            return
        for key, data in batch:
            conn.send((key, fn(data, options)))


class _Worker:
    def __init__(self, ctx, check: str, options: dict):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(child, check, options), daemon=True)
        self.process.start()
        child.close()
        self.pending: deque = deque()  # (key, data) sent, not yet answered, in order
        self.last = time.monotonic()

    def send(self, batch) -> None:
        self.pending.extend(batch)
        self.conn.send(batch)
        self.last = time.monotonic()

    def kill(self) -> int | None:
        if self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(5)
        self.conn.close()
        return self.process.exitcode


@dataclass
class PoolStats:
    restarts: int = 0


class MutantPool:
    """Runs `check` on mutants in `workers` child processes; yields (key, (status, detail))."""

    def __init__(self, check: str, workers: int = 2, timeout: float = 10.0, batch: int = 16,
                 options: dict | None = None):
        methods = multiprocessing.get_all_start_methods()
        self.ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.check = check
        self.size = max(1, workers)
        self.timeout = timeout
        self.batch = batch
        self.options = dict(options or {})
        self.workers: list[_Worker] = []
        self.stats = PoolStats()

    def __enter__(self) -> "MutantPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for w in self.workers:
            try:
                w.conn.send(None)
            except (OSError, ValueError):
                pass
            w.kill()
        self.workers = []

    def _spawn(self) -> _Worker:
        return _Worker(self.ctx, self.check, self.options)

    def run(self, items: Iterable[tuple[object, bytes]]) -> Iterator[tuple[object, tuple[str, str]]]:
        todo: deque = deque(items)
        while len(self.workers) < self.size:
            self.workers.append(self._spawn())
        while todo or any(w.pending for w in self.workers):
            for w in self.workers:
                if not w.pending and todo:
                    w.send([todo.popleft() for _ in range(min(self.batch, len(todo)))])
            busy = [w for w in self.workers if w.pending]
            ready = wait([w.conn for w in busy], timeout=0.25)
            now = time.monotonic()
            for i, w in enumerate(list(self.workers)):
                if not w.pending:
                    continue
                if w.conn in ready:
                    try:
                        key, outcome = w.conn.recv()
                    except (EOFError, OSError):
                        yield self._replace(i, CRASH)
                        continue
                    w.pending.popleft()
                    w.last = now
                    yield key, outcome
                elif now - w.last > self.timeout:
                    yield self._replace(i, HANG)

    def _replace(self, i: int, status: str):
        """The worker's current mutant is the culprit; restart it with the rest of its batch."""
        old = self.workers[i]
        exitcode = old.kill()
        key, _ = old.pending.popleft()
        rest = list(old.pending)
        self.stats.restarts += 1
        new = self.workers[i] = self._spawn()
        if rest:
            new.send(rest)
        detail = f"worker exit code {exitcode}" if status == CRASH else f"no answer in {self.timeout:g} s"
        if exitcode is not None and exitcode < 0:
            detail = f"killed by signal {signal.Signals(-exitcode).name}" if status == CRASH else detail
        return key, (status, detail)
