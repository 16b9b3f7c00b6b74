"""The native memory layout of every runtime object, described once.

JIT-compiled code reads and writes these structs directly; Python sees them through
ctypes views generated from the same description, and the LLVM struct types used by the
lowering come from it too, so the three can never disagree.

A ref is a pointer to an object that starts with `Object`: an atomic reference count, the
runtime type id and a destroy function called when the count drops to zero.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache
from dataclasses import dataclass

# Field types: scalar names, "ptr", another struct's name, or ("array", type, count).
_SCALARS = {
    "i8": ctypes.c_int8, "u8": ctypes.c_uint8, "i16": ctypes.c_int16, "u16": ctypes.c_uint16,
    "i32": ctypes.c_int32, "u32": ctypes.c_uint32, "i64": ctypes.c_int64, "u64": ctypes.c_uint64,
    "f32": ctypes.c_float, "f64": ctypes.c_double, "ptr": ctypes.c_void_p,
}

STRUCTS: dict[str, list[tuple[str, object]]] = {
    # Every ref-counted object starts with this header.
    "Object": [
        ("refcount", "i64"),  # atomic; the object is destroyed when it drops to zero
        ("type_id", "u32"),  # runtime type id (see runtime.types)
        ("flags", "u32"),
        ("destroy", "ptr"),  # void (*)(Object*): frees the object and what it owns
    ],
    # vm.buffer: a byte span with access rights, possibly a view of another object's memory.
    "Buffer": [
        ("header", "Object"),
        ("data", "ptr"),
        ("length", "u64"),
        ("access", "u32"),  # BUFFER_MUTABLE | BUFFER_ORIGIN_*
        ("reserved", "u32"),
        ("origin", "ptr"),  # Object* kept alive while the buffer lives (null if none)
        ("allocation", "ptr"),  # memory to free on destroy (null if borrowed)
    ],
    # vm.list: values stored densely, refs as pointers, or 16-byte variants.
    "List": [
        ("header", "Object"),
        ("mode", "u32"),  # LIST_VALUE, LIST_REF or LIST_VARIANT
        ("element_type", "u32"),  # value type code (VALUE) or ref type id, 0 = any (REF)
        ("element_size", "u32"),
        ("size", "u32"),
        ("capacity", "u32"),
        ("reserved", "u32"),
        ("storage", "ptr"),
    ],
    # One element of a variant list.
    "Variant": [
        ("tag", "u32"),  # VARIANT_EMPTY, a value type code, or VARIANT_REF
        ("reserved", "u32"),
        ("bits", "u64"),  # the value (low bytes) or the Object* for refs
    ],
    # Where an invocation's failure is recorded, innermost frame first.
    "Frame": [
        ("module", "ptr"),  # ModuleState* of the frame
        ("function", "i32"),
        ("pc", "i32"),
    ],
    # A failure kept for later (a failed HAL semaphore's) and the first fields of every trap
    # record: what Python formats into a message (runtime.vm.traps).
    "Failure": [
        ("status", "i32"),  # IREE status code
        ("kind", "i32"),  # a TrapKind from runtime.vm.traps, formats `args`, `message` and `inner`
        ("args", ("array", "i64", 4)),
        ("message", "ptr"),  # NUL-terminated text owned by the failure (malloc), or null
        ("inner", "ptr"),  # the owned Failure this one's message wraps, or null
    ],
    "Trap": [
        ("status", "i32"),  # IREE status code; 0 while nothing failed
        ("kind", "i32"),  # a TrapKind from runtime.vm.traps, formats `args` into a message
        ("args", ("array", "i64", 4)),
        ("message", "ptr"),  # optional NUL-terminated text (static, owned by Python, or `message_owned`)
        ("inner", "ptr"),  # an owned Failure the kind's message wraps (a waited-on fence's), or null
        ("message_owned", "u32"),  # 1: `message` was malloc'd for this record, freed when it is taken
        ("frame_count", "i32"),
        ("depth", "i32"),  # current VM call depth of the invocation using this record
        ("reserved", "u32"),
        ("pool", "ptr"),  # an idle dispatch thread pool the invocation may split loops over, or null
        ("frames", ("array", "Frame", 32)),
    ],
    # An import slot: a callee with the uniform native ABI (see runtime.vm.abi).
    "Import": [
        ("fn", "ptr"),  # i32 (*)(void* ctx, u64* args, u64* results, Trap*)
        ("ctx", "ptr"),
        ("resolved", "u32"),
        ("reserved", "u32"),
    ],
    # The HAL's objects (runtime.modules.hal): created and destroyed by native code (objects.ll);
    # the Python classes are views of these structs. Bit sets are IREE's uint32s.
    "HalAllocator": [
        ("header", "Object"),
        ("bytes_allocated", "u64"),  # a statistic (atomic)
    ],
    "HalBuffer": [
        ("header", "Object"),
        ("memory", "ptr"),  # the vm.buffer holding the allocation's bytes (retained)
        ("data", "ptr"),  # this buffer's first byte: memory's data + byte_offset
        ("byte_offset", "u64"),  # of this buffer inside the allocation
        ("byte_length", "u64"),
        ("memory_type", "u32"),
        ("allowed_access", "u32"),
        ("allowed_usage", "u32"),
        ("preserve_count", "u32"),  # an allocation's hal.buffer.allocation.preserve count
        ("parent", "ptr"),  # the allocation a subspan views (retained), null for an allocation
    ],
    "HalBufferView": [
        ("header", "Object"),
        ("buffer", "ptr"),  # the view's hal.buffer (retained)
        ("element_type", "u32"),
        ("encoding_type", "u32"),
        ("rank", "u64"),
        ("dims", ("array", "i64", 0)),  # `rank` of them, stored after the struct
    ],
    # A timeline semaphore: a value that only grows, or a failure once failed.
    "HalSemaphore": [
        ("header", "Object"),
        ("value", "u64"),
        ("failed", "u32"),  # 1 once failed (the failure's status may be 0: fence.fail with status 0)
        ("reserved", "u32"),
        ("failure", "Failure"),
    ],
    "Timepoint": [
        ("semaphore", "ptr"),  # retained by the fence
        ("value", "u64"),
    ],
    "HalFence": [
        ("header", "Object"),
        ("count", "u64"),
        ("timepoints", ("array", "Timepoint", 0)),  # `count` of them (one per semaphore), after the struct
    ],
    # The native part of the device (a Python object: loader, runner, format policy).
    "HalDevice": [
        ("header", "Object"),
        ("allocator", "ptr"),  # the device's hal.allocator (held by the device)
    ],
    # A finalized command buffer as native code executes it (hal.command_buffer records in
    # Python, then builds this): its commands in order, barriers left out.
    "HalCommandBuffer": [
        ("header", "Object"),
        ("program", "ptr"),  # CommandProgram, null until finalized
    ],
    "CommandProgram": [
        ("commands", "ptr"),  # Command[count]
        ("count", "u64"),
        ("binding_capacity", "u64"),
        ("submissions", "u64"),  # atomic
    ],
    # A buffer operand: `buffer` (a HalBuffer the recording keeps), or binding table slot `slot`.
    "CommandRef": [("buffer", "ptr"), ("slot", "u64"), ("offset", "u64"), ("length", "u64")],
    "Command": [
        ("kind", "u32"),  # hal.program: COMMAND_FILL, _UPDATE, _COPY, _SEGMENT, _PYTHON
        ("width", "u32"),  # a fill's pattern length
        ("pattern", "u64"),
        ("target", "CommandRef"),
        ("source", "CommandRef"),  # a copy's
        ("data", "ptr"), ("data_length", "u64"),  # an update's bytes, captured when recorded
        ("segment", "ptr"),  # Segment of replayed dispatches
        ("index", "u64"),  # the command (or segment) index Python knows it by
    ],
    # Consecutive recorded dispatches replayed by one native sequence (hal.prepared): the
    # table slots their bindings use, and replicas, each a prepared sequence one execution
    # at a time holds (executions on several threads at once take different ones).
    "Segment": [
        ("slots", "ptr"),  # u64 table slot per slot index
        ("slot_count", "u64"),
        ("replicas", "ptr"),  # Replica[replica_count]
        ("replica_count", "u64"),
        ("index", "u64"),  # the segment's index in its command buffer
        ("runner", "ptr"),  # the Runner its sequences run on
    ],
    "Replica": [
        ("busy", "u32"),  # taken with a compare-and-swap by an execution
        ("valid", "u32"),  # the sequence and signature are prepared
        ("sequence", "ptr"),  # Sequence
        ("signature", "ptr"),  # per slot index: byte length, base offset, length, access (u64 each)
        ("bases", "ptr"),  # per slot index: the address of the slot's first byte in this execution
    ],
    # Per-context state of one bytecode module instance.
    "ModuleState": [
        ("rwdata", "ptr"),  # global bytes
        ("rwdata_size", "u64"),
        ("refs", "ptr"),  # Object* globals
        ("ref_count", "u64"),
        ("rodata", "ptr"),  # Buffer* per rodata segment (owned by the loaded module)
        ("rodata_count", "u64"),
        ("imports", "ptr"),  # Import[]
        ("import_count", "u64"),
        ("functions", "ptr"),  # native entry point per internal function (null: not compiled)
        ("function_count", "u64"),
    ],
    # A numpy array as CPython and numpy lay it out (numpy's public PyArrayObject_fields): the
    # native call plan (jitvm.api.plan) reads arguments' arrays through it, after checking the
    # offsets against a live array once per process.
    "NumpyArray": [
        ("refcount", "i64"), ("type", "ptr"),  # PyObject_HEAD
        ("data", "ptr"), ("nd", "i32"), ("_pad", "i32"), ("dimensions", "ptr"), ("strides", "ptr"),
        ("base", "ptr"), ("descr", "ptr"), ("flags", "i32"),
    ],
    # How one reflected function is called natively from numpy (jitvm.api.plan): the VM entry,
    # where input buffers are allocated, and per input and output what to check and make.
    "CallPlan": [
        ("fn", "ptr"), ("ctx", "ptr"),  # the function's native entry (runtime.vm.abi)
        ("allocator", "ptr"),  # the HAL's allocator, for the input buffers
        ("ndarray", "ptr"),  # numpy.ndarray's type object: only exact arrays take the native path
        ("inputs", "ptr"), ("input_count", "u64"),  # PlanValue each
        ("outputs", "ptr"), ("output_count", "u64"),
        ("fenced", "u32"), ("_pad", "u32"),  # coarse-fences: a null wait fence and a signal fence follow the inputs
        ("what", "ptr"),  # what a failed signal fence's wait names
    ],
    # An input or output: a scalar slot (tensor 0), or a tensor of `rank` dims (-1: any) whose
    # arrays may be of `dtypes` numpy dtypes (descriptor pointers), each with its element type
    # and item size; an output's first element type is the one its view must have.
    "PlanValue": [
        ("tensor", "u32"), ("dtype_count", "u32"),
        ("rank", "u64"), ("dims", "ptr"),
        ("dtypes", ("array", "ptr", 4)), ("element_types", ("array", "u32", 4)), ("itemsizes", ("array", "u64", 4)),
    ],
    # CPython's method definition (Include/methodobject.h): a plan's native entry is a
    # builtin function object made from one (jitvm.api.entry).
    "PyMethodDef": [("name", "ptr"), ("meth", "ptr"), ("flags", "i32"), ("_pad", "i32"), ("doc", "ptr")],
    # A reflected function's native entry (jitvm.api.entry): the builtin's `self` is a capsule
    # of this record, whose destructor drops `owner`, the Python object keeping it all alive.
    "PlanEntry": [
        ("plan", "ptr"),  # CallPlan
        ("general", "ptr"),  # PyObject*: the Python call of the same arguments (declined calls)
        ("complete", "ptr"),  # PyObject*: (status, io address) -> the results, or the trap raised
        ("descrs", "ptr"),  # per output: the numpy dtype (PyArray_Descr*) of its array
        ("words", "u64"),  # u64 words of a call's io array (jv_invoke's: slots and trap record)
        ("owner", "ptr"),  # PyObject*: one reference, dropped with the capsule
    ],
    # The words a dispatch pool's threads share: wake-up and completion, then the posted job.
    "Pool": [
        # First: split-loop guards read it branch-free (lower.loops.parallel): innermost
        # iterations below which a loop nest is not split across the pool.
        ("split_min_work", "u64"),
        ("splits", "u64"),  # loops split so far (a statistic)
        ("generation", "u32"), ("generation_sleepers", "u32"),
        ("gate", "u32"), ("gate_sleepers", "u32"),  # threads inside | closed
        ("shutdown", "u32"), ("threads", "u32"),  # shares in the posted dispatch
        ("spin_ns", "u64"),
        # 1 while the holder runs steps on the pool (waiting threads spin for the next one);
        # 0 once it runs on its own thread: waiting threads go to sleep at once, not after
        # spin_ns of taking a core from the caller and everything else on the machine.
        ("linger", "u32"), ("_pad5", "u32"),
        ("fn", "ptr"), ("ctx", "ptr"), ("consts", "ptr"), ("bindings", "ptr"),
        ("cx", "u32"), ("cy", "u32"), ("cz", "u32"), ("stop", "i32"),
        ("next", "u64"), ("total", "u64"), ("flush", "u64"), ("chunk", "u64"),
        ("locals", "ptr"), ("traps", "ptr"),  # per share: ptr arrays
        ("failed", "ptr"), ("statuses", "ptr"),  # per share: u64 and i32 arrays
        # A split loop (kind 1) instead of a grid (kind 0): body(state, [lo, hi], env, trap)
        # over iterations start + i * step, i < total, the last chunk ending at bound.
        ("kind", "u32"), ("_pad3", "u32"),
        ("body", "ptr"), ("state", "ptr"), ("env", "ptr"), ("loop_trap", "ptr"),
        ("start", "i64"), ("step", "i64"), ("bound", "i64"),
        # 1 while a sequence or a direct call holds the pool (posts to it or lends it to split
        # loops); taken with a compare-and-swap, never waited for (runtime.exec.workers).
        ("holder", "u32"), ("_pad4", "u32"),
    ],
    # A dispatch runner's state native code reads (runtime.exec.runner): its pool and policy knobs.
    "Runner": [
        ("pool", "ptr"),  # the runner's Pool, or null (one thread, or not started yet)
        ("force", "u32"),  # nonzero: every grid runs on this many threads (tests)
        ("warm", "u32"),  # sequences of several steps wake parked pool threads first
        ("last_threads", "u32"),  # how many threads the last dispatch ran on
        ("_pad", "u32"),
    ],
    # Measured seconds per workgroup of one entry: on the calling thread alone, on all.
    "Cost": [
        ("runs", "u64"), ("one", "f64"), ("many", "f64"), ("has_one", "u32"), ("has_many", "u32"),
        ("next_probe", "u64"), ("interval", "u64"), ("best", "u32"), ("_pad", "u32"),
    ],
    # A binding view to repoint: data = bases[slot] + offset (slot -1: offset is the address);
    # `view` is the vm.buffer to repoint, or a library step's binding pointer.
    "View": [
        ("view", "ptr"), ("slot", "i64"), ("offset", "u64"), ("length", "u64"), ("access", "u32"),
        ("_pad", "u32"),
    ],
    # One dispatch of a native sequence: the VMVX entry's arguments and where its views point.
    # `owned`: the arguments belong to the sequence (local memory is zeroed first, the
    # kernel's use of them checked after); a single dispatch from Python brings its own. A
    # fill instead when `fill_width` (1, 2, 4 or 8) is set: `pattern` over its one view's range.
    # `library`: an llvm-cpu export (runtime.exec.library): `fn` is the adapter, `ctx` its
    # LibraryCall, and each view's `view` the binding pointer to repoint; `sequential`: the
    # export asks for its workgroups in order, on one thread.
    "Step": [
        ("fn", "ptr"), ("ctx", "ptr"), ("consts", "ptr"), ("bindings", "ptr"), ("local", "ptr"),
        ("local_data", "ptr"), ("local_size", "u64"), ("helper_locals", "ptr"), ("helper_data", "ptr"),
        ("cost", "ptr"), ("views", "ptr"), ("view_count", "u64"), ("total", "u64"),
        ("cx", "u32"), ("cy", "u32"), ("cz", "u32"), ("owned", "u32"), ("touched", "u32"),
        ("fill_width", "u32"), ("pattern", "u64"), ("ran_on", "u32"), ("library", "u32"),
        ("sequential", "u32"), ("_pad", "u32"),
    ],
    # Steps and what running them needs: per share (thread) a trap record, the lowest failing
    # workgroup and the status, and the local memory handed to the pool.
    "Sequence": [
        ("steps", "ptr"), ("count", "u64"), ("threads", "u32"), ("force", "u32"), ("flush", "u64"),
        ("traps", "ptr"), ("failed", "ptr"), ("statuses", "ptr"), ("locals", "ptr"),
        ("failed_step", "u64"), ("last_threads", "u32"), ("touched", "u32"), ("warm", "u32"),
        # Whether the last run posted work to the pool or split a loop on it: only then
        # does the next run wake the pool first (a woken thread spins, and on this VM a
        # spinning sibling slowed one-thread sequences by 20-45%).
        ("used_pool", "u32"),
    ],
    # One kernel call of the opt-in workgroup trace (runtime.exec.trace).
    "TraceRecord": [
        ("thread", "i64"),  # pthread_self()
        ("kind", "i64"),  # a workgroup (trace.GRID) or a chunk of a split loop (trace.SPLIT)
        ("index", "i64"),  # the workgroup's linear index, or the chunk's first iteration
        ("start_ns", "i64"), ("end_ns", "i64"),  # CLOCK_MONOTONIC
        ("function", "i64"),  # the address called
    ],
    # IREE's executable library ABI, version 0.6 (runtime/src/iree/hal/local/executable_library.h):
    # what an llvm-cpu library's query returns (runtime.modules.hal.library reads it) and what
    # its exports are called with (runtime.exec.library). C's natural alignment and padding.
    "ExeLibraryHeader": [
        ("version", "u32"),
        ("name", "ptr"),  # const char*
        ("features", "u32"),  # IREE_HAL_EXECUTABLE_LIBRARY_FEATURE_*: none are defined (0)
        ("sanitizer", "u32"),  # SANITIZERS
    ],
    "ExeImportTable": [
        ("count", "u32"),
        ("symbols", "ptr"),  # const char* const*: names, "?name" for weak imports
    ],
    "ExeExportTable": [
        ("count", "u32"),
        ("ptrs", "ptr"),  # dispatch function per export
        ("attrs", "ptr"),  # ExeDispatchAttrs per export (required)
        ("params", "ptr"),  # optional: ExeDispatchParameter* per export
        ("occupancy", "ptr"),  # optional
        ("names", "ptr"),  # const char* per export (required when count > 0)
        ("tags", "ptr"),  # optional const char* per export
        ("parameter_names", "ptr"),  # optional string table
        ("source_locations", "ptr"),  # optional ExeSourceLocation per export
        ("stage_locations", "ptr"),  # optional ExeStageLocationTable per export
    ],
    "ExeConstantTable": [
        ("count", "u32"),  # executable-level constants the library expects
    ],
    "ExeSourceFileTable": [
        ("count", "u32"),
        ("files", "ptr"),
    ],
    "ExeLibraryV0": [
        ("header", "ptr"),  # ExeLibraryHeader*
        ("imports", "ExeImportTable"),
        ("exports", "ExeExportTable"),
        ("constants", "ExeConstantTable"),
        ("sources", "ExeSourceFileTable"),
    ],
    "ExeDispatchAttrs": [
        ("flags", "u64"),  # DISPATCH_FLAG_*
        ("local_memory_pages", "u16"),  # of LOCAL_MEMORY_PAGE bytes
        ("constant_count", "u8"),
        ("binding_count", "u8"),
        ("workgroup_size_x", "u32"),
        ("workgroup_size_y", "u32"),
        ("workgroup_size_z", "u16"),
        ("parameter_count", "u16"),
        ("reserved", ("array", "u64", 5)),
    ],
    "ExeDispatchParameter": [
        ("type", "u8"),  # 0 constant, 1 binding, 2 buffer pointer
        ("size", "u8"),
        ("flags", "u16"),
        ("name", "u16"),  # index into parameter_names
        ("offset", "u16"),
    ],
    "ExeSourceLocation": [
        ("line", "u32"),
        ("path_length", "u32"),
        ("path", "ptr"),
    ],
    "ExeStageLocationTable": [
        ("count", "u32"),
        ("names", "ptr"),
        ("locations", "ptr"),
    ],
    "ExeProcessor": [
        ("data", ("array", "u64", 8)),  # data[0]: CPU feature bits
    ],
    "ExeEnvironment": [
        ("constants", "ptr"),  # const uint32_t*: executable-level constants
        ("import_thunk", "ptr"),  # int (*)(fn, params, context, reserved)
        ("import_funcs", "ptr"),  # one per import (null: unresolved weak import)
        ("import_contexts", "ptr"),
        ("processor", "ExeProcessor"),
    ],
    "ExeDispatchState": [
        ("workgroup_size_x", "u32"),
        ("workgroup_size_y", "u32"),
        ("workgroup_size_z", "u16"),
        ("constant_count", "u16"),
        ("workgroup_count_x", "u32"),
        ("workgroup_count_y", "u32"),
        ("workgroup_count_z", "u16"),
        ("max_concurrency", "u8"),
        ("binding_count", "u8"),
        ("constants", "ptr"),  # const uint32_t*
        ("binding_ptrs", "ptr"),  # void* const*
        ("binding_lengths", "ptr"),  # const size_t*
    ],
    "ExeWorkgroupState": [
        ("workgroup_id_x", "u32"),
        ("workgroup_id_y", "u32"),
        ("workgroup_id_z", "u16"),
        ("reserved", "u16"),
        ("processor_id", "u32"),
        ("local_memory", "ptr"),
        ("local_memory_size", "u32"),
    ],
    # One library dispatch as the grid walker calls it (runtime.exec.library): the export, the
    # library's environment, its name for trap messages, and the dispatch state its
    # workgroups share (binding pointers patched per run by a replayed step).
    "LibraryCall": [
        ("fn", "ptr"),  # int (*)(const ExeEnvironment*, const ExeDispatchState*, const ExeWorkgroupState*)
        ("environment", "ptr"),
        ("name", "ptr"),  # NUL-terminated export name
        ("state", "ExeDispatchState"),
    ],
}

# Object.flags / Buffer.access / List.mode / Variant.tag values shared by both backends.
BUFFER_MUTABLE = 1 << 0
BUFFER_ORIGIN_MODULE = 1 << 1
BUFFER_ORIGIN_GUEST = 1 << 2
BUFFER_ORIGIN_HOST = 1 << 3

LIST_VALUE, LIST_REF, LIST_VARIANT = 0, 1, 2

# Value type codes (list element types, variant tags); 0 means none/empty.
VALUE_CODES = {"i8": 1, "i16": 2, "i32": 3, "i64": 4, "f32": 5, "f64": 6}
VALUE_NAMES = {v: k for k, v in VALUE_CODES.items()}
VALUE_SIZES = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "f32": 4, "f64": 8}
VARIANT_EMPTY = 0
VARIANT_REF = 15


@dataclass(frozen=True)
class FieldInfo:
    """A struct field's position, byte offset and type."""

    name: str
    index: int  # position in the struct (LLVM GEP index)
    offset: int  # byte offset
    type: object


