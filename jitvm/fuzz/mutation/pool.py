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
- `RUNNERS` runs accepted mutants: name -> runner(verified_module, data) -> counts (a dict
  such as {"calls": 7, "traps": 3}). tests/mutant_runners.py registers "interp" and "jit",
  which call every export under that backend; a runner may return or raise jitvm.Error.
- Phases and budgets: a worker says what it is doing (`phase("compile")`, `phase("call",
  "f zeros")`, ...) so a timeout is charged to the right place. No answer within the budget
  of "load" (decode + verify) or "compile" (backend preparation) is a HANG, a jitvm bug; a
  call (or `__init`) past its budget is SLOW_CALL, which mutants may legitimately cause (a
  mutated loop bound), and is counted apart. A crash in any phase is a CRASH.

Every outcome is (status, detail, counts).
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
SLOW_CALL = "slow_call"  # accepted; one of its calls ran past the call budget (and was stopped)

# Phases a worker reports; a timeout in one of SLOW_PHASES is SLOW_CALL, elsewhere a HANG.
PHASES = ("load", "compile", "init", "call")
SLOW_PHASES = ("init", "call")

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
"""name -> runner(verified_module, data) -> counts: calls the module's exports; returns or
raises jitvm.Error"""

_phase_sink: Callable | None = None  # set in a worker for the mutant it is on


def phase(name: str, what: str = "", counts: dict | None = None) -> None:
    """Tells the parent what this worker is doing now (a no-op outside a pool worker).

    `name` is one of PHASES; `what` names the thing (an export and its argument set);
    `counts` so far are kept by the parent in case the worker never answers again.
    """
    if _phase_sink is not None:
        _phase_sink(name, what, counts)


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
        counts: dict = {}
        try:
            counts = RUNNERS[runner](verified, data) or {}
        except jitvm.Error as e:
            return ACCEPTED, f"ran; raised {type(e).__name__}: {e}", {"runner_errors": 1}
        except Exception:  # noqa: BLE001
            return BUG, traceback.format_exc(), counts
        return ACCEPTED, "ran", counts
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
    if data == b"slow":
        phase("call", "selftest", {"calls": 1})
        time.sleep(3600)
    return ACCEPTED, data.decode(errors="replace")


CHECKS: dict[str, Callable[[bytes, dict], tuple[str, str]]] = {
    "jitvm": _check_jitvm, "iree": _check_iree, "selftest": _check_selftest}


# --- the pool -----------------------------------------------------------------------------

def _worker(conn, check: str, options: dict) -> None:
    global _phase_sink
    fn = CHECKS[check]
    if options.get("memory_limit"):  # a mutant may legitimately ask for a huge buffer
        import resource

        limit = int(options["memory_limit"])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
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
            _phase_sink = lambda name, what, counts, key=key: conn.send(  # noqa: E731
                ("phase", key, name, what, dict(counts or {})))
            status, detail, *rest = fn(data, options)
            _phase_sink = None
            conn.send(("done", key, (status, detail, dict(rest[0]) if rest else {})))


class _Worker:
    def __init__(self, ctx, check: str, options: dict):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(child, check, options), daemon=True)
        self.process.start()
        child.close()
        self.pending: deque = deque()  # (key, data) sent, not yet answered, in order
        self.last = time.monotonic()
        self.at_start()

    def at_start(self) -> None:
        """The state at the start of a mutant: loading it, nothing counted."""
        self.phase, self.what, self.counts = "load", "", {}

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
    """Runs `check` on mutants in `workers` child processes; yields (key, (status, detail, counts)).

    `timeout` is the budget of the "load" phase (and of any phase without its own budget);
    `budgets` maps other phases to seconds, e.g. {"compile": 60, "init": 2, "call": 2}.
    """

    def __init__(self, check: str, workers: int = 2, timeout: float = 10.0, batch: int = 16,
                 options: dict | None = None, budgets: dict | None = None):
        methods = multiprocessing.get_all_start_methods()
        self.ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.check = check
        self.size = max(1, workers)
        self.timeout = timeout
        self.budgets = dict(budgets or {})
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

    def budget(self, phase_name: str) -> float:
        return self.budgets.get(phase_name, self.timeout)

    def run(self, items: Iterable[tuple[object, bytes]]) -> Iterator[tuple[object, tuple[str, str, dict]]]:
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
                        kind, key, *message = w.conn.recv()
                    except (EOFError, OSError):
                        yield self._replace(i, CRASH)
                        continue
                    w.last = now
                    if kind == "phase":
                        w.phase, w.what, w.counts = message
                        continue
                    w.pending.popleft()
                    w.at_start()
                    yield key, message[0]
                elif now - w.last > self.budget(w.phase):
                    yield self._replace(i, SLOW_CALL if w.phase in SLOW_PHASES else HANG)

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
        where = f"{old.phase} {old.what}".strip()
        if status == CRASH:
            detail = f"worker exit code {exitcode}"
            if exitcode is not None and exitcode < 0:
                detail = f"killed by signal {signal.Signals(-exitcode).name}"
            detail += f" during {where}"
        else:
            detail = f"{where}: no answer in {self.budget(old.phase):g} s"
        counts = dict(old.counts)
        if status == SLOW_CALL:
            counts["slow_calls"] = counts.get("slow_calls", 0) + 1
        return key, (status, detail, counts)
