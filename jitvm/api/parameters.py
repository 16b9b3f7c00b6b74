"""`parameters=` of jitvm.load and `--parameters=[scope=]FILE`: archives as parameter providers.

Each spec is a path (unscoped), `scope=path`, a (scope, path) pair, a ParameterIndex
(unscoped) or a ParameterProvider. Archives are mapped, not read; the format comes from
the extension (.irpa, .safetensors, .gguf), as iree-run-module decides.
"""

from __future__ import annotations

import os

from ..errors import ArgumentError


def parse_spec(text: str) -> tuple[str, str]:
    """`scope=path` -> (scope, path); a bare path (or one that exists as written) is unscoped."""
    scope, sep, path = text.partition("=")
    if not sep or os.path.exists(text):
        return "", text
    return scope, path


def providers(specs) -> list:
    """ParameterProviders of `specs` (the parameter archives are imported only when there are some)."""
    if specs is None:
        return []
    from ..runtime.modules.io_parameters import ParameterIndex, ParameterProvider, open_index

    if isinstance(specs, (str, os.PathLike, ParameterIndex, ParameterProvider)) or \
            isinstance(specs, tuple) and len(specs) == 2 and isinstance(specs[0], str):
        specs = [specs]
    out = []
    for spec in specs:
        if isinstance(spec, ParameterProvider):
            out.append(spec)
        elif isinstance(spec, ParameterIndex):
            out.append(ParameterProvider(spec, ""))
        elif isinstance(spec, tuple) and len(spec) == 2:
            scope, path = spec
            out.append(ParameterProvider(open_index(os.fspath(path)), scope))
        elif isinstance(spec, (str, os.PathLike)):
            scope, path = parse_spec(os.fspath(spec))
            out.append(ParameterProvider(open_index(path), scope))
        else:
            raise ArgumentError(f"parameters: cannot use {type(spec).__name__} {spec!r}; give a path, "
                                f"'scope=path', a (scope, path) pair or a ParameterIndex")
    return out
