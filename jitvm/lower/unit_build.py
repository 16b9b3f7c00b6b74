"""A module's units lowered and compiled at a tier, into the code store.

What a lazy executable (lower.lazy) does at a first call or a tier-up, and what a detached
tier-up worker (api.tier_worker) does after the process that wanted the code has ended:
both name a unit's code by the same key, so either finds what the other stored. Processes
sharing the store take the store's lock on a key before compiling it and look again once
they hold it, so no unit is compiled twice at once.
"""

from __future__ import annotations

from contextlib import ExitStack

from ..runtime.native import cache as store
from .executable import STATS
from .llvm import cache, compiler
from .steps import LOOP_STEPS


class Unit:
    """Functions calling each other (lower.units), compiled together; `tier` is None until
    compiled, then "baseline", "jammed", "jammed_slp" or "middle" (a kernel's first code, by
    its work: lower.lazy), "full" or "failed" (a tier-up that failed: the quick code stays)."""

    __slots__ = ("index", "ordinals", "tier", "symbols", "hot")

    def __init__(self, index: int, ordinals: list[int]):
        self.index = index
        self.ordinals = ordinals
        self.tier = None
        self.symbols: dict[int, str] = {}
        self.hot = False  # tier up without waiting for calls (its baseline code ran in an earlier process)


