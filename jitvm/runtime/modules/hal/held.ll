define i32 @${name}(ptr %python, ptr %args, ptr %results, ptr %trap) {
entry:
  %o = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %o, i32 ${type_id})
  br i1 %ok, label %fast, label %slow
fast:
  %p = getelementptr inbounds i8, ptr %o, i64 ${offset}
  %held = load ptr, ptr %p
  call void @jv_retain(ptr %held)
  store ptr %held, ptr %results
  ret i32 0
slow:
  %s = call i32 %python(ptr null, ptr %args, ptr %results, ptr %trap)
  ret i32 %s
}
