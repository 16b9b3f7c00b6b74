"""A detached tier-up: `python -m jitvm.api.tier_worker JOB` (started by lower.handoff).

It lives above the JIT because verifying a module needs the native modules' types
(runtime.modules), which the JIT's own stage may not import.

Reads the job a process wrote as it ended, and compiles the optimised build of the
runtime code and the full tier of each unit it names into the code store, one unit at a time in this process, at low priority: each key
locked, looked up again, compiled only when nobody stored it meanwhile (unit_build). A
module whose bytes changed since (another file at that path) is left alone. Removes the
job when done; its lock ends with this process.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path


def tier_up(module: dict, target) -> int:
    """Compiles the full tier of `module`'s units; how many were compiled here."""
    from ..frontend.module import load_module
    from ..runtime.modules import register_hal_types
    from ..verify import verify_module
    from ..lower.executable import STATS
    from ..lower.unit_build import Unit, UnitBuilder
    from ..lower.units import call_components

    register_hal_types()
    bytecode = load_module(module["source"])
    digest = hashlib.sha256(bytecode.archive.flatbuffer).hexdigest()
    if digest != module["digest"]:
        return 0
    verified = verify_module(bytecode)
    builder = UnitBuilder(verified, digest, target, module["options"], use_cache=True)
    units = {tuple(c): Unit(i, c) for i, c in enumerate(call_components(verified))}
    before = STATS["compiled_modules"]
    for ordinals in module["units"]:
        unit = units.get(tuple(ordinals))
        if unit is not None:
            builder.build([unit], "full")
    return STATS["compiled_modules"] - before


def optimise_runtime(code: dict, target) -> bool:
    """Compiles runtime IR (file `ir`) at `opt` into the store, unless someone did; whether
    this worker did."""
    from ..runtime.native import cache as store, engine

    ir = Path(code["ir"]).read_text()
    key = engine.runtime_key(ir, target, code["opt"])
    with store.lock(key):
        if store.load(key) is not None:
            return False
        store.store(key, [engine.compile_object(ir, target, code["opt"])], {"what": "runtime code"})
    return True


def main(argv: list[str]) -> int:
    from ..runtime.native.target import Target
    from ..lower.handoff import NICE, remove_job

    job_path = Path(argv[0])
    try:
        os.nice(NICE)
    except OSError:
        pass

    try:
        job = json.loads(job_path.read_text())
        target = Target(*job["target"])
        for code in job.get("runtime", ()):  # first: every process's calls go through it
            try:
                optimise_runtime(code, target)
            except Exception:  # noqa: BLE001 - a later process compiles it instead
                continue
        for module in job["modules"]:
            try:
                tier_up(module, target)
            except Exception:  # noqa: BLE001 - a later process compiles it instead
                continue
    except (OSError, ValueError, KeyError, TypeError):
        pass
    finally:
        remove_job(job_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
