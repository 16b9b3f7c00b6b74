; The control word on x86_64 (runtime.exec.fpu): MXCSR.
declare void @llvm.x86.sse.stmxcsr(ptr)
declare void @llvm.x86.sse.ldmxcsr(ptr)
define i64 @jv_fpu_get() {
  %p = alloca i32
  call void @llvm.x86.sse.stmxcsr(ptr %p)
  %v = load i32, ptr %p
  %w = zext i32 %v to i64
  ret i64 %w
}
define void @jv_fpu_set(i64 %w) {
  %p = alloca i32
  %v = trunc i64 %w to i32
  store i32 %v, ptr %p
  call void @llvm.x86.sse.ldmxcsr(ptr %p)
  ret void
}
