"""Benchmarks. They measure optimised code: jitvm.load's tier is "full" here (it waits for the
optimised code on first calls) unless JITVM_TIER says otherwise; bench.start_time chooses
the tier of the processes it starts itself."""

import os

os.environ.setdefault("JITVM_TIER", "full")
