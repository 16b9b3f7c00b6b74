// Softmax along the last axis, once via linalg.softmax and once spelled out.
// CALL @softmax_op(3x10xf32)
// CALL @softmax_manual(2x7xf32)
func.func @softmax_op(%x: tensor<3x10xf32>) -> tensor<3x10xf32> {
  %e = tensor.empty() : tensor<3x10xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<3x10xf32>) outs(%e : tensor<3x10xf32>) -> tensor<3x10xf32>
  return %r : tensor<3x10xf32>
}

func.func @softmax_manual(%x: tensor<2x7xf32>) -> tensor<2x7xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2xf32>) -> tensor<2xf32>
  %mx = linalg.reduce ins(%x : tensor<2x7xf32>) outs(%fm : tensor<2xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  %e2 = tensor.empty() : tensor<2x7xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]}
        ins(%x, %mx : tensor<2x7xf32>, tensor<2xf32>) outs(%e2 : tensor<2x7xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %v, %m : f32
    %t = math.exp %d : f32
    linalg.yield %t : f32
  } -> tensor<2x7xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2xf32>) -> tensor<2xf32>
  %sm = linalg.reduce ins(%ex : tensor<2x7xf32>) outs(%fs : tensor<2xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
        ins(%ex, %sm : tensor<2x7xf32>, tensor<2xf32>) outs(%e2 : tensor<2x7xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %q = arith.divf %v, %s : f32
    linalg.yield %q : f32
  } -> tensor<2x7xf32>
  return %r : tensor<2x7xf32>
}
