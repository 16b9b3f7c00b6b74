"""`verify_module`: a BytecodeModule becomes a VerifiedModule, or a VerifyError says why not.

Module rules first (features, types, tables, descriptors), then every function in ordinal
order; the first broken rule is reported. Time is linear in the size of the module.
"""

from __future__ import annotations

from ..frontend.module import BytecodeModule
from . import model
from .features import available_features
from .function import ModuleFacts, verify_function
from .module_rules import MODULE_RULES, check_features, resolve_types
from .reftypes import resolvable_ref_types


def verify_module(module: BytecodeModule, features: int | None = None,
                  ref_types: frozenset[str] | None = None) -> model.VerifiedModule:
    """Proves `module` well formed for this runtime.

    `features` defaults to `available_features()`; `ref_types` (names without '!') to the
    registered ref types plus the provisional HAL names.
    """
    if features is None:
        features = available_features()
    ref_types = resolvable_ref_types() if ref_types is None else frozenset(ref_types)
    check_features(module, features)
    types = resolve_types(module, ref_types)
    for rule in MODULE_RULES:
        rule(module)
    verified = model.VerifiedModule(module=module, types=types, features=features, seal=model._SEAL)
    facts = ModuleFacts(module, types, features)
    functions = tuple(verify_function(facts, verified, i) for i in range(len(module.functions)))
    object.__setattr__(verified, "functions", functions)  # the functions point back at the module
    return verified
