// Compiled with VMVX microkernels: the executables import vmvx.* functions.
// FLAGS: --iree-vmvx-enable-microkernels
// CALL @uk_matmul(12x20xf32, 20x10xf32)
// CALL @uk_matmul_i8(9x16xi8, 16x5xi8)
// CALL @uk_elementwise(8x8xf32, 8x8xf32)
func.func @uk_matmul(%a: tensor<12x20xf32>, %b: tensor<20x10xf32>) -> tensor<12x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<12x10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<12x10xf32>) -> tensor<12x10xf32>
  %r = linalg.matmul ins(%a, %b : tensor<12x20xf32>, tensor<20x10xf32>) outs(%f : tensor<12x10xf32>) -> tensor<12x10xf32>
  return %r : tensor<12x10xf32>
}

func.func @uk_matmul_i8(%a: tensor<9x16xi8>, %b: tensor<16x5xi8>) -> tensor<9x5xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<9x5xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<9x5xi32>) -> tensor<9x5xi32>
  %r = linalg.matmul ins(%a, %b : tensor<9x16xi8>, tensor<16x5xi8>) outs(%f : tensor<9x5xi32>) -> tensor<9x5xi32>
  return %r : tensor<9x5xi32>
}

func.func @uk_elementwise(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %s = arith.addf %a, %b : tensor<8x8xf32>
  %m = arith.mulf %s, %a : tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %t = linalg.transpose ins(%m : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) permutation = [1, 0]
  return %s, %t : tensor<8x8xf32>, tensor<8x8xf32>
}
