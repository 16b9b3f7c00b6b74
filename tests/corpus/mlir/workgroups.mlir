// Shapes large enough that iree-compile tiles each dispatch over a grid of many workgroups,
// so the JIT's dispatch runner splits them across threads: a matmul with ragged edges, a
// 3x3 convolution with bias and ReLU, and an elementwise op followed by a row reduction.
// CALL @matmul_130x70x66(130x70xf32, 70x66xf32)
// CALL @conv3x3_relu(1x20x20x8xf32, 3x3x8x16xf32, 16xf32)
// CALL @scale_rowsum(96x160xf32, 160xf32)
func.func @matmul_130x70x66(%a: tensor<130x70xf32>, %b: tensor<70x66xf32>) -> tensor<130x66xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<130x66xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<130x66xf32>) -> tensor<130x66xf32>
  %r = linalg.matmul ins(%a, %b : tensor<130x70xf32>, tensor<70x66xf32>) outs(%f : tensor<130x66xf32>) -> tensor<130x66xf32>
  return %r : tensor<130x66xf32>
}

func.func @conv3x3_relu(%x: tensor<1x20x20x8xf32>, %w: tensor<3x3x8x16xf32>, %bias: tensor<16xf32>) -> tensor<1x18x18x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x18x18x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x18x18x16xf32>) -> tensor<1x18x18x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x20x20x8xf32>, tensor<3x3x8x16xf32>) outs(%f : tensor<1x18x18x16xf32>) -> tensor<1x18x18x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (c)>,
                                        affine_map<(n, h, w, c) -> (n, h, w, c)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
         ins(%c, %bias : tensor<1x18x18x16xf32>, tensor<16xf32>) outs(%e : tensor<1x18x18x16xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x18x18x16xf32>
  return %r : tensor<1x18x18x16xf32>
}

func.func @scale_rowsum(%x: tensor<96x160xf32>, %s: tensor<160xf32>) -> (tensor<96x160xf32>, tensor<96xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x160xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
         ins(%x, %s : tensor<96x160xf32>, tensor<160xf32>) outs(%e : tensor<96x160xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<96x160xf32>
  %re = tensor.empty() : tensor<96xf32>
  %rf = linalg.fill ins(%zero : f32) outs(%re : tensor<96xf32>) -> tensor<96xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                         iterator_types = ["parallel", "reduction"]}
         ins(%y : tensor<96x160xf32>) outs(%rf : tensor<96xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<96xf32>
  return %y, %sum : tensor<96x160xf32>, tensor<96xf32>
}
