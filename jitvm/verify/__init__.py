"""Ahead-of-time verification: a decoded module becomes a VerifiedModule or a VerifyError."""

from .features import FeatureError, available_features
from .model import Block, CallSite, VerifiedFunction, VerifiedModule
from .verifier import verify_module

__all__ = [
    "Block",
    "CallSite",
    "FeatureError",
    "VerifiedFunction",
    "VerifiedModule",
    "available_features",
    "verify_module",
]
