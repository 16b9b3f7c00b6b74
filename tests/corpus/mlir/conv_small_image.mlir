// A 3x3 convolution whose output is a 2x2 image, as in a ResNet's last stage: the loop over
// output columns runs twice, and the JIT blocks it over the channel loop around the window.
// CALL @conv_2x2_out(1x4x4x64xf32, 3x3x64x64xf32)
func.func @conv_2x2_out(%x: tensor<1x4x4x64xf32>, %w: tensor<3x3x64x64xf32>) -> tensor<1x2x2x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x2x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x2x64xf32>) -> tensor<1x2x2x64xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x4x4x64xf32>, tensor<3x3x64x64xf32>) outs(%f : tensor<1x2x2x64xf32>) -> tensor<1x2x2x64xf32>
  return %c : tensor<1x2x2x64xf32>
}
