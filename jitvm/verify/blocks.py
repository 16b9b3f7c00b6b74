"""Block structure: marker, non-terminators, one terminator; repeated; counted.

IREE's compiler and its loader agree on this shape: every block opens with a block marker,
and its terminator (branch, return, fail, yield, yieldable call...) is its last
instruction, so the instruction after a terminator is always the next block's marker. The
backends rely on it: blocks are straight-line code between a marker and a terminator, and
no instruction is reachable only by falling off the end of a function.
"""

from __future__ import annotations

from ..frontend import isa
from .model import Block

BLOCK_OP = isa.OPS[(isa.CORE, isa.BLOCK_MARKER)]


def find_blocks(fv) -> tuple[tuple[Block, ...], dict[int, int]]:
    """The function's blocks and the marker pc of each; raises on any other shape."""
    blocks: list[Block] = []
    block_of_pc: dict[int, int] = {}
    start = None  # (pc, first instruction index) of the open block
    for index, ins in enumerate(fv.instructions):
        if ins.op is BLOCK_OP:
            if start is not None:
                fv.block = len(blocks)
                raise fv.fail(ins, f"^bb{len(blocks)} has no terminator before the next block marker")
            block_of_pc[ins.pc] = len(blocks)
            start = (ins.pc, index)
            continue
        if start is None:
            fv.block = len(blocks) - 1 if blocks else None
            if not blocks:
                raise fv.fail(ins, "the function does not begin with a block marker")
            raise fv.fail(ins, f"instruction after the terminator of ^bb{len(blocks) - 1} is not "
                               f"in a block (only a block marker may follow a terminator)")
        if ins.op.terminator:
            blocks.append(Block(len(blocks), start[0], start[1], index))
            start = None
    if start is not None:
        fv.block = len(blocks)
        raise fv.fail(fv.instructions[-1], f"^bb{len(blocks)} does not end with a terminator")
    declared = fv.descriptor.block_count
    if len(blocks) != declared:
        raise fv.site.error(f"the function has {len(blocks)} blocks but its descriptor declares {declared}")
    return tuple(blocks), block_of_pc
