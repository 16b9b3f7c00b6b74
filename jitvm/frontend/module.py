"""BytecodeModule: every table of a .vmfb as immutable Python values.

Reading costs time proportional to the metadata: rodata and bytecode stay zero-copy views
of the file, and external rodata is not touched until a segment's `data` is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..errors import FormatError
from . import schema
from .archive import Archive, open_archive
from .cconv import CallingConvention, parse_cconv
from .flatbuf import FlatBuffer

SUPPORTED_BYTECODE_MAJOR = 17
SUPPORTED_BYTECODE_MINOR = 0

FEATURE_BITS = {"EXT_F32": 1 << 0, "EXT_F64": 1 << 1, "YIELD": 1 << 2, "UNWIND": 1 << 3}


def feature_names(bits: int) -> list[str]:
    names = [name for name, bit in FEATURE_BITS.items() if bits & bit]
    unknown = bits & ~sum(FEATURE_BITS.values())
    if unknown:
        names.append(f"0x{unknown:08X}")
    return names


@dataclass(frozen=True)
class Signature:
    """A function's or import's calling convention and its reflection attributes."""

    cconv: CallingConvention
    attrs: tuple[tuple[str, str], ...] = ()

    def attr(self, key: str) -> str | None:
        return next((v for k, v in self.attrs if k == key), None)


@dataclass(frozen=True)
class Dependency:
    """A module this one needs at least `minimum_version` of (unless optional)."""

    name: str
    minimum_version: int
    optional: bool


@dataclass(frozen=True)
class Import:
    """A function imported from another module, by full name ("hal.buffer.assert")."""

    ordinal: int
    name: str  # "hal.buffer.assert"
    signature: Signature
    optional: bool

    @property
    def module_name(self) -> str:
        return self.name.split(".", 1)[0]


@dataclass(frozen=True)
class Export:
    """A name under which an internal function is exported."""

    ordinal: int
    name: str
    internal_ordinal: int


@dataclass(frozen=True)
class RodataSegment:
    """A read-only data segment: embedded in the FlatBuffer or external in the archive."""

    ordinal: int
    external: bool
    offset: int  # file offset of the first byte (embedded or external)
    length: int
    archive: Archive = field(repr=False, compare=False)
    embedded: memoryview | None = field(default=None, repr=False, compare=False)
    external_offset: int = 0  # relative to the archive's rodata base

    @property
    def data(self) -> memoryview:
        """The bytes, zero-copy; external segments are bounds-checked on first access."""
        if self.embedded is not None:
            return self.embedded
        return self.archive.external(self.external_offset, self.length, f"rodata[{self.ordinal}]")


@dataclass(frozen=True)
class FunctionDescriptor:
    """Where a function's bytecode lies and what it needs (registers, blocks, features)."""

    ordinal: int
    bytecode_offset: int
    bytecode_length: int
    requirements: int
    block_count: int
    i32_register_count: int
    ref_register_count: int


@dataclass(frozen=True)
class FileLineCol:
    """A source location of the debug database."""

    filename: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.column}"


@dataclass(frozen=True)
class CallSite:
    """A debug location inlined at another: callee's and caller's location indices."""

    callee: int
    caller: int


@dataclass(frozen=True)
class Fused:
    """Several debug locations that make one."""

    metadata: str | None
    locations: tuple[int, ...]


@dataclass(frozen=True)
class NameLoc:
    """A named debug location wrapping another."""

    name: str
    child: int


@dataclass(frozen=True)
class DebugDatabase:
    """The module's debug locations, function names and per-function source maps."""

    locations: tuple  # index -> FileLineCol | CallSite | Fused | NameLoc | None
    function_names: tuple[str | None, ...]
    function_locations: tuple[tuple[tuple[int, int], ...], ...]  # per function: (pc, location)

    def location_at(self, function: int, pc: int, function_offset: int = 0) -> int | None:
        """The location index recorded for the instruction at `pc`, if any.

        iree-compile 3.13 writes one source map whose offsets are module-relative, while the
        format allows one map per function with function-relative offsets; accept both.
        """
        maps = self.function_locations
        candidates = [maps[function]] if function < len(maps) else []
        if len(maps) == 1 and function != 0:
            candidates.append(maps[0])
        for entries in candidates:
            for offset, loc in entries:
                if offset == pc or (function_offset and offset == function_offset + pc):
                    return loc
        return None

    def describe(self, index: int | None, depth: int = 0) -> str | None:
        """A short human-readable source location ("file.mlir:12:5")."""
        if index is None or not 0 <= index < len(self.locations) or depth > 16:
            return None
        loc = self.locations[index]
        if isinstance(loc, FileLineCol):
            return str(loc)
        if isinstance(loc, CallSite):
            return self.describe(loc.callee, depth + 1)
        if isinstance(loc, NameLoc):
            return self.describe(loc.child, depth + 1) or loc.name
        if isinstance(loc, Fused):
            for child in loc.locations:
                text = self.describe(child, depth + 1)
                if text:
                    return text
        return None


