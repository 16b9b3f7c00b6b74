"""The error classes every stage raises: one base, readable messages, no bare exceptions."""

from __future__ import annotations


class Error(Exception):
    """Base of every error jitvm raises on purpose."""


class FormatError(Error):
    """The bytes are not a well-formed .vmfb (envelope, FlatBuffer, version, offsets)."""


class DecodeError(FormatError):
    """Function bytecode that cannot be decoded (truncated, unknown opcode, bad lists)."""


class VerifyError(Error):
    """A module that decodes but breaks a rule the backends rely on."""


class UnsupportedError(Error):
    """A well-formed feature this runtime does not provide (a missing import, an ISA extension)."""


class ArgumentError(Error):
    """A caller passed arguments that do not fit the function's signature."""
