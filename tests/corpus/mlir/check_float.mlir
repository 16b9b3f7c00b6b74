// check-dialect tests on float results with tolerances.
// CHECK-TESTS
func.func @exp_log_roundtrip() {
  %x = util.unfoldable_constant dense<[0.5, 1.0, 2.0, 3.5]> : tensor<4xf32>
  %e = math.exp %x : tensor<4xf32>
  %l = math.log %e : tensor<4xf32>
  check.expect_almost_eq(%l, %x, atol 1.0e-5) : tensor<4xf32>
  return
}

func.func @small_matmul() {
  %a = util.unfoldable_constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = util.unfoldable_constant dense<[[0.5, -1.0], [2.0, 0.25]]> : tensor<2x2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %r = linalg.matmul ins(%a, %b : tensor<2x2xf32>, tensor<2x2xf32>) outs(%f : tensor<2x2xf32>) -> tensor<2x2xf32>
  check.expect_almost_eq_const(%r, dense<[[4.5, -0.5], [9.5, -2.0]]> : tensor<2x2xf32>) : tensor<2x2xf32>
  return
}

func.func @tanh_symmetry() {
  %x = util.unfoldable_constant dense<[0.1, 0.7, 1.3, 4.0, 9.0]> : tensor<5xf32>
  %n = arith.negf %x : tensor<5xf32>
  %a = math.tanh %x : tensor<5xf32>
  %b = math.tanh %n : tensor<5xf32>
  %s = arith.addf %a, %b : tensor<5xf32>
  check.expect_almost_eq_const(%s, dense<0.0> : tensor<5xf32>, atol 1.0e-6) : tensor<5xf32>
  return
}

func.func @exact_f32_eq() {
  %x = util.unfoldable_constant dense<[1.5, -2.25, 8.0]> : tensor<3xf32>
  %y = arith.addf %x, %x : tensor<3xf32>
  check.expect_eq_const(%y, dense<[3.0, -4.5, 16.0]> : tensor<3xf32>) : tensor<3xf32>
  return
}
