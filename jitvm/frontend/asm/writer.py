"""ModuleBuilder: a complete .vmfb from VM assembly, constants and metadata.

The builder collects what a module declares (types, imports, exports, globals, rodata,
functions whose operands may still name symbols and labels), then `build` resolves names,
encodes every function, derives what the bytecode implies (register and block counts,
requirement bits, global storage; see `derive`) and lays out the FlatBuffer and the archive.
Large rodata never passes through memory whole: sources stay references (a numpy array,
a buffer) until `write` streams them, packing sub-byte constants chunk by chunk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import Error
from .. import derive, isa, schema
from ..archive import SEGMENT_ALIGNMENT
from .archive_writer import align, plan_entries, write_archive
from ..bitpack import iter_packed, packed_size, word_layout
from ..cconv import parse_cconv
from ..decode import Instruction
from ..isa import IMPORT_BIT
from .encode import EncodeError, encode_function, instruction_pcs
from .flatbuild import Aligned, build as build_flatbuffer
from ..module import SUPPORTED_BYTECODE_MAJOR, SUPPORTED_BYTECODE_MINOR

EMBEDDED_ALIGNMENT = 16  # iree-compile's default for constants inside the FlatBuffer
MAX_EMBEDDED = 4096  # larger constants go after the FlatBuffer, as iree-compile does
FUNCTION_ALIGNMENT = 8  # each function's bytecode starts on this boundary
STREAM_CHUNK = 16 << 20
VALUE_GLOBAL_SIZES = {"i32": 4, "f32": 4, "i64": 8, "f64": 8}


class BuildError(Error):
    """A module that cannot be built: an unknown name, a duplicate, a value out of range."""


def _fail(message: str, where=None) -> Exception:
    return where.error(message) if where is not None else BuildError(message)


# --- rodata sources ---------------------------------------------------------------------

class _BufferSource:
    """Bytes already laid out (bytes, memoryview, or a numpy array's little-endian bytes)."""

    def __init__(self, data):
        if isinstance(data, np.ndarray):
            a = data
            if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and not np.little_endian):
                a = a.astype(a.dtype.newbyteorder("<"))
            a = np.ascontiguousarray(a)
            self.view = memoryview(a.reshape(-1).view(np.uint8))
        else:
            try:
                self.view = memoryview(data).cast("B")
            except TypeError:
                raise BuildError(f"rodata must be bytes-like or a numpy array, not {type(data).__name__}") from None
        self.length = len(self.view)

    def chunks(self):
        for start in range(0, self.length, STREAM_CHUNK):
            yield self.view[start:start + STREAM_CHUNK]

    def materialize(self) -> bytes:
        return bytes(self.view)


class _PackedSource:
    """Integers packed `bits` wide when written; the array is read then, not before."""

    def __init__(self, values, bits: int, ordinal: int):
        word_layout(bits)
        a = np.asarray(values)
        if not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
            raise BuildError(f"rodata[{ordinal}]: packing {bits}-bit values needs integers, not {a.dtype}")
        self.values = a
        self.bits = bits
        self.ordinal = ordinal
        self.length = packed_size(a.size, bits)

    def chunks(self):
        from ..bitpack import PackError
        try:
            yield from iter_packed(self.values, self.bits)
        except PackError as e:
            raise BuildError(f"rodata[{self.ordinal}]: {e}") from None

    def materialize(self) -> bytes:
        return b"".join(bytes(c) for c in self.chunks())


@dataclass
class Segment:
    source: object
    alignment: int
    external: bool

    @property
    def length(self) -> int:
        return self.source.length


# --- declarations ---------------------------------------------------------------------

@dataclass
class ImportDef:
    name: str
    cconv: str
    optional: bool = False
    attrs: tuple = ()


@dataclass
class GlobalDef:
    name: str
    type: str  # "i32" ... "f64", or a ref type
    where: object = None

    @property
    def size(self) -> int:
        return VALUE_GLOBAL_SIZES.get(self.type, 0)


