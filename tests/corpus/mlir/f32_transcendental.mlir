// f32 transcendental and rounding functions.
// LLVM-CPU-FLAGS: --iree-llvmcpu-link-embedded=false
// CALL @unary_set(32xf32)
// CALL @binary_set(12xf32, 12xf32)
// CALL @rounding(20xf32)
func.func @unary_set(%x: tensor<32xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) {
  %one = arith.constant dense<1.0> : tensor<32xf32>
  %ax = math.absf %x : tensor<32xf32>
  %pos = arith.addf %ax, %one : tensor<32xf32>
  %exp = math.exp %x : tensor<32xf32>
  %log = math.log %pos : tensor<32xf32>
  %tanh = math.tanh %x : tensor<32xf32>
  %erf = math.erf %x : tensor<32xf32>
  %sin = math.sin %x : tensor<32xf32>
  %cos = math.cos %x : tensor<32xf32>
  %rsq = math.rsqrt %pos : tensor<32xf32>
  %sqrt = math.sqrt %pos : tensor<32xf32>
  %exp2 = math.exp2 %x : tensor<32xf32>
  %expm1 = math.expm1 %x : tensor<32xf32>
  %log2 = math.log2 %pos : tensor<32xf32>
  %log10 = math.log10 %pos : tensor<32xf32>
  %log1p = math.log1p %ax : tensor<32xf32>
  %atan = math.atan %x : tensor<32xf32>
  %a = arith.addf %exp, %log : tensor<32xf32>
  %b = arith.addf %sin, %cos : tensor<32xf32>
  %c = arith.mulf %rsq, %sqrt : tensor<32xf32>
  %d0 = arith.addf %exp2, %expm1 : tensor<32xf32>
  %d1 = arith.addf %log2, %log10 : tensor<32xf32>
  %d2 = arith.addf %d0, %d1 : tensor<32xf32>
  %d = arith.addf %d2, %log1p : tensor<32xf32>
  %e = arith.addf %erf, %atan : tensor<32xf32>
  %f = arith.addf %e, %tanh : tensor<32xf32>
  return %a, %b, %c, %d, %f : tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>
}

func.func @binary_set(%x: tensor<12xf32>, %y: tensor<12xf32>) -> (tensor<12xf32>, tensor<12xf32>, tensor<12xf32>) {
  %one = arith.constant dense<1.0> : tensor<12xf32>
  %ax = math.absf %x : tensor<12xf32>
  %base = arith.addf %ax, %one : tensor<12xf32>
  %p = math.powf %base, %y : tensor<12xf32>
  %a = math.atan2 %y, %x : tensor<12xf32>
  %r = arith.remf %y, %base : tensor<12xf32>
  %ng = arith.negf %ax : tensor<12xf32>
  %z = arith.addf %r, %ng : tensor<12xf32>
  return %p, %a, %z : tensor<12xf32>, tensor<12xf32>, tensor<12xf32>
}

func.func @rounding(%x: tensor<20xf32>) -> (tensor<20xf32>, tensor<20xf32>, tensor<20xf32>, tensor<20xf32>) {
  %k = arith.constant dense<2.5> : tensor<20xf32>
  %s = arith.mulf %x, %k : tensor<20xf32>
  %fl = math.floor %s : tensor<20xf32>
  %ce = math.ceil %s : tensor<20xf32>
  %ro = math.round %s : tensor<20xf32>
  %re = math.roundeven %s : tensor<20xf32>
  return %fl, %ce, %ro, %re : tensor<20xf32>, tensor<20xf32>, tensor<20xf32>, tensor<20xf32>
}
