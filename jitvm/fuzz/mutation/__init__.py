"""Byte mutants of real modules, run in child processes so a crash or a hang is a number.

Used by the verifier's property test and by `bench/mutant_campaign.py`:

- `Seed` is a module file plus the regions worth mutating (its bytecode, its function
  descriptors, the whole file) and the embedded native code it leaves alone (machine code
  runs as given); `mutate` changes 1-3 bytes, biased to the first two (mutate.py).
- `MutantPool` feeds batches of mutants to worker processes. Each worker reports one outcome
  per mutant as it goes, so when a worker dies (SIGSEGV) or stops answering (a hang) the
  mutant it was on is known: it is recorded as "crash" or "hang", the worker is replaced and
  the rest of its batch is resent (pool.py).
- `CHECKS` are what a worker does with a mutant: "jitvm" (load_module + verify_module, then
  render every verified instruction) or "iree" (IREE's loader, `VmModule.copy_buffer`)
  (checks.py).
- `RUNNERS` runs accepted mutants: name -> runner(verified_module, data) -> counts (a dict
  such as {"calls": 7, "traps": 3}). runners.py registers "interp" and "jit", which call
  every export under that backend; a runner may return or raise jitvm.Error.
- Phases and budgets: a worker says what it is doing (`phase("compile")`, `phase("call",
  "f zeros")`, ...) so a timeout is charged to the right place. No answer within the budget
  of "load" (decode + verify) or "compile" (backend preparation) is a HANG, a jitvm bug; a
  call (or `__init`) past its budget is SLOW_CALL, which mutants may legitimately cause (a
  mutated loop bound), and is counted apart. A crash in any phase is a CRASH (protocol.py).

Every outcome is (status, detail, counts).
"""

from __future__ import annotations

from .checks import CHECKS, RUNNERS
from .mutate import REGION_WEIGHTS, Seed, descriptor_table_offset, mutate, seed_from_file
from .pool import MutantPool, PoolStats
from .protocol import ACCEPTED, BUG, CRASH, HANG, PHASES, REJECTED, SLOW_CALL, SLOW_PHASES, phase

#: The module that registers the "interp" and "jit" runners (imported in the workers).
RUNNER_MODULE = "jitvm.fuzz.mutation.runners"

__all__ = ["ACCEPTED", "BUG", "CHECKS", "CRASH", "HANG", "PHASES", "REGION_WEIGHTS", "REJECTED", "RUNNERS",
           "RUNNER_MODULE", "SLOW_CALL", "SLOW_PHASES", "MutantPool", "PoolStats", "Seed", "descriptor_table_offset",
           "mutate", "phase", "seed_from_file"]
