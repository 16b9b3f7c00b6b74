; hal.device.queue.execute(.indirect)'s work: a finalized command buffer's native program
; (hal.program) run with a binding table, without Python. Python is called back
; (jv_hal_py_call) for what it keeps: dispatches only it runs, preparing a segment's
; replica, a kernel that kept its arguments, the exception of a failed run.
declare i32 @jv_run_sequence(ptr, ptr, ptr)
declare i32 @jv_hal_py_call(i32, ptr, i64, i64, i64, ptr, ptr)

; IREE's resolve_ref of operand %ref against the %count (buffer, offset, length) bindings at
; %table: the buffer (or null), offset and length it names.
define internal i32 @resolve(ptr %ref, i64 %count, ptr %table, ptr %buffer_out, ptr %offset_out, ptr %length_out,
                             ptr %t) {
entry:
${fields CommandRef %ref r}
  %direct = load ptr, ptr %r.buffer
  %offset = load i64, ptr %r.offset
  %length = load i64, ptr %r.length
  %is_direct = icmp ne ptr %direct, null
  br i1 %is_direct, label %give_direct, label %table_check
give_direct:
  store ptr %direct, ptr %buffer_out
  store i64 %offset, ptr %offset_out
  store i64 %length, ptr %length_out
  ret i32 0
table_check:
  %empty = icmp eq i64 %count, 0
  br i1 %empty, label %none, label %slot
slot:
  %s = load i64, ptr %r.slot
  %inside = icmp ult i64 %s, %count
  br i1 %inside, label %binding, label %outside
binding:
  %at = mul i64 %s, 3
  %pb = getelementptr inbounds i64, ptr %table, i64 %at
  %b = load ptr, ptr %pb
  %po = getelementptr inbounds i64, ptr %pb, i64 1
  %base = load i64, ptr %po
  %pl = getelementptr inbounds i64, ptr %pb, i64 2
  %bound = load i64, ptr %pl
  %null = icmp eq ptr %b, null
  br i1 %null, label %none, label %range
range:
  %whole = icmp eq i64 %bound, -1
  %pbl = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.byte_length}
  %blen = load i64, ptr %pbl
  %rest = sub i64 %blen, %base
  %max = select i1 %whole, i64 %rest, i64 %bound
  %st = call i32 @calculate_range(i64 %max, i64 %offset, i64 %length, ptr %length_out, i32 ${K_RANGE_OFF_END},
                                  ptr %t)
  %bad = icmp ne i32 %st, 0
  br i1 %bad, label %fail, label %give
give:
  store ptr %b, ptr %buffer_out
  %absolute = add i64 %base, %offset
  store i64 %absolute, ptr %offset_out
  ret i32 0
fail:
  ret i32 %st
none:
  store ptr null, ptr %buffer_out
  store i64 0, ptr %offset_out
  store i64 0, ptr %length_out
  ret i32 0
outside:
  %so = call i32 @trap(ptr %t, i32 ${S_OUT_OF_RANGE}, i32 ${K_BINDING_OUT_OF_RANGE}, i64 %s, i64 %count, i64 0,
                       i64 0, ptr null)
  ret i32 %so
}

define internal i32 @null_binding(ptr %what, ptr %t) {
entry:
  %s = call i32 @trap(ptr %t, i32 ${S_FAILED_PRECONDITION}, i32 ${K_NULL_BINDING}, i64 0, i64 0, i64 0, i64 0,
                      ptr %what)
  ret i32 %s
}