@dataclass(frozen=True)
class Symbol:
    """A function or global named by an operand, resolved when the module is built."""

    name: str
    where: object = None  # asm.source.Where, for messages


@dataclass(frozen=True)
class Label:
    """A block label (`^bb3`) used as a branch target, resolved to a pc when encoding."""

    name: str
    where: object = None


@dataclass
class Pending:
    """One instruction whose operands may still hold Symbols and Labels (see asm.forms)."""

    op: isa.Op
    args: tuple
    where: object = None


@dataclass
class FunctionDef:
    symbol: str  # the name the text uses for it: a debug name, an export name or `module:N`
    cconv: str
    body: list = field(default_factory=list)  # Pending, block markers included
    labels: dict = field(default_factory=dict)  # label -> index in body of its block marker
    attrs: tuple = ()  # signature attributes (key, value)
    features: int = 0  # requirement bits beyond what the ops imply
    i32_registers: int | None = None  # explicit descriptor values (None: derived)
    ref_registers: int | None = None
    block_count: int | None = None
    named: bool = True  # whether `symbol` is also its debug name
    where: object = None


@dataclass
class Built:
    flatbuffer: bytes
    entries: list


class ModuleBuilder:
    """Builds one bytecode module; `frontend.asm.add_functions` adds VM assembly in `jitvm dump` syntax."""

    def __init__(self, name: str, version: int = 0):
        if not name:
            raise BuildError("a module needs a name")
        self.name = name
        self.version = version
        self.attrs: list[tuple[str, str]] = []
        self.features = 0  # module requirement bits beyond those of its functions
        self.global_bytes: int | None = None
        self.global_refs: int | None = None
        self.debug_names: list | None = None  # explicit per-ordinal debug names ("" = none)
        self.types: list[str] = []
        self._type_index: dict[str, int] = {}
        self.dependencies: list[tuple[str, int, bool]] = []
        self.imports: list[ImportDef] = []
        self._import_index: dict[str, int] = {}
        self.exports: list[tuple[str, object, object]] = []  # (name, function symbol, where)
        self.rodata: list[Segment] = []
        self.globals: list[GlobalDef] = []
        self.functions: list[FunctionDef] = []
        self._symbol_index: dict[str, int] = {}

    # -- declarations -----------------------------------------------------------------------

    def type_ordinal(self, name: str, where=None) -> int:
        """The type table index of `name`, appending it on first use. A bare `?` (the element
        of `!vm.list<?>` in MLIR's spelling) is the table's `!vm.opaque`, as iree-as-module
        writes it."""
        if name == "?":
            name = "!vm.opaque"
        index = self._type_index.get(name)
        if index is None:
            index = self._type_index[name] = len(self.types)
            self.types.append(name)
        return index

    def add_type(self, name: str, where=None) -> int:
        if name in self._type_index:
            raise _fail(f"duplicate type {name}", where)
        return self.type_ordinal(name)

    def add_dependency(self, name: str, minimum_version: int = 0, optional: bool = False, where=None) -> None:
        if any(d[0] == name for d in self.dependencies):
            raise _fail(f"duplicate dependency @{name}", where)
        self.dependencies.append((name, minimum_version, optional))

    def add_import(self, name: str, cconv: str, optional: bool = False, attrs=(), where=None) -> int:
        """Declares an imported function; returns its import ordinal."""
        if name in self._import_index:
            raise _fail(f"duplicate import @{name}", where)
        try:
            parse_cconv(cconv, f"import @{name}")
        except Error as e:
            raise _fail(str(e), where) from None
        self._import_index[name] = len(self.imports)
        self.imports.append(ImportDef(name, cconv, optional, tuple(attrs)))
        return len(self.imports) - 1

    def add_rodata(self, data, bits: int | None = None, alignment: int | None = None,
                   external: bool | None = None) -> int:
        """Adds a read-only segment; returns its ordinal (for `vm.const.ref.rodata N`).

        `data` is bytes-like or a numpy array (its little-endian bytes). With `bits` (1..8)
        it is an integer array packed `8 // bits` elements per byte, element 0 in the lowest
        bits, as iree-compile lays out sub-byte constants. Segments of 4 KiB or more (or
        `external=True`) are stored after the FlatBuffer, 64-byte aligned, and streamed when
        the module is written; the array is read at that time, not now.
        """
        ordinal = len(self.rodata)
        source = _PackedSource(data, bits, ordinal) if bits is not None else _BufferSource(data)
        if external is None:
            external = source.length >= MAX_EMBEDDED
        if alignment is None:
            alignment = SEGMENT_ALIGNMENT if external else EMBEDDED_ALIGNMENT
        if alignment < 1 or alignment & (alignment - 1) or alignment > SEGMENT_ALIGNMENT:
            raise BuildError(f"rodata alignment must be a power of two up to {SEGMENT_ALIGNMENT}, got {alignment}")
        self.rodata.append(Segment(source, alignment, external))
        return ordinal

    def add_global(self, name: str, type: str, where=None) -> None:
        """A named global (`@name` in global operands); storage is assigned when built."""
        if any(g.name == name for g in self.globals):
            raise _fail(f"duplicate global @{name}", where)
        self.globals.append(GlobalDef(name, type, where))

    def add_export(self, name: str, function: str, where=None) -> int:
        """Exports `function` (a function symbol) as `name`; returns the export ordinal."""
        if any(e[0] == name for e in self.exports):
            raise _fail(f"duplicate export @{name}", where)
        self.exports.append((name, function, where))
        return len(self.exports) - 1

    def add_function(self, fn: FunctionDef) -> int:
        ordinal = len(self.functions)
        symbol = fn.symbol
        ordinal_ref = self._ordinal_symbol(symbol)
        if ordinal_ref is not None:
            if ordinal_ref != ordinal:
                raise _fail(f"@{symbol} names function {ordinal_ref} but this is function {ordinal}", fn.where)
            fn.named = False
        elif symbol in self._symbol_index:
            raise _fail(f"duplicate function @{symbol}", fn.where)
        elif symbol == f"fn{ordinal}":  # iree-dump-module's name for an unnamed function
            fn.named = False
        self._symbol_index[symbol] = ordinal
        self.functions.append(fn)
        return ordinal

    # -- resolution -------------------------------------------------------------------------

    def _ordinal_symbol(self, symbol: str) -> int | None:
        """`module:N` names function N of this module."""
        prefix = self.name + ":"
        if symbol.startswith(prefix) and symbol[len(prefix):].isdigit():
            return int(symbol[len(prefix):])
        return None

    def debug_name_list(self) -> list:
        """Per ordinal: the debug name written to the module, or None."""
        if self.debug_names is not None:
            return [n or None for n in self.debug_names]
        return [fn.symbol if fn.named else None for fn in self.functions]

    def _function_lookup(self):
        debug = self.debug_name_list()
        by_debug: dict[str, int] = {}
        for i, n in enumerate(debug):
            if n is not None and i < len(self.functions):
                by_debug.setdefault(n, i)

        def find(name: str) -> int | None:
            ordinal = self._ordinal_symbol(name)
            if ordinal is not None:
                return ordinal if ordinal < len(self.functions) else None
            prefix = self.name + "."
            if name.startswith(prefix):
                rest = name[len(prefix):]
                hit = by_debug.get(rest, self._symbol_index.get(rest))
                if hit is not None:
                    return hit
            hit = self._symbol_index.get(name)
            return hit if hit is not None else by_debug.get(name)
        return find

    def _resolve_callee(self, sym, find) -> int:
        if sym.name in self._import_index:
            return IMPORT_BIT | self._import_index[sym.name]
        ordinal = find(sym.name)
        if ordinal is None:
            raise _fail(f"unknown function @{sym.name}", sym.where)
        return ordinal

    def _global_layout(self) -> tuple[dict[str, int], int, int]:
        """Offsets of named globals: refs in order; values by size class, each aligned."""
        where: dict[str, int] = {}
        refs = 0
        for g in self.globals:
            if g.size == 0:
                where[g.name] = refs
                refs += 1
        nbytes = 0
        for size in sorted({g.size for g in self.globals if g.size}):
            nbytes = align(nbytes, size)
            for g in self.globals:
                if g.size == size:
                    where[g.name] = nbytes
                    nbytes += size
        return where, nbytes, refs

    def _instantiate(self, fn: FunctionDef, find, globals_at) -> list[Instruction]:
        def value(f: isa.Field, v, targets):
            if isinstance(v, Symbol):
                if f.kind == isa.FUNC:
                    return self._resolve_callee(v, find)
                g = next((g for g in self.globals if g.name == v.name), None)
                if g is None:
                    raise _fail(f"unknown global @{v.name}", v.where)
                if (g.size == 0) != (f.bank == "ref") or (g.size and g.size != isa.BANK_WIDTH[f.bank]):
                    raise _fail(f"global @{v.name} is {g.type}; this operand needs a {f.bank} global", v.where)
                return globals_at[v.name]
            if isinstance(v, Label):
                index = fn.labels.get(v.name)
                if index is None:
                    raise _fail(f"unknown block label ^{v.name}", v.where)
                return targets[index] if targets is not None else 0
            if f.kind == isa.CASES:
                return tuple((value(isa.Field("t", isa.TARGET), t, targets), remap) for t, remap in v)
            return v

        def build(targets):
            return [Instruction(0, 0, p.op, tuple(value(f, a, targets) for f, a in zip(p.op.fields, p.args)))
                    for p in fn.body]

        pcs = instruction_pcs(build(None))
        return build(pcs)

    # -- output ------------------------------------------------------------------------------

    def build(self) -> Built:
        """Resolves, encodes and lays out the module (rodata stays unread until written)."""
        find = self._function_lookup()
        globals_at, named_bytes, named_refs = self._global_layout()
        cconvs = [fn.cconv for fn in self.functions]
        cconv_of = derive.module_cconv_lookup([i.cconv for i in self.imports], cconvs)

        bytecode = bytearray()
        descriptors = []
        signatures = []
        all_instructions = []
        module_bits = self.features
        for ordinal, fn in enumerate(self.functions):
            try:
                instructions = self._instantiate(fn, find, globals_at)
                code = encode_function(instructions)
            except EncodeError as e:
                raise _fail(f"function @{fn.symbol}: {e}", fn.where) from None
            self._check_rodata(fn, instructions)
            cc = parse_cconv(fn.cconv)
            i32, refs = derive.register_demand(instructions, cc, cconv_of)
            bits = derive.op_features(instructions) | fn.features
            module_bits |= bits
            offset = align(len(bytecode), FUNCTION_ALIGNMENT)
            bytecode += bytes(offset - len(bytecode)) + code
            descriptors.append((offset, len(code), bits, 0,
                                fn.block_count if fn.block_count is not None else derive.block_count(instructions),
                                fn.i32_registers if fn.i32_registers is not None else i32,
                                fn.ref_registers if fn.ref_registers is not None else refs))
            signatures.append(self._signature(fn.cconv, fn.attrs))
            all_instructions.extend(instructions)
        for fn, d in zip(self.functions, descriptors):
            if not all(0 <= x < 0x8000 for x in d[4:]):
                raise _fail(f"function @{fn.symbol}: block and register counts must stay below 32768 "
                            f"(blocks {d[4]}, i32 {d[5]}, ref {d[6]})", fn.where)

        used_bytes, used_refs = derive.global_usage(all_instructions)
        global_bytes = self.global_bytes if self.global_bytes is not None else max(used_bytes, named_bytes)
        global_refs = self.global_refs if self.global_refs is not None else max(used_refs, named_refs)

        exports = []
        for name, symbol, where in self.exports:
            ordinal = find(symbol)
            if ordinal is None:
                raise _fail(f"export @{name} names unknown function @{symbol}", where)
            exports.append({"local_name": name, "internal_ordinal": ordinal})

        entries_in = []
        rodata_defs = []
        for i, seg in enumerate(self.rodata):
            if seg.external:
                entries_in.append((f"rodata_{i}.bin", seg.length, seg.alignment, seg.source.chunks))
                rodata_defs.append(None)
            else:
                rodata_defs.append({"embedded_data": Aligned(seg.source.materialize(), seg.alignment)})
        entries = plan_entries(entries_in)
        placed = iter(entries)
        for i, seg in enumerate(self.rodata):
            if rodata_defs[i] is None:
                e = next(placed)
                rodata_defs[i] = {"external_data_offset": e.content_offset, "external_data_length": e.length}

        debug = self.debug_name_list()
        value = {
            "name": self.name,
            "version": self.version,
            "requirements": module_bits,
            "attrs": [{"key": k, "value": v} for k, v in self.attrs],
            "types": [{"full_name": t} for t in self.types],
            "dependencies": [{"name": n, "minimum_version": v, "flags": 2 if opt else 1}
                             for n, v, opt in self.dependencies],
            "imported_functions": [{"full_name": imp.name, "signature": self._signature(imp.cconv, imp.attrs),
                                    "flags": 2 if imp.optional else 1} for imp in self.imports],
            "exported_functions": exports,
            "function_signatures": signatures,
            "rodata_segments": rodata_defs,
            "rwdata_segments": [],
            "module_state": {"global_bytes_capacity": global_bytes, "global_ref_count": global_refs},
            "function_descriptors": descriptors,
            "bytecode_version": (SUPPORTED_BYTECODE_MAJOR << 16) | SUPPORTED_BYTECODE_MINOR,
            "bytecode_data": Aligned(bytes(bytecode), 16),
        }
        if any(n is not None for n in debug):
            value["debug_database"] = {
                "location_table": [],
                "functions": [{"local_name": n} if n is not None else {} for n in debug],
            }
        return Built(build_flatbuffer(value, schema.BYTECODE_MODULE, schema.FILE_IDENTIFIER), entries)

    def _check_rodata(self, fn: FunctionDef, instructions) -> None:
        for p, ins in zip(fn.body, instructions):
            for f, v in zip(ins.op.fields, ins.args):
                if f.kind == isa.RODATA and v >= len(self.rodata):
                    raise _fail(f"rodata {v} does not exist (the module has {len(self.rodata)} segments)", p.where)

    @staticmethod
    def _signature(cconv: str, attrs) -> dict:
        sig = {"calling_convention": cconv}
        if attrs:
            sig["attrs"] = [{"key": k, "value": v} for k, v in attrs]
        return sig

    def to_bytes(self) -> bytes:
        """The whole .vmfb in memory (for small modules; `write` streams large ones)."""
        import io
        built = self.build()
        out = io.BytesIO()
        write_archive(out, built.flatbuffer, built.entries)
        return out.getvalue()

    def write(self, path) -> None:
        """Writes the .vmfb to `path`, streaming external rodata; no partial file on failure."""
        path = Path(path)
        built = self.build()
        tmp = path.with_name(path.name + ".partial")
        try:
            with open(tmp, "wb") as f:
                write_archive(f, built.flatbuffer, built.entries)
            os.replace(tmp, path)
        except OSError as e:
            raise BuildError(f"{path}: cannot write ({e.strerror or e})") from None
        finally:
            if tmp.exists():
                tmp.unlink()

