"""What a file argument of the command line names: a path, or `example:NAME` (see jitvm.api.paths)."""

from ..api.paths import EXAMPLE_PREFIX, resolve_path

__all__ = ["EXAMPLE_PREFIX", "resolve_path"]
