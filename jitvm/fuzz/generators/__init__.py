"""Generators of valid VM programs: every module they write verifies, so a difference between
the backends running it is a finding, never a bad input.

- values.py      edge values (bit patterns) for constants and call arguments
- ops.py         the ISA table grouped for the generators (no opcode lists of its own)
- emit.py        choices (seed-driven), registers, live values, module text
- scalar.py      any register-to-register op, emitted generically from its ISA fields
- control.py     branches with remap lists, br_table, loops, calls, recursion, fail
- memory.py      buffers, lists, globals, ref ops; the module-state observer
- kernel.py      VMVX-shaped loop nests over aliasing buffers, arguments at the guard's edges
- program.py     whole modules of each kind
- strategies.py  the same under hypothesis (choices drawn, programs shrink)
"""
