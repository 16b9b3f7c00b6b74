; llvm-cpu library exports on the grid walker (runtime.exec.library): a workgroup of the VMVX
; entry ABI, fn(ctx, args, results, trap) with args = local memory, constants, bindings,
; workgroup id x, y, z, ..., called as IREE's executable library ABI calls an export.
declare i32 @sched_getcpu()

; One workgroup of the dispatch %call (a LibraryCall): the export called with the library's
; environment, the dispatch state and a workgroup state of this call's own, whose local
; memory is the share's (args[0], a vm.buffer: zeroed, 64-byte aligned). A nonzero return
; is IREE's "catastrophic error", recorded with the export's name and the workgroup.
define i32 @jv_library_workgroup(ptr %call, ptr %args, ptr %results, ptr %trap) {
entry:
${fields LibraryCall %call c}
  %ws = alloca [${sizeof ExeWorkgroupState} x i8], align 64
  %local = load ptr, ptr %args
  %pdata = getelementptr inbounds i8, ptr %local, i64 ${Buffer.data}
  %data = load ptr, ptr %pdata
  %plength = getelementptr inbounds i8, ptr %local, i64 ${Buffer.length}
  %length = load i64, ptr %plength
  %length32 = trunc i64 %length to i32
  %px = getelementptr inbounds i64, ptr %args, i64 3
  %x = load i64, ptr %px
  %py = getelementptr inbounds i64, ptr %args, i64 4
  %y = load i64, ptr %py
  %pz = getelementptr inbounds i64, ptr %args, i64 5
  %z = load i64, ptr %pz
  %x32 = trunc i64 %x to i32
  %y32 = trunc i64 %y to i32
  %z16 = trunc i64 %z to i16
  %wx = getelementptr inbounds i8, ptr %ws, i64 ${ExeWorkgroupState.workgroup_id_x}
  store i32 %x32, ptr %wx
  %wy = getelementptr inbounds i8, ptr %ws, i64 ${ExeWorkgroupState.workgroup_id_y}
  store i32 %y32, ptr %wy
  %wz = getelementptr inbounds i8, ptr %ws, i64 ${ExeWorkgroupState.workgroup_id_z}
  store i16 %z16, ptr %wz
  %wr = getelementptr inbounds i8, ptr %ws, i64 ${ExeWorkgroupState.reserved}
  store i16 0, ptr %wr
  %cpu = call i32 @sched_getcpu()
  %unknown = icmp slt i32 %cpu, 0
  %processor = select i1 %unknown, i32 0, i32 %cpu
  %wp = getelementptr inbounds i8, ptr %ws, i64 ${ExeWorkgroupState.processor_id}
  store i32 %processor, ptr %wp
  %wl = getelementptr inbounds i8, ptr %ws, i64 ${ExeWorkgroupState.local_memory}
  store ptr %data, ptr %wl
  %wn = getelementptr inbounds i8, ptr %ws, i64 ${ExeWorkgroupState.local_memory_size}
  store i32 %length32, ptr %wn
  %fn = load ptr, ptr %c.fn
  %env = load ptr, ptr %c.environment
  %rc = call i32 %fn(ptr %env, ptr %c.state, ptr %ws)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %done, label %fail
fail:
${fields Trap %trap t}
  store i32 ${S_INTERNAL}, ptr %t.status
  store i32 ${K_LIBRARY_FAILED}, ptr %t.kind
  %rc64 = sext i32 %rc to i64
  store i64 %rc64, ptr %t.args
  %a1 = getelementptr inbounds i64, ptr %t.args, i64 1
  store i64 %x, ptr %a1
  %a2 = getelementptr inbounds i64, ptr %t.args, i64 2
  store i64 %y, ptr %a2
  %a3 = getelementptr inbounds i64, ptr %t.args, i64 3
  store i64 %z, ptr %a3
  %name = load ptr, ptr %c.name
  store ptr %name, ptr %t.message
  store i32 0, ptr %t.message_owned
  ret i32 ${S_INTERNAL}
done:
  ret i32 0
}

; The environment's import thunk: jitvm resolves no import (weak ones stay null, which a
; library checks before calling), so a call means the library ignored a null import: it
; fails instead of jumping to address 0.
define i32 @jv_library_import_thunk(ptr %fn, ptr %params, ptr %context, ptr %reserved) {
entry:
  ret i32 -1
}