def _ctype(t):
    if isinstance(t, tuple):
        _, inner, n = t
        return _ctype(inner) * n
    if t in _SCALARS:
        return _SCALARS[t]
    return CTYPES[t]


CTYPES: dict[str, type[ctypes.Structure]] = {}
for _name, _fields in STRUCTS.items():
    CTYPES[_name] = type(_name, (ctypes.Structure,), {"_fields_": [(n, _ctype(t)) for n, t in _fields]})

ObjectT = CTYPES["Object"]
BufferT = CTYPES["Buffer"]
ListT = CTYPES["List"]
VariantT = CTYPES["Variant"]
FrameT = CTYPES["Frame"]
FailureT = CTYPES["Failure"]
TrapT = CTYPES["Trap"]
ImportT = CTYPES["Import"]
ModuleStateT = CTYPES["ModuleState"]
PoolT = CTYPES["Pool"]
RunnerT = CTYPES["Runner"]
NumpyArrayT = CTYPES["NumpyArray"]
CallPlanT = CTYPES["CallPlan"]
PlanValueT = CTYPES["PlanValue"]
PyMethodDefT = CTYPES["PyMethodDef"]
PlanEntryT = CTYPES["PlanEntry"]
CostT = CTYPES["Cost"]
ViewT = CTYPES["View"]
StepT = CTYPES["Step"]
SequenceT = CTYPES["Sequence"]
TraceRecordT = CTYPES["TraceRecord"]