_LOCATION_BUILDERS = {
    1: lambda d: CallSite(d["callee"], d["caller"]),
    2: lambda d: FileLineCol(d["filename"] or "", d["line"], d["column"]),
    3: lambda d: Fused(d["metadata"], tuple(d["locations"])),
    4: lambda d: NameLoc(d["name"] or "", d["child_location"]),
}


@dataclass(frozen=True)
class BytecodeModule:
    """One decoded module file; `bytecode` and rodata are views into `archive.data`."""

    archive: Archive = field(repr=False)
    name: str
    version: int
    requirements: int
    attrs: tuple[tuple[str, str], ...]
    types: tuple[str, ...]
    dependencies: tuple[Dependency, ...]
    imports: tuple[Import, ...]
    exports: tuple[Export, ...]
    signatures: tuple[Signature, ...]
    rodata: tuple[RodataSegment, ...]
    rwdata_sizes: tuple[int, ...]
    global_bytes: int
    global_refs: int
    functions: tuple[FunctionDescriptor, ...]
    bytecode_version: int
    bytecode: memoryview = field(repr=False)
    bytecode_file_offset: int
    debug: DebugDatabase | None

    @property
    def origin(self) -> str:
        return self.archive.origin

    @property
    def bytecode_major(self) -> int:
        return self.bytecode_version >> 16

    @property
    def bytecode_minor(self) -> int:
        return self.bytecode_version & 0xFFFF

    @cached_property
    def export_of(self) -> dict[int, Export]:
        """Internal ordinal -> first export naming it."""
        out: dict[int, Export] = {}
        for e in self.exports:
            out.setdefault(e.internal_ordinal, e)
        return out

    def export(self, name: str) -> Export | None:
        return next((e for e in self.exports if e.name == name), None)

    def function_name(self, ordinal: int) -> str | None:
        """The name IREE shows for an internal function: its debug name, else none."""
        if self.debug and ordinal < len(self.debug.function_names):
            return self.debug.function_names[ordinal]
        return None

    def display_name(self, ordinal: int) -> str:
        """A name for messages: debug name, export name, or `<module>:<ordinal>`.

        Debug names are trusted only when the debug database names every function:
        iree-compile 3.13 writes a single entry (the last function's name), which would
        otherwise label function 0 with it.
        """
        name = None
        if self.debug and len(self.debug.function_names) == len(self.functions):
            name = self.function_name(ordinal)
        if not name and ordinal in self.export_of:
            name = self.export_of[ordinal].name
        return name or f"{self.name}:{ordinal}"

    def function_bytes(self, ordinal: int) -> memoryview:
        d = self.functions[ordinal]
        return self.bytecode[d.bytecode_offset:d.bytecode_offset + d.bytecode_length]

    def source_location(self, function: int, pc: int) -> str | None:
        if self.debug is None:
            return None
        offset = self.functions[function].bytecode_offset if function < len(self.functions) else 0
        return self.debug.describe(self.debug.location_at(function, pc, offset))


def load_module(source, origin: str | None = None) -> BytecodeModule:
    """Opens a module from a path (memory-mapped) or a bytes-like object."""
    return read_module(open_archive(source, origin))