; A fill or an update: its target resolved and required, then written.
define internal i32 @run_write(ptr %c, i32 %kind, i64 %count, ptr %table, ptr %t) {
entry:
  %b = alloca ptr
  %offset = alloca i64
  %length = alloca i64
${fields Command %c k}
  %s = call i32 @resolve(ptr %k.target, i64 %count, ptr %table, ptr %b, ptr %offset, ptr %length, ptr %t)
  %bad = icmp ne i32 %s, 0
  br i1 %bad, label %fail, label %require
require:
  %buffer = load ptr, ptr %b
  %null = icmp eq ptr %buffer, null
  %is_fill = icmp eq i32 %kind, ${COMMAND_FILL}
  br i1 %null, label %missing, label %write
missing:
  %what = select i1 %is_fill, ptr @s.fill_target, ptr @s.update_target
  %sm = call i32 @null_binding(ptr %what, ptr %t)
  ret i32 %sm
write:
  %off = load i64, ptr %offset
  %len = load i64, ptr %length
  br i1 %is_fill, label %fill, label %update
fill:
  %pattern = load i64, ptr %k.pattern
  %width = load i32, ptr %k.width
  %sf = call i32 @jv_hal_buffer_fill(ptr %buffer, i64 %off, i64 %len, i64 %pattern, i32 %width, ptr %t)
  ret i32 %sf
update:
  %data = load ptr, ptr %k.data
  %have = load i64, ptr %k.data_length
  %short = icmp ult i64 %have, %len
  %n = select i1 %short, i64 %have, i64 %len
  %su = call i32 @jv_hal_buffer_write(ptr %buffer, i64 %off, ptr %data, i64 %n, ptr %t)
  ret i32 %su
fail:
  ret i32 %s
}

