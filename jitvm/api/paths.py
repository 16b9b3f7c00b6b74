"""What a module source names: a path, or `example:NAME` for a module bundled with jitvm."""

from __future__ import annotations

from ..errors import Error

EXAMPLE_PREFIX = "example:"


def resolve_path(text: str) -> str:
    """`example:NAME` names a module bundled with jitvm; anything else is a path."""
    if text.startswith(EXAMPLE_PREFIX):
        from importlib import resources  # here: importing it costs every start tempfile, shutil, zipfile

        name = text[len(EXAMPLE_PREFIX):]
        path = resources.files("jitvm") / "examples" / f"{name}.vmfb"
        if not path.is_file():
            available = sorted(p.name[:-5] for p in (resources.files("jitvm") / "examples").iterdir()
                               if p.name.endswith(".vmfb"))
            raise Error(f"no bundled example {name!r}; available: {', '.join(available) or 'none'}")
        return str(path)
    return text
