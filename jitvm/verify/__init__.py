"""Ahead-of-time verification: a decoded module becomes a VerifiedModule or a VerifyError."""

from .model import Block, CallSite, VerifiedFunction, VerifiedModule

__all__ = ["Block", "CallSite", "VerifiedFunction", "VerifiedModule"]
