"""A compiled module's type table: the global its code reads type ids from, filled at load.

Type ids are this process's (runtime.vm.objects.checked_type_id), so the table is not
embedded in the (cached) object code: the loader fills it. Kept apart from the lowering so
that loading stored code imports none of it.
"""

from __future__ import annotations

from ..runtime.vm.objects import checked_type_id
from ..verify.model import VerifiedModule


def type_table_symbol(key: str) -> str:
    return f"jv_{key}_typeids"


def runtime_type_ids(verified: VerifiedModule) -> list[int]:
    """The values of a module's type table in this process (runtime.vm.objects.checked_type_id)."""
    return [checked_type_id(t) for t in verified.types]
