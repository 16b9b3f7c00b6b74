// Several results of different dtypes and shapes from one call.
// CALL @split_stats(5x6xf32)
// CALL @mixed(3xi32, 2x2xf32, i32)
func.func @split_stats(%x: tensor<5x6xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>, tensor<6x5xf32>, tensor<30xf32>) {
  %lo = tensor.extract_slice %x[0, 0] [5, 3] [1, 1] : tensor<5x6xf32> to tensor<5x3xf32>
  %hi = tensor.extract_slice %x[0, 3] [5, 3] [1, 1] : tensor<5x6xf32> to tensor<5x3xf32>
  %e = tensor.empty() : tensor<6x5xf32>
  %t = linalg.transpose ins(%x : tensor<5x6xf32>) outs(%e : tensor<6x5xf32>) permutation = [1, 0]
  %f = tensor.collapse_shape %x [[0, 1]] : tensor<5x6xf32> into tensor<30xf32>
  return %lo, %hi, %t, %f : tensor<5x3xf32>, tensor<5x3xf32>, tensor<6x5xf32>, tensor<30xf32>
}

func.func @mixed(%a: tensor<3xi32>, %b: tensor<2x2xf32>, %s: i32) -> (i32, tensor<3xi32>, tensor<2x2xf32>, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e3 = tensor.empty() : tensor<3xi32>
  %sp = linalg.fill ins(%s : i32) outs(%e3 : tensor<3xi32>) -> tensor<3xi32>
  %sum = arith.addi %a, %sp : tensor<3xi32>
  %v = tensor.extract %sum[%c1] : tensor<3xi32>
  %bb = arith.mulf %b, %b : tensor<2x2xf32>
  %f = tensor.extract %bb[%c0, %c1] : tensor<2x2xf32>
  return %v, %sum, %bb, %f : i32, tensor<3xi32>, tensor<2x2xf32>, f32
}
