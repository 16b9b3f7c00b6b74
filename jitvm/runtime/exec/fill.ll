w${width}:
${if not wide}  %p${width} = trunc i64 %pattern to i${bits}
${if wide}  %p${width} = or i64 %pattern, 0
  %n${width} = udiv i64 %len, ${width}
  %e${width} = icmp eq i64 %n${width}, 0
  br i1 %e${width}, label %d${width}, label %l${width}
l${width}:
  %i${width} = phi i64 [ 0, %w${width} ], [ %i${width}.1, %l${width} ]
  %q${width} = getelementptr inbounds i${bits}, ptr %dst, i64 %i${width}
  store i${bits} %p${width}, ptr %q${width}, align 1
  %i${width}.1 = add i64 %i${width}, 1
  %m${width} = icmp ult i64 %i${width}.1, %n${width}
  br i1 %m${width}, label %l${width}, label %d${width}
d${width}:
  ret void
