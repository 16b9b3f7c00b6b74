// Depthwise 3x3 convolution, NHWC with an HWC filter.
// CALL @depthwise(1x10x10x6xf32, 3x3x6xf32)
func.func @depthwise(%x: tensor<1x10x10x6xf32>, %w: tensor<3x3x6xf32>) -> tensor<1x8x8x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x6xf32>) -> tensor<1x8x8x6xf32>
  %c = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x10x10x6xf32>, tensor<3x3x6xf32>) outs(%f : tensor<1x8x8x6xf32>) -> tensor<1x8x8x6xf32>
  return %c : tensor<1x8x8x6xf32>
}
