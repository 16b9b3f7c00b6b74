"""Writing `.irpa` archives (IREE's parameter archive format, version 0.0).

Layout: the header, the entry table (16-byte aligned entries), the metadata segment (names
and metadata blobs), then the storage segment with each data entry 64-byte aligned; the file is padded to 4 KiB.
"""

from __future__ import annotations


from .formats import (ENTRY_ALIGNMENT, ENTRY_DATA, ENTRY_SPLAT, IRPA_MAGIC, _DATA, _ENTRY, _IRPA_PREFIX, _IRPA_V0,
                      _SPLAT, _align)
from .index import ParameterEntry

HEADER_ALIGNMENT = 16
DATA_ALIGNMENT = 64
FILE_ALIGNMENT = 4096  # the file is padded to a whole number of pages


def archive_bytes(entries: list[ParameterEntry]) -> bytes:
    """The archive holding `entries` (file entries are copied in, splats stay patterns)."""
    header_size = _IRPA_PREFIX.size + _IRPA_V0.size
    table_at = _align(header_size, HEADER_ALIGNMENT)
    metadata = bytearray()
    refs = []
    for e in entries:
        name = e.key.encode("utf-8")
        meta_ref = (len(metadata) + len(name), len(e.metadata)) if e.metadata else (0, 0)
        refs.append(((len(metadata), len(name)), meta_ref))
        metadata += name + e.metadata
    sizes = [_ENTRY.size + (_SPLAT.size if e.is_splat else _DATA.size) for e in entries]
    table_len = sum(_align(s, ENTRY_ALIGNMENT) for s in sizes[:-1]) + (sizes[-1] if sizes else 0)
    metadata_at = table_at + table_len
    storage_at = _align(metadata_at + len(metadata), DATA_ALIGNMENT)
    storage = bytearray()
    table = bytearray()
    for e, size, (name_ref, meta_ref) in zip(entries, sizes, refs):
        if e.is_splat:
            body = _SPLAT.pack(e.length, e.splat.ljust(16, b"\0"), len(e.splat))
            kind = ENTRY_SPLAT
        else:
            offset = _align(len(storage), DATA_ALIGNMENT)
            storage += b"\0" * (offset - len(storage)) + bytes(e.view())
            body = _DATA.pack(offset, e.length)
            kind = ENTRY_DATA
        alignment = 0 if e.is_splat else DATA_ALIGNMENT  # splats have no storage to align
        table += _ENTRY.pack(size, kind, 0, *name_ref, *meta_ref, alignment) + body
        table += b"\0" * (_align(len(table), ENTRY_ALIGNMENT) - len(table))
    table = table[:table_len]
    prefix = _IRPA_PREFIX.pack(IRPA_MAGIC, 0, 0, header_size, 0, 0)
    v0 = _IRPA_V0.pack(len(entries), table_at, table_len, metadata_at, len(metadata), storage_at, len(storage))
    out = bytearray(prefix + v0)
    out += b"\0" * (table_at - len(out)) + table + metadata
    out += b"\0" * (storage_at - len(out)) + storage
    out += b"\0" * (_align(len(out), FILE_ALIGNMENT) - len(out))
    return bytes(out)


def write_archive(entries: list[ParameterEntry], path: str) -> None:
    with open(path, "wb") as f:
        f.write(archive_bytes(entries))


__all__ = ["archive_bytes", "write_archive"]
