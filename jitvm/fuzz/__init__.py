"""Differential fuzzing of the JIT against the reference interpreter.

Generators of valid VM programs (tests/test_fuzz_backends.py runs them under hypothesis;
`python -m tests.fuzz.campaign` runs long seeded campaigns):

- values.py   edge values (bit patterns) for constants and call arguments
- ops.py      the ISA table grouped for the generators (no opcode lists of its own)
- emit.py     choices (hypothesis- or seed-driven), registers, live values, module text
- scalar.py   any register-to-register op, emitted generically from its ISA fields
- control.py  branches with remap lists, br_table, loops, calls, recursion, fail
- memory.py   buffers, lists, globals, ref ops; the module-state observer
- kernel.py   VMVX-shaped loop nests over aliasing buffers, arguments at the guard's edges
- program.py  whole modules of each kind
- run.py      assembling, running under both backends, comparing (the NaN rule is there)
- campaign.py long seeded campaigns outside pytest
"""
