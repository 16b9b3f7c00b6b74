"""Fuzzing and differential testing as infrastructure: programs that are valid by
construction, the oracles that judge them, the corpus they start from and the mutants made
of it. Tests and bench both use it; nothing else in jitvm imports it.

- generators/  valid VM programs of each kind (seed- or hypothesis-driven)
- oracles/     what a call should return: the reference interpreter against the JIT
               (differential.py), IREE's own runtime (iree.py)
- corpus/      MLIR and VM-assembly programs of a directory the caller names, compiled into
               a content-keyed cache, with their calls and deterministic inputs
- mutation/    byte mutants of real modules in worker processes (crashes and hangs counted),
               and runners that call what verifies under each backend
- campaign.py  long seeded campaigns outside pytest: `python -m jitvm.fuzz.campaign --help`
"""