# A trap record starts with a Failure's fields (native code copies one into the other).
assert all(getattr(TrapT, n).offset == getattr(FailureT, n).offset for n, _ in STRUCTS["Failure"])


@lru_cache(maxsize=None)
def field(struct: str, name: str) -> FieldInfo:
    """Field `name` of `struct` (asked per placeholder by every template rendered: kept)."""
    for i, (n, t) in enumerate(STRUCTS[struct]):
        if n == name:
            return FieldInfo(n, i, getattr(CTYPES[struct], n).offset, t)
    raise KeyError(f"{struct}.{name}")


def sizeof(struct: str) -> int:
    return ctypes.sizeof(CTYPES[struct])


def llvm_types(ir) -> dict[str, object]:
    """LLVM identified struct types for every struct, built in llvmlite's `ir` namespace.

    Pointers are opaque (`ptr`), matching LLVM's typed-pointer-free IR.
    """
    ctx = ir.Context()
    out: dict[str, object] = {}

    def lower(t):
        if isinstance(t, tuple):
            _, inner, n = t
            return ir.ArrayType(lower(inner), n)
        if t == "ptr":
            return ir.PointerType()
        if t in ("f32",):
            return ir.FloatType()
        if t in ("f64",):
            return ir.DoubleType()
        if t in _SCALARS:
            return ir.IntType(ctypes.sizeof(_SCALARS[t]) * 8)
        return out[t]

    for name, fields in STRUCTS.items():
        st = ctx.get_identified_type("jitvm." + name)
        st.set_body(*[lower(t) for _, t in fields])
        out[name] = st
    return out