def read_module(archive: Archive) -> BytecodeModule:
    where = archive.origin
    fb = FlatBuffer(archive.flatbuffer, where)
    try:
        d = schema.read(fb.root(), schema.BYTECODE_MODULE)
    except RecursionError:
        raise FormatError(f"{where}: FlatBuffer nesting too deep") from None

    version = d["bytecode_version"]
    major, minor = version >> 16, version & 0xFFFF
    if major != SUPPORTED_BYTECODE_MAJOR or minor > SUPPORTED_BYTECODE_MINOR:
        raise FormatError(
            f"{where}: bytecode version {major}.{minor} is not supported; this runtime reads "
            f"{SUPPORTED_BYTECODE_MAJOR}.{SUPPORTED_BYTECODE_MINOR}")
    if not d["name"]:
        raise FormatError(f"{where}: module has no name")

    def required(value, what):
        if value is None:
            raise FormatError(f"{where}: {what} is missing")
        return value

    def signature(sd, what) -> Signature:
        sd = required(sd, what)
        cc = required(sd["calling_convention"], f"{what}.calling_convention")
        attrs = tuple((required(a, f"{what}.attrs[]")["key"] or "", a["value"] or "")
                      for a in sd["attrs"])
        return Signature(parse_cconv(cc, f"{where}: {what}"), attrs)

    types = tuple(required(t, f"types[{i}]")["full_name"] or "" for i, t in enumerate(d["types"]))
    deps = tuple(Dependency(required(x, f"dependencies[{i}]")["name"] or "", x["minimum_version"],
                            bool(x["flags"] & 2))
                 for i, x in enumerate(d["dependencies"]))
    imports = tuple(
        Import(i, required(x, f"imports[{i}]")["full_name"] or "",
               signature(x["signature"], f"imports[{i}].signature"), bool(x["flags"] & 2))
        for i, x in enumerate(d["imported_functions"]))
    exports = tuple(Export(i, required(x, f"exports[{i}]")["local_name"] or "", x["internal_ordinal"])
                    for i, x in enumerate(d["exported_functions"]))
    signatures = tuple(signature(x, f"function_signatures[{i}]")
                       for i, x in enumerate(d["function_signatures"]))

    rodata = []
    for i, seg in enumerate(d["rodata_segments"]):
        seg = required(seg, f"rodata[{i}]")
        if seg["embedded_data"] is not None:
            view = seg["embedded_data"]
            offset = archive.flatbuffer_offset + seg["embedded_data__offset"]
            rodata.append(RodataSegment(i, False, offset, len(view), archive, view))
        else:
            ext_off, ext_len = seg["external_data_offset"], seg["external_data_length"]
            end = archive.rodata_base + ext_off + ext_len
            if end > len(archive.data):
                raise FormatError(
                    f"{where}: rodata[{i}] external data (offset {ext_off}, {ext_len} bytes) lies "
                    f"outside the {len(archive.data)}-byte file")
            rodata.append(RodataSegment(i, True, archive.rodata_base + ext_off, ext_len, archive,
                                        None, ext_off))

    state = d["module_state"] or {"global_bytes_capacity": 0, "global_ref_count": 0}
    functions = tuple(FunctionDescriptor(i, *fd[:3], *fd[4:]) for i, fd in enumerate(d["function_descriptors"]))
    bytecode = d["bytecode_data"]
    if bytecode is None:
        bytecode = archive.flatbuffer[0:0]
    bytecode_file_offset = archive.flatbuffer_offset + d["bytecode_data__offset"]

    return BytecodeModule(
        archive=archive,
        name=d["name"],
        version=d["version"],
        requirements=d["requirements"],
        attrs=tuple((required(a, "attrs[]")["key"] or "", a["value"] or "") for a in d["attrs"]),
        types=types,
        dependencies=deps,
        imports=imports,
        exports=exports,
        signatures=signatures,
        rodata=tuple(rodata),
        rwdata_sizes=tuple(required(x, "rwdata[]")["byte_size"] for x in d["rwdata_segments"]),
        global_bytes=state["global_bytes_capacity"],
        global_refs=state["global_ref_count"],
        functions=functions,
        bytecode_version=version,
        bytecode=bytecode,
        bytecode_file_offset=bytecode_file_offset,
        debug=_debug_database(d["debug_database"]),
    )


def _debug_database(dd) -> DebugDatabase | None:
    if dd is None:
        return None
    locations = tuple(_LOCATION_BUILDERS[tag](value) if value is not None and tag in _LOCATION_BUILDERS
                      else None for tag, value in dd["location_table"])
    names = tuple((f or {}).get("local_name") for f in dd["functions"])
    locs = tuple(tuple(sorted((f or {"locations": []})["locations"])) for f in dd["functions"])
    return DebugDatabase(locations, names, locs)
