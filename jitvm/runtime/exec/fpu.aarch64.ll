; The control word on aarch64 (runtime.exec.fpu): FPCR.
declare i64 @llvm.aarch64.get.fpcr()
declare void @llvm.aarch64.set.fpcr(i64)
define i64 @jv_fpu_get() {
  %v = call i64 @llvm.aarch64.get.fpcr()
  ret i64 %v
}
define void @jv_fpu_set(i64 %v) {
  call void @llvm.aarch64.set.fpcr(i64 %v)
  ret void
}
