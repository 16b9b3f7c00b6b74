// f32 matmul with zero-filled accumulators, tile-friendly and awkward sizes.
// CALL @matmul_4x8x5(4x8xf32, 8x5xf32)
// CALL @matmul_33x17x9(33x17xf32, 17x9xf32)
// CALL @matmul_acc(16x16xf32, 16x16xf32, 16x16xf32)
func.func @matmul_4x8x5(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>) -> tensor<4x5xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x5xf32>) outs(%f : tensor<4x5xf32>) -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

func.func @matmul_33x17x9(%a: tensor<33x17xf32>, %b: tensor<17x9xf32>) -> tensor<33x9xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<33x9xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<33x9xf32>) -> tensor<33x9xf32>
  %r = linalg.matmul ins(%a, %b : tensor<33x17xf32>, tensor<17x9xf32>) outs(%f : tensor<33x9xf32>) -> tensor<33x9xf32>
  return %r : tensor<33x9xf32>
}

func.func @matmul_acc(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}
