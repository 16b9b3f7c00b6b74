"""Benchmarks. They measure optimised code: jitvm.load's tier is "full" here (it waits for the
optimised code on first calls) unless JITVM_TIER says otherwise; bench.start_time chooses
the tier of the processes it starts itself, and lets their tier-ups outlive them, as a
user's processes do (then waits for them)."""

import os

os.environ.setdefault("JITVM_TIER", "full")
# nor do tier-ups outlive a benchmark's processes, to run beside the next one (lower.handoff)
os.environ.setdefault("JITVM_DETACHED_TIER_UP", "0")
