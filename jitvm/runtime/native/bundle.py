"""Compiled code in one file: code-store entries (runtime.native.cache) plus a manifest.

A bundle is a ZIP archive of stored members: `manifest.json` (what the code was compiled
from and for: the caller decides what goes in it and what must match) and, per entry,
`<key>/meta.json` with `<key>/code.<i>.o`. Opening one checks every member's digest, so
a truncated or damaged bundle is refused before any of its code can run.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from ...errors import FormatError
from . import cache

FORMAT = "jitvm-bundle-1"


def write(path: str | Path, manifest: dict, keys) -> int:
    """Writes the store's entries `keys` with `manifest` to `path`; returns how many entries."""
    entries = {}
    for k in sorted(keys):
        hit = cache.load(k)
        if hit is None:
            raise FormatError(f"{path}: the code store has no entry {k} to bundle")
        entries[k] = hit
    import zipfile  # here and in Bundle: a process that loads no bundle never needs it

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("manifest.json", json.dumps({**manifest, "format": FORMAT, "entries": sorted(entries)}, indent=1))
        for k, (objects, meta) in entries.items():
            z.writestr(f"{k}/meta.json", json.dumps(cache.describe(objects, meta)))
            for i, obj in enumerate(objects):
                z.writestr(f"{k}/code.{i}.o", obj)
    Path(path).write_bytes(buf.getvalue())
    return len(entries)


class Bundle:
    """An opened bundle: its manifest and its entries, each checked against its digests."""

    def __init__(self, path: str | Path):
        import zipfile

        self.path = str(path)
        try:
            with zipfile.ZipFile(path) as z:
                self.manifest = json.loads(z.read("manifest.json"))
                if self.manifest.get("format") != FORMAT:
                    raise FormatError(f"{path}: not a jitvm bundle of format {FORMAT} "
                                      f"(found {self.manifest.get('format')!r})")
                self._entries = {k: self._read(z, k) for k in self.manifest.get("entries", ())}
        except (OSError, zipfile.BadZipFile, KeyError, ValueError, UnicodeDecodeError) as e:
            raise FormatError(f"{path}: not a readable jitvm bundle ({type(e).__name__}: {e})") from None

    def _read(self, z: zipfile.ZipFile, k: str) -> tuple[list[bytes], dict]:
        meta = json.loads(z.read(f"{k}/meta.json"))
        objects = [z.read(f"{k}/code.{i}.o") for i in range(len(meta.get("sizes", ())))]
        if not cache.intact(objects, meta):
            raise FormatError(f"{self.path}: entry {k} is damaged (its code does not match its digests)")
        return objects, meta

    def entry(self, k: str) -> tuple[list[bytes], dict] | None:
        return self._entries.get(k)

    def __len__(self) -> int:
        return len(self._entries)
