// f64 math kept in f64 (no demotion): transcendental and rounding functions.
// (VMVX lowers f32->f64 extension but not f64->f32 truncation nor f64<->int casts; those
// opcodes are covered by the vmasm corpus.)
// FLAGS: --iree-input-demote-f64-to-f32=false
// TARGETS: vmvx
// (llvm-cpu: iree-compile 3.13 cannot lower f64 math.erf for it)
// CALL @f64_unary(16xf64)
// CALL @f64_binary(9xf64, 9xf64)
// CALL @f64_convert(6xf64, 6xf32)
func.func @f64_unary(%x: tensor<16xf64>) -> (tensor<16xf64>, tensor<16xf64>, tensor<16xf64>, tensor<16xf64>) {
  %one = arith.constant dense<1.0> : tensor<16xf64>
  %ax = math.absf %x : tensor<16xf64>
  %pos = arith.addf %ax, %one : tensor<16xf64>
  %e = math.exp %x : tensor<16xf64>
  %l = math.log %pos : tensor<16xf64>
  %s = math.sqrt %pos : tensor<16xf64>
  %t = math.tanh %x : tensor<16xf64>
  %a = arith.addf %e, %l : tensor<16xf64>
  %b = arith.mulf %s, %t : tensor<16xf64>
  %c1 = math.sin %x : tensor<16xf64>
  %c2 = math.cos %x : tensor<16xf64>
  %c = arith.subf %c1, %c2 : tensor<16xf64>
  %f = math.floor %x : tensor<16xf64>
  %ce = math.ceil %x : tensor<16xf64>
  %r = math.round %x : tensor<16xf64>
  %d0 = arith.addf %f, %ce : tensor<16xf64>
  %d = arith.addf %d0, %r : tensor<16xf64>
  return %a, %b, %c, %d : tensor<16xf64>, tensor<16xf64>, tensor<16xf64>, tensor<16xf64>
}

func.func @f64_binary(%x: tensor<9xf64>, %y: tensor<9xf64>) -> (tensor<9xf64>, tensor<9xf64>, tensor<9xf64>) {
  %one = arith.constant dense<1.0> : tensor<9xf64>
  %ax = math.absf %x : tensor<9xf64>
  %base = arith.addf %ax, %one : tensor<9xf64>
  %p = math.powf %base, %y : tensor<9xf64>
  %at = math.atan2 %x, %y : tensor<9xf64>
  %q = arith.divf %x, %base : tensor<9xf64>
  %m = arith.maximumf %q, %y : tensor<9xf64>
  %e2 = math.exp2 %y : tensor<9xf64>
  %l2 = math.log2 %base : tensor<9xf64>
  %l10 = math.log10 %base : tensor<9xf64>
  %s = arith.addf %e2, %l2 : tensor<9xf64>
  %s2 = arith.addf %s, %l10 : tensor<9xf64>
  %r = math.rsqrt %base : tensor<9xf64>
  %er = math.erf %x : tensor<9xf64>
  %s3 = arith.addf %s2, %r : tensor<9xf64>
  %s4 = arith.addf %s3, %er : tensor<9xf64>
  %mm = arith.minimumf %m, %at : tensor<9xf64>
  return %p, %mm, %s4 : tensor<9xf64>, tensor<9xf64>, tensor<9xf64>
}

func.func @f64_convert(%x: tensor<6xf64>, %y: tensor<6xf32>) -> (tensor<6xf64>, tensor<6xf64>) {
  %e = arith.extf %y : tensor<6xf32> to tensor<6xf64>
  %s = arith.addf %x, %e : tensor<6xf64>
  %ex = math.expm1 %x : tensor<6xf64>
  %lp = math.log1p %e : tensor<6xf64>
  %at = math.atan %x : tensor<6xf64>
  %s1 = arith.addf %ex, %lp : tensor<6xf64>
  %s2 = arith.addf %s1, %at : tensor<6xf64>
  return %s, %s2 : tensor<6xf64>, tensor<6xf64>
}
