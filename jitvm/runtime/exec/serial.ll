; Without a pool (hosts without futex support here): split loops run on the calling thread.
define void @jv_parallel_for(ptr %pool, ptr %body, ptr %state, ptr %env, i64 %start, i64 %bound,
                             i64 %step, ptr %trap) {
entry:
  call void @run_alone(ptr %body, ptr %state, ptr %env, i64 %start, i64 %bound, ptr %trap)
  ret void
}

define void @jv_pool_run(ptr %pool) {
entry:
  ret void
}

define void @jv_pool_warm(ptr %pool) {
entry:
  ret void
}

define void @jv_pool_rest(ptr %pool) {
entry:
  ret void
}
