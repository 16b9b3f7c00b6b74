; Hosts whose control word runtime.exec.fpu does not know: nothing to read, nothing to set.
define i64 @jv_fpu_get() {
  ret i64 0
}
define void @jv_fpu_set(i64 %v) {
  ret void
}
