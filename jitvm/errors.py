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


class ArgumentError(Error, ValueError):
    """A caller passed arguments that do not fit the function's signature (a ValueError,
    as iree.runtime raises for the same mistakes)."""


class NotFoundError(Error, AttributeError, KeyError):
    """A name that is not there: a function of a module, a module of a context. Both an
    AttributeError and a KeyError, as iree.runtime raises one for `m.f` and the other for
    `m["f"]`, so existing `except` clauses keep working."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


STATUS_NAMES = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED",
    13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED", 17: "DEFERRED",
    18: "INCOMPATIBLE",
}
STATUS_CODES = {v: k for k, v in STATUS_NAMES.items()}


class Trap(Error, RuntimeError):
    """A program failed while running: a VM trap, vm.fail, a failed check or a native error.

    `status` is IREE's status code, `message` the failure text and `backtrace` a list of
    (module, function, pc, source location or None), innermost first. Like the exceptions
    iree.runtime raises for a failed status, a Trap is a RuntimeError, and also a ValueError
    for INVALID_ARGUMENT and NOT_FOUND, an IndexError for OUT_OF_RANGE and a
    NotImplementedError for UNIMPLEMENTED (`Trap(status, ...)` picks the class).
    """

    def __new__(cls, status: int = 2, message: str = "", backtrace=()):
        if cls is Trap:
            cls = _TRAP_CLASSES.get(status, Trap)
        return super().__new__(cls)

    def __init__(self, status: int, message: str, backtrace=()):
        self.status = status
        self.message = message
        self.backtrace = list(backtrace)
        super().__init__(self._text())

    @property
    def status_name(self) -> str:
        return STATUS_NAMES.get(self.status, f"STATUS_{self.status}")

    def _text(self) -> str:
        lines = [f"{self.status_name}; {self.message}"]
        for module, function, pc, location in self.backtrace:
            where = f"  at {module}.{function} pc {pc}"
            lines.append(where + (f" ({location})" if location else ""))
        return "\n".join(lines)

    def add_frame(self, module: str, function: str, pc: int, location: str | None) -> None:
        self.backtrace.append((module, function, pc, location))
        self.args = (self._text(),)

    def __reduce__(self):
        return Trap, (self.status, self.message, self.backtrace)


class InvalidArgumentTrap(Trap, ValueError):
    """A Trap with status INVALID_ARGUMENT or NOT_FOUND (iree.runtime: ValueError)."""


class OutOfRangeTrap(Trap, IndexError):
    """A Trap with status OUT_OF_RANGE (iree.runtime: IndexError)."""


class UnimplementedTrap(Trap, NotImplementedError):
    """A Trap with status UNIMPLEMENTED (iree.runtime: NotImplementedError)."""


_TRAP_CLASSES = {3: InvalidArgumentTrap, 5: InvalidArgumentTrap, 11: OutOfRangeTrap, 12: UnimplementedTrap}


class AsmError(FormatError):
    """VM assembly text that does not assemble; names the source, line and column.

    `line` and `column` are 1-based; `text` is the offending source line (for the caret).
    """

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 source: str = "<vmasm>", text: str | None = None):
        self.message = message
        self.line = line
        self.column = column
        self.source = source
        self.text = text
        where = source if line is None else f"{source}:{line}:{column or 1}"
        out = f"{where}: {message}"
        if text is not None and column is not None:
            shown = text.rstrip("\n").expandtabs(1)
            out += f"\n  {shown}\n  {' ' * (column - 1)}^"
        super().__init__(out)
