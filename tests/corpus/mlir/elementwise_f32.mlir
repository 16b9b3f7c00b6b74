// Elementwise f32 arithmetic on a few shapes.
// CALL @add_mul_max(2x3xf32, 2x3xf32)
// CALL @sub_div_neg(4xf32, 4xf32)
// CALL @fused_chain(3x5xf32, 3x5xf32, 3x5xf32)
func.func @add_mul_max(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %s = arith.addf %a, %b : tensor<2x3xf32>
  %p = arith.mulf %a, %b : tensor<2x3xf32>
  %m = arith.maximumf %a, %b : tensor<2x3xf32>
  return %s, %p, %m : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

func.func @sub_div_neg(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %cst = arith.constant dense<3.0> : tensor<4xf32>
  %d = arith.subf %a, %b : tensor<4xf32>
  %bb = math.absf %b : tensor<4xf32>
  %den = arith.addf %bb, %cst : tensor<4xf32>
  %q = arith.divf %d, %den : tensor<4xf32>
  %n = arith.negf %q : tensor<4xf32>
  %mn = arith.minimumf %n, %a : tensor<4xf32>
  return %mn : tensor<4xf32>
}

func.func @fused_chain(%a: tensor<3x5xf32>, %b: tensor<3x5xf32>, %c: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %0 = arith.mulf %a, %b : tensor<3x5xf32>
  %1 = arith.addf %0, %c : tensor<3x5xf32>
  %2 = math.fma %a, %b, %c : tensor<3x5xf32>
  %3 = arith.subf %1, %2 : tensor<3x5xf32>
  %4 = arith.remf %a, %c : tensor<3x5xf32>
  %5 = arith.addf %3, %4 : tensor<3x5xf32>
  return %5 : tensor<3x5xf32>
}
