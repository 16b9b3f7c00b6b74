// Integer division, remainder, shifts, min/max (divisors are kept non-zero).
// CALL @divrem(24xi32, 24xi32)
// CALL @shifts(24xi32, 24xi32)
// CALL @minmax(24xi32, 24xi32)
func.func @divrem(%a: tensor<24xi32>, %b: tensor<24xi32>) -> (tensor<24xi32>, tensor<24xi32>, tensor<24xi32>, tensor<24xi32>) {
  %one = arith.constant dense<1> : tensor<24xi32>
  %ab = math.absi %b : tensor<24xi32>
  %d = arith.addi %ab, %one : tensor<24xi32>
  %nd = arith.subi %one, %d : tensor<24xi32>
  %nd1 = arith.subi %nd, %one : tensor<24xi32>
  %q = arith.divsi %a, %nd1 : tensor<24xi32>
  %r = arith.remsi %a, %d : tensor<24xi32>
  %qu = arith.divui %a, %d : tensor<24xi32>
  %ru = arith.remui %a, %d : tensor<24xi32>
  return %q, %r, %qu, %ru : tensor<24xi32>, tensor<24xi32>, tensor<24xi32>, tensor<24xi32>
}

func.func @shifts(%a: tensor<24xi32>, %b: tensor<24xi32>) -> (tensor<24xi32>, tensor<24xi32>, tensor<24xi32>) {
  %mask = arith.constant dense<31> : tensor<24xi32>
  %s = arith.andi %b, %mask : tensor<24xi32>
  %l = arith.shli %a, %s : tensor<24xi32>
  %rs = arith.shrsi %a, %s : tensor<24xi32>
  %ru = arith.shrui %a, %s : tensor<24xi32>
  return %l, %rs, %ru : tensor<24xi32>, tensor<24xi32>, tensor<24xi32>
}

func.func @minmax(%a: tensor<24xi32>, %b: tensor<24xi32>) -> (tensor<24xi32>, tensor<24xi32>, tensor<24xi32>, tensor<24xi32>) {
  %mn = arith.minsi %a, %b : tensor<24xi32>
  %mx = arith.maxsi %a, %b : tensor<24xi32>
  %mnu = arith.minui %a, %b : tensor<24xi32>
  %mxu = arith.maxui %a, %b : tensor<24xi32>
  return %mn, %mx, %mnu, %mxu : tensor<24xi32>, tensor<24xi32>, tensor<24xi32>, tensor<24xi32>
}
