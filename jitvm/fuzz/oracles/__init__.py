"""Differential oracles: what a program should do, told by another implementation.

- calls.py         raw calls, their outcomes, and how two outcomes compare
- differential.py  a generated program under the JIT and the reference interpreter
- iree.py          corpus modules under IREE's own runtime (iree.runtime, "local-sync")
- iree_check.py    the check module IREE's Python package lacks
"""
