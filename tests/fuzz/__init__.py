"""Differential fuzzing of the JIT against the reference interpreter (see program.py, run.py)."""