define internal i32 @run_copy(ptr %c, i64 %count, ptr %table, ptr %t) {
entry:
  %src = alloca ptr
  %src_offset = alloca i64
  %src_length = alloca i64
  %dst = alloca ptr
  %dst_offset = alloca i64
  %length = alloca i64
${fields Command %c k}
  %s1 = call i32 @resolve(ptr %k.source, i64 %count, ptr %table, ptr %src, ptr %src_offset, ptr %src_length, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %target
target:
  %s2 = call i32 @resolve(ptr %k.target, i64 %count, ptr %table, ptr %dst, ptr %dst_offset, ptr %length, ptr %t)
  %bad2 = icmp ne i32 %s2, 0
  br i1 %bad2, label %fail, label %require
require:
  %a = load ptr, ptr %src
  %a_null = icmp eq ptr %a, null
  br i1 %a_null, label %no_source, label %require_target
require_target:
  %b = load ptr, ptr %dst
  %b_null = icmp eq ptr %b, null
  br i1 %b_null, label %no_target, label %copy
copy:
  %ao = load i64, ptr %src_offset
  %bo = load i64, ptr %dst_offset
  %n = load i64, ptr %length
  %sc = call i32 @jv_hal_buffer_copy(ptr %a, i64 %ao, ptr %b, i64 %bo, i64 %n, ptr %t)
  ret i32 %sc
no_source:
  %ss = call i32 @null_binding(ptr @s.copy_source, ptr %t)
  ret i32 %ss
no_target:
  %st = call i32 @null_binding(ptr @s.copy_target, ptr %t)
  ret i32 %st
fail:
  %s = phi i32 [ %s1, %entry ], [ %s2, %target ]
  ret i32 %s
}

; Whether replica %r, prepared for the signature it holds, fits this table; fills its bases.
define internal i1 @fits(ptr %seg, ptr %r, i64 %count, ptr %table) {
entry:
${fields Segment %seg g}
${fields Replica %r p}
  %valid = load i32, ptr %p.valid
  %prepared = icmp ne i32 %valid, 0
  br i1 %prepared, label %start, label %no
start:
  %n = load i64, ptr %g.slot_count
  %slots = load ptr, ptr %g.slots
  %signature = load ptr, ptr %p.signature
  %bases = load ptr, ptr %p.bases
  %any = icmp ne i64 %n, 0
  br i1 %any, label %loop, label %yes
loop:
  %k = phi i64 [ 0, %start ], [ %k1, %next ]
  %ps = getelementptr inbounds i64, ptr %slots, i64 %k
  %slot = load i64, ptr %ps
  %inside = icmp ult i64 %slot, %count
  br i1 %inside, label %binding, label %no
binding:
  %at = mul i64 %slot, 3
  %pb = getelementptr inbounds i64, ptr %table, i64 %at
  %b = load ptr, ptr %pb
  %null = icmp eq ptr %b, null
  br i1 %null, label %no, label %compare
compare:
  %po = getelementptr inbounds i64, ptr %pb, i64 1
  %base = load i64, ptr %po
  %pl = getelementptr inbounds i64, ptr %pb, i64 2
  %bound = load i64, ptr %pl
${fields HalBuffer %b h}
  %blen = load i64, ptr %h.byte_length
  %access32 = load i32, ptr %h.allowed_access
  %access = zext i32 %access32 to i64
  %sig = mul i64 %k, 4
  %q0 = getelementptr inbounds i64, ptr %signature, i64 %sig
  %w0 = load i64, ptr %q0
  %q1 = getelementptr inbounds i64, ptr %q0, i64 1
  %w1 = load i64, ptr %q1
  %q2 = getelementptr inbounds i64, ptr %q0, i64 2
  %w2 = load i64, ptr %q2
  %q3 = getelementptr inbounds i64, ptr %q0, i64 3
  %w3 = load i64, ptr %q3
  %e0 = icmp eq i64 %blen, %w0
  %e1 = icmp eq i64 %base, %w1
  %e2 = icmp eq i64 %bound, %w2
  %e3 = icmp eq i64 %access, %w3
  %e01 = and i1 %e0, %e1
  %e23 = and i1 %e2, %e3
  %same = and i1 %e01, %e23
  br i1 %same, label %next, label %no
next:
  %data = load ptr, ptr %h.data
  %first = getelementptr i8, ptr %data, i64 %base
  %pk = getelementptr inbounds ptr, ptr %bases, i64 %k
  store ptr %first, ptr %pk
  %k1 = add i64 %k, 1
  %more = icmp ult i64 %k1, %n
  br i1 %more, label %loop, label %yes
yes:
  ret i1 1
no:
  ret i1 0
}

; A segment of replayed dispatches: a free replica that fits the table runs natively; else
; Python prepares one (or runs the dispatches itself when none is free).
define internal i32 @run_segment(ptr %cb, ptr %seg, i64 %count, ptr %table, ptr %t) {
entry:
${fields Segment %seg g}
  %index = load i64, ptr %g.index
  %replicas = load ptr, ptr %g.replicas
  %n = load i64, ptr %g.replica_count
  %any = icmp ne i64 %n, 0
  br i1 %any, label %find, label %none
find:
  %i = phi i64 [ 0, %entry ], [ %i1, %taken ]
  %off = mul i64 %i, ${sizeof Replica}
  %r = getelementptr inbounds i8, ptr %replicas, i64 %off
  %busy = getelementptr inbounds i8, ptr %r, i64 ${Replica.busy}
  %x = cmpxchg ptr %busy, i32 0, i32 1 acquire monotonic
  %got = extractvalue { i32, i1 } %x, 1
  br i1 %got, label %held, label %taken
taken:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %find, label %none
none:
  %sn = call i32 @jv_hal_py_call(i32 ${RUN_SEGMENT}, ptr %cb, i64 %index, i64 -1, i64 %count, ptr %table, ptr %t)
  ret i32 %sn
held:
  %fit = call i1 @fits(ptr %seg, ptr %r, i64 %count, ptr %table)
  br i1 %fit, label %native, label %prepare
prepare:
  %sp = call i32 @jv_hal_py_call(i32 ${RUN_SEGMENT}, ptr %cb, i64 %index, i64 %i, i64 %count, ptr %table, ptr %t)
  br label %done
native:
${fields Replica %r p}
  %seq = load ptr, ptr %p.sequence
  %bases = load ptr, ptr %p.bases
  %runner = load ptr, ptr %g.runner
  %ran = call i32 @jv_run_sequence(ptr %runner, ptr %seq, ptr %bases)
  %failed = icmp ne i32 %ran, 0
  br i1 %failed, label %failure, label %touched_check
failure:
  %sf = call i32 @jv_hal_py_call(i32 ${SEGMENT_FAILURE}, ptr %cb, i64 %index, i64 %i, i64 %count, ptr %table,
                                 ptr %t)
  br label %touched_check
touched_check:
  %status = phi i32 [ 0, %native ], [ %sf, %failure ]
  %pt = getelementptr inbounds i8, ptr %seq, i64 ${Sequence.touched}
  %touched = load i32, ptr %pt
  %kept = icmp ne i32 %touched, 0
  br i1 %kept, label %release, label %done
release:
  %sr = call i32 @jv_hal_py_call(i32 ${RELEASE_SEGMENT}, ptr %cb, i64 %index, i64 %i, i64 %count, ptr %table,
                                 ptr %t)
  br label %done
done:
  %result = phi i32 [ %sp, %prepare ], [ %status, %touched_check ], [ %status, %release ]
  store atomic i32 0, ptr %busy release, align 4
  ret i32 %result
}

; Executes command buffer %cb with the %count (buffer, offset, length) bindings at %table.
define i32 @jv_hal_execute(ptr %cb, i64 %count, ptr %table, ptr %t) {
entry:
  %pp = getelementptr inbounds i8, ptr %cb, i64 ${HalCommandBuffer.program}
  %program = load ptr, ptr %pp
  %recording = icmp eq ptr %program, null
  br i1 %recording, label %not_finalized, label %capacity
capacity:
${fields CommandProgram %program g}
  %needed = load i64, ptr %g.binding_capacity
  %short = icmp ult i64 %count, %needed
  br i1 %short, label %too_small, label %start
start:
  %old = atomicrmw add ptr %g.submissions, i64 1 monotonic
  %commands = load ptr, ptr %g.commands
  %n = load i64, ptr %g.count
  %any = icmp ne i64 %n, 0
  br i1 %any, label %loop, label %done
loop:
  %i = phi i64 [ 0, %start ], [ %i1, %advance ]
  %off = mul i64 %i, ${sizeof Command}
  %c = getelementptr inbounds i8, ptr %commands, i64 %off
${fields Command %c k}
  %kind = load i32, ptr %k.kind
  switch i32 %kind, label %python [ i32 ${COMMAND_FILL}, label %write
                                    i32 ${COMMAND_UPDATE}, label %write
                                    i32 ${COMMAND_COPY}, label %copy
                                    i32 ${COMMAND_SEGMENT}, label %segment ]
write:
  %sw = call i32 @run_write(ptr %c, i32 %kind, i64 %count, ptr %table, ptr %t)
  br label %next
copy:
  %sc = call i32 @run_copy(ptr %c, i64 %count, ptr %table, ptr %t)
  br label %next
segment:
  %seg = load ptr, ptr %k.segment
  %ss = call i32 @run_segment(ptr %cb, ptr %seg, i64 %count, ptr %table, ptr %t)
  br label %next
python:
  %index = load i64, ptr %k.index
  %sp = call i32 @jv_hal_py_call(i32 ${RUN_COMMAND}, ptr %cb, i64 %index, i64 0, i64 %count, ptr %table, ptr %t)
  br label %next
next:
  %s = phi i32 [ %sw, %write ], [ %sc, %copy ], [ %ss, %segment ], [ %sp, %python ]
  %failed = icmp ne i32 %s, 0
  br i1 %failed, label %fail, label %advance
advance:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %done
done:
  ret i32 0
fail:
  ret i32 %s
not_finalized:
  %sn = call i32 @trap(ptr %t, i32 ${S_FAILED_PRECONDITION}, i32 ${K_NOT_FINALIZED}, i64 0, i64 0, i64 0, i64 0,
                       ptr null)
  ret i32 %sn
too_small:
  %st = call i32 @trap(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_TABLE_TOO_SMALL}, i64 %count, i64 %needed, i64 0,
                       i64 0, ptr null)
  ret i32 %st
}
