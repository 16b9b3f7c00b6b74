// A constant tensor of i4 values, sign- and zero-extended and used in compute.
// (VMVX cannot load i4 elements at run time; the compiler folds these i4 constants into wider
// constants, so this checks that the i4 -> i32/f32 constant conversions are right.)
// CALL @i4_weights(4x8xi32)
// CALL @i4_matvec(8xf32)
func.func @i4_weights(%x: tensor<4x8xi32>) -> (tensor<4x8xi32>, tensor<4x8xi32>) {
  %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 2, 2, 2, 2], [7, 6, 5, 4, -3, -2, -1, 0]]> : tensor<4x8xi4>
  %s = arith.extsi %w : tensor<4x8xi4> to tensor<4x8xi32>
  %u = arith.extui %w : tensor<4x8xi4> to tensor<4x8xi32>
  %a = arith.muli %x, %s : tensor<4x8xi32>
  %b = arith.addi %x, %u : tensor<4x8xi32>
  return %a, %b : tensor<4x8xi32>, tensor<4x8xi32>
}

func.func @i4_matvec(%v: tensor<8xf32>) -> tensor<3xf32> {
  %w = arith.constant dense<[[1, 2, 3, 4, 5, 6, 7, -8], [-7, -6, -5, -4, -3, -2, -1, 0], [3, -3, 3, -3, 3, -3, 3, -3]]> : tensor<3x8xi4>
  %wf = arith.sitofp %w : tensor<3x8xi4> to tensor<3x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
        ins(%wf, %v : tensor<3x8xf32>, tensor<8xf32>) outs(%f : tensor<3xf32>) {
  ^bb0(%wi: f32, %vi: f32, %acc: f32):
    %p = arith.mulf %wi, %vi : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
}
