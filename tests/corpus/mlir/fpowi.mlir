// x to an integer power (math.fpowi): iree-compile 3.13 emits vm.fpowi.f32/f64 with an i64
// exponent (ONNX Pow with an integer exponent, LpPool, MVN and tanh-GELU export this way).
// FLAGS: --iree-input-demote-f64-to-f32=false --iree-input-demote-i64-to-i32=false
// CALL @fpowi(8xf32, 8xi64)
// CALL @fpowi64(8xf64, 8xi64)
func.func @fpowi(%x: tensor<8xf32>, %n: tensor<8xi64>) -> tensor<8xf32> {
  %r = math.fpowi %x, %n : tensor<8xf32>, tensor<8xi64>
  return %r : tensor<8xf32>
}
func.func @fpowi64(%x: tensor<8xf64>, %n: tensor<8xi64>) -> tensor<8xf64> {
  %r = math.fpowi %x, %n : tensor<8xf64>, tensor<8xi64>
  return %r : tensor<8xf64>
}