class UnitBuilder:
    def __init__(self, verified, digest: str, target, full_options, use_cache: bool, loop_steps: dict | None = None,
                 known_full=None, unprobed_full=None):
        self.verified = verified
        self.digest = digest  # sha256 of the module's FlatBuffer
        self.prefix = "jv_" + digest[:16]  # same module, same entry IR: its code is cached
        self.target = target
        # JitBackend.options, the optimised pipeline: a dict, or a function asked once, when
        # the full tier is first wanted (it probes the vector math: the baseline never waits for it)
        self._full = full_options
        self._known_full = known_full  # the same dict when it costs nothing, else None
        self._unprobed_full = unprobed_full  # the same without vector math (no probe)
        self.loop_steps = {k: v for k, v in (loop_steps or {}).items() if k in LOOP_STEPS}  # steps turned off
        self.use_cache = use_cache
        self._module_loops = None

    @property
    def full_options(self) -> dict:
        if callable(self._full):
            self._full = self._full()
        return self._full

    def known_full(self) -> dict | None:
        """The full tier's options if they cost nothing now (no probe), else None."""
        if callable(self._full) and self._known_full is not None:
            known = self._known_full()
            if known is not None:
                self._full = known
        return None if callable(self._full) else self._full

    def _loops(self, unit: Unit) -> bool:
        return any(compiler.has_loops_in(self.verified.functions[o]) for o in unit.ordinals)

    def options(self, unit: Unit, tier: str) -> dict:
        if tier == "full":
            return self.full_options
        if tier == "middle":
            # the full tier's lowering at 256-bit register blocking (4 x 16, not AVX-512's
            # 4 x 32: a third fewer copies), through O1 with the SLP vectoriser; no vector
            # math, so no wait for its probe (some 0.2 s of a cold first call) and one key
            # whether or not the probe has run
            full = self._unprobed_full() if callable(self._full) and self._unprobed_full else self.full_options
            return {**full, "speed": compiler.MIDDLE, "wide_vectors": False, "vector_math": False,
                    "defer_checked": True}
        if self._loops(unit):
            # guarded nests without checks; libm calls stay plain (no vectoriser at this speed
            # to use vector forms). The baseline has none of the jammed copies; "jammed" has
            # them, a few wide (narrow_jam: enough independent chains for scalar code), for
            # kernels whose first call makes enough accesses to pay for lowering and compiling
            # them: its code runs 4x faster (ResNet-50-style 64's 36 kernels, CPU, lowering +
            # LLVM / a call: 0.59 + 1.30 s / 1.86 s, jammed 0.74 + 1.53 s / 0.43 s).
            # "jammed_slp" takes the narrow jam through O1 with the SLP vectoriser, which packs
            # its copies (still fast instruction selection): about twice the jammed tier's
            # compile time, code about 4x faster (lower.lazy.FIRST_TIERS)
            jammed = tier in ("jammed", "jammed_slp")
            # checked copies compiled only if a guard fails (lower.loops.outline): a fifth of
            # a quick tier's compile time
            quick = {"speed": compiler.BASELINE, "codegen": 0, "defer_checked": True, **self.loop_steps,
                     "jam_loops": jammed, "vector_math": False, "scope_buffers": False}
            if tier == "jammed_slp":
                return {**quick, "narrow_jam": True, "speed": compiler.MIDDLE}
            return {**quick, "narrow_jam": True} if jammed else quick
        return {"speed": 1, "codegen": 0}

    def one_tier(self, unit: Unit) -> bool:
        """Whether both tiers compile `unit` the same way (loop-free code in a loop-free
        module: JitBackend.options compiles such modules quickly whatever the tier)."""
        if self._module_loops is None:
            self._module_loops = compiler.has_loops(self.verified)
        return not self._module_loops

    def key(self, unit: Unit, options: dict) -> str:
        return cache.key(self.digest.encode(), self.target, {**options, "unit": unit.ordinals})

    def lower(self, unit: Unit, options: dict) -> tuple[str, dict]:
        from .module import ModuleLowering  # the lowering (emit, loops): imported only when something compiles

        steps = {k: v for k, v in options.items() if k in LOOP_STEPS}
        lowered = ModuleLowering(self.verified, f"{self.prefix[3:]}u{unit.index}", **steps).lower(unit.ordinals)
        STATS["llvm_functions"] += len(lowered.symbols)
        STATS["blocked_nests"] += lowered.blocked_nests
        meta = {"groups": [{"key": lowered.key, "symbols": {str(o): s for o, s in lowered.symbols.items()}}],
                "fallbacks": [[f.ordinal, f.name, f.op, f.reason] for f in lowered.fallbacks],
                "deferred": [list(d) for d in lowered.deferred]}
        text = str(lowered)
        lowered.ir_module.discard()  # freed now, not at the next full garbage collection
        return text, meta

    def lower_checked(self, ordinal: int, header: int) -> tuple[str, str, str]:
        """(IR text, module key, symbol) of the checked copy of a nest a quick tier deferred
        (lower.deferred)."""
        from .emit.types import function_symbol
        from .module import ModuleLowering

        key = f"{self.prefix[3:]}c{ordinal}h{header}"
        return ModuleLowering(self.verified, key).lower_checked(ordinal, header), key, function_symbol(key, ordinal)

    def build(self, units: list[Unit], tier: str, in_workers: bool = False) -> list[tuple]:
        """Lowers and compiles `units` at `tier` (build_tiers)."""
        return self.build_tiers([(unit, tier) for unit in units], in_workers)

    def build_tiers(self, requests: list[tuple[Unit, str]], in_workers: bool = False, arrived=None) -> list[tuple]:
        """Lowers and compiles each (unit, tier) of `requests`, all on one compile pool in the
        order given (each job with its tier's options: the longest first packs the cores
        best), and stores each in the code store; returns (unit, tier, objects, meta) of each.
        `arrived`, if given, is called with each of those as soon as it is there (a unit the
        store has first), while later ones still compile. With the store, each unit's key is
        locked first (in key order: processes never wait on each other in a circle) and a
        unit another process stored meanwhile is read, not compiled."""
        tell = arrived or (lambda _built: None)
        todo = [(unit, tier, self.options(unit, tier)) for unit, tier in requests]
        keys = [self.key(unit, options) for unit, _tier, options in todo]
        out = []
        with ExitStack() as held:
            rest = list(zip(todo, keys))
            if self.use_cache:
                for k in sorted(set(keys)):
                    held.enter_context(store.lock(k))
                rest = []
                for (unit, tier, options), k in zip(todo, keys):
                    hit = store.load(k)
                    if hit is None:
                        rest.append(((unit, tier, options), k))
                    else:
                        STATS["cache_hits"] += 1
                        out.append((unit, tier, hit[0], hit[1]))
                        tell(out[-1])
            if rest:
                out.extend(self._compile(rest, in_workers, tell))
        return out

    def _compile(self, rest: list[tuple], in_workers: bool, tell) -> list[tuple]:
        metas = []

        def jobs():  # each lowered while the workers compile the previous ones
            for (unit, _tier, options), _key in rest:
                text, unit_meta = self.lower(unit, options)
                metas.append(unit_meta)
                yield text, (options["speed"], options["codegen"], options.get("slp", True))

        out = {}

        def arrived(i: int, obj: bytes) -> None:  # stored, then told, as each object comes
            (unit, tier, _options), key = rest[i]
            if self.use_cache:
                store.store(key, [obj], metas[i])
            out[i] = (unit, tier, [obj], metas[i])
            STATS["compiled_modules"] += 1  # as it comes: a call may end before its batch does
            tell(out[i])

        compiler.build_jobs(jobs(), len(rest), self.target, in_workers, arrived)
        return [out[i] for i in range(len(rest))]
