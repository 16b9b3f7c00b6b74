  %nan = fcmp uno float %r, %r
  %neg = fcmp ole float %r, 0.0
  %big = fcmp oge float %r, 0x43F0000000000000
  %u = fptoui float %r to i64
  %a = select i1 %big, i64 -1, i64 %u
  %b = select i1 %neg, i64 0, i64 %a
  %c = select i1 %nan, i64 0, i64 %b
  ret i64 %c
