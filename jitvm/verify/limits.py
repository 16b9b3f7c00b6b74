"""Named bounds on what a module may ask the runtime to allocate or address.

The register limits are IREE's: a frame's register file is its count rounded up to a power
of two, addressed through the ordinal masks (15-bit i32 ordinals, 14-bit ref ordinals), so
IREE refuses at load a count whose power of two exceeds the mask ("register count overflow").
The state limits are jitvm's choice: module state is allocated when a module is loaded, so
an untrusted file must not be able to demand gigabytes with one mutated integer; real
modules keep large constants in rodata and need kilobytes of globals at most.
"""

from __future__ import annotations

MAX_I32_REGISTERS = 0x4000  # i32 ordinals are 15 bits (bit 15 marks a ref register): 2^14 fits the mask
MAX_REF_REGISTERS = 0x2000  # ref ordinals are 14 bits (bit 14 is the move bit): 2^13 fits

MAX_GLOBAL_BYTES = 64 << 20  # module_state.global_bytes_capacity
MAX_GLOBAL_REFS = 1 << 20  # module_state.global_ref_count
MAX_RWDATA_SEGMENT_BYTES = MAX_GLOBAL_BYTES  # each rwdata_segments[i].byte_size

# Block pcs are kept in 24 bits by IREE's dispatch; a longer function could not be run there.
MAX_FUNCTION_BYTES = 0xFFFFFF
