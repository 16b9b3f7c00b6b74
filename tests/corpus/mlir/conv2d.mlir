// NHWC 3x3 convolution with bias and ReLU, plus a strided one.
// CALL @conv3x3_bias_relu(1x8x8x3xf32, 3x3x3x4xf32, 4xf32)
// CALL @conv3x3_stride2(2x9x9x2xf32, 3x3x2x5xf32)
func.func @conv3x3_bias_relu(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x4xf32>, %b: tensor<4xf32>) -> tensor<1x6x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x6x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) outs(%f : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (c)>, affine_map<(n, h, w, c) -> (n, h, w, c)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
         ins(%c, %b : tensor<1x6x6x4xf32>, tensor<4xf32>) outs(%e : tensor<1x6x6x4xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %s = arith.addf %v, %bias : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x6x6x4xf32>
  return %r : tensor<1x6x6x4xf32>
}

func.func @conv3x3_stride2(%x: tensor<2x9x9x2xf32>, %w: tensor<3x3x2x5xf32>) -> tensor<2x4x4x5xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4x5xf32>) -> tensor<2x4x4x5xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
         ins(%x, %w : tensor<2x9x9x2xf32>, tensor<3x3x2x5xf32>) outs(%f : tensor<2x4x4x5xf32>) -> tensor<2x4x4x5xf32>
  return %c : tensor<2x4x4x5xf32>
}
