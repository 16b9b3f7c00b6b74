  %lo = fcmp oge float %r, 0xC3E0000000000000
  %hi = fcmp olt float %r, 0x43E0000000000000
  %ok = and i1 %lo, %hi
  %safe = select i1 %ok, float %r, float 0.0
  %s = fptosi float %safe to i64
  %a = select i1 %ok, i64 %s, i64 -9223372036854775808
  %d = fsub float %r, 0x43E0000000000000
  %lo2 = fcmp oge float %d, 0xC3E0000000000000
  %hi2 = fcmp olt float %d, 0x43E0000000000000
  %ok2 = and i1 %lo2, %hi2
  %safe2 = select i1 %ok2, float %d, float 0.0
  %s2 = fptosi float %safe2 to i64
  %b = select i1 %ok2, i64 %s2, i64 -9223372036854775808
  %m = ashr i64 %a, 63
  %bm = and i64 %b, %m
  %c = or i64 %a, %bm
  ret i64 %c
