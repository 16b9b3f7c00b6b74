; hal.buffer_view.${name}(view)    0r_i
define i32 @jv_hal_buffer_view_${name}(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %v = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %v, i32 ${HAL_BUFFER_VIEW})
  br i1 %ok, label %give, label %bad
give:
  %p = getelementptr inbounds i8, ptr %v, i64 ${offset}
${if wide}  %x = load i64, ptr %p
${if wide}  %low = trunc i64 %x to i32
${if not wide}  %low = load i32, ptr %p
  %r = zext i32 %low to i64
  call void @give(ptr %results, i64 0, i64 %r)
  ret i32 0
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_view_${name}, i32 ${HAL_BUFFER_VIEW}, ptr %v)
  ret i32 %s
}
