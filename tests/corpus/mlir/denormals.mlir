// Subnormal floats: IREE runs dispatches with flush-to-zero and denormals-are-zero, while
// host-side scalar code keeps IEEE subnormals. Both sides are checked here.
// CALL @tiny_tensor(8xf32)
// CALL @tiny_scalar(f32)
func.func @tiny_tensor(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %small = util.unfoldable_constant dense<1.0e-20> : tensor<8xf32>
  %sub = util.unfoldable_constant dense<[1.0e-39, -2.0e-39, 5.0e-41, 0.0, 1.0e-38, 2.0e-38, -1.0e-45, 1.0]> : tensor<8xf32>
  %a = arith.mulf %x, %small : tensor<8xf32>
  %b = arith.mulf %a, %small : tensor<8xf32>
  %c = arith.addf %sub, %sub : tensor<8xf32>
  return %b, %c : tensor<8xf32>, tensor<8xf32>
}

func.func @tiny_scalar(%x: f32) -> f32 {
  %small = arith.constant 1.0e-20 : f32
  %a = arith.mulf %x, %small : f32
  %b = arith.mulf %a, %small : f32
  return %b : f32
}
