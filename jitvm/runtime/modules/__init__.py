"""Native modules implemented in Python: `hal` (local CPU device), `check`, `vmvx`."""

from .check import CheckModule
from .hal import HalModule, register_hal_types
from .vmvx import VmvxModule

__all__ = ["CheckModule", "HalModule", "VmvxModule", "register_hal_types"]
