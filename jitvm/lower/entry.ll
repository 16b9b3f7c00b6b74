define i32 @${prefix}_entry${index}(ptr %ctx, ptr %args, ptr %results, ptr %trap) nounwind {
entry:
  %cell = getelementptr inbounds [${count} x ptr], ptr @${prefix}_cells, i64 0, i64 ${index}
  %fn = load atomic ptr, ptr %cell monotonic, align 8
  %r = musttail call i32 %fn(ptr %ctx, ptr %args, ptr %results, ptr %trap)
  ret i32 %r
}

; Baseline code counts its calls: the tier-up recompiles the functions called again.
define i32 @${prefix}_counted${index}(ptr %ctx, ptr %args, ptr %results, ptr %trap) nounwind {
entry:
  %n = getelementptr inbounds [${count} x i64], ptr @${prefix}_counts, i64 0, i64 ${index}
  %old = atomicrmw add ptr %n, i64 1 monotonic
  %cell = getelementptr inbounds [${count} x ptr], ptr @${prefix}_baseline, i64 0, i64 ${index}
  %fn = load atomic ptr, ptr %cell monotonic, align 8
  %r = musttail call i32 %fn(ptr %ctx, ptr %args, ptr %results, ptr %trap)
  ret i32 %r
}
