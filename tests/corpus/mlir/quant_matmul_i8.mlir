// Quantized matmul: i8 x i8 -> i32 accumulate, then a requantize-like epilogue.
// CALL @qmatmul(6x20xi8, 20x7xi8)
// CALL @qmatmul_requant(8x16xi8, 16x8xi8, 8xi32)
func.func @qmatmul(%a: tensor<6x20xi8>, %b: tensor<20x7xi8>) -> tensor<6x7xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<6x7xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<6x7xi32>) -> tensor<6x7xi32>
  %r = linalg.matmul ins(%a, %b : tensor<6x20xi8>, tensor<20x7xi8>) outs(%f : tensor<6x7xi32>) -> tensor<6x7xi32>
  return %r : tensor<6x7xi32>
}

func.func @qmatmul_requant(%a: tensor<8x16xi8>, %b: tensor<16x8xi8>, %bias: tensor<8xi32>) -> tensor<8x8xi8> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<8x8xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<8x8xi32>) -> tensor<8x8xi32>
  %acc = linalg.matmul ins(%a, %b : tensor<8x16xi8>, tensor<16x8xi8>) outs(%f : tensor<8x8xi32>) -> tensor<8x8xi32>
  %e8 = tensor.empty() : tensor<8x8xi8>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
        ins(%acc, %bias : tensor<8x8xi32>, tensor<8xi32>) outs(%e8 : tensor<8x8xi8>) {
  ^bb0(%v: i32, %bv: i32, %o: i8):
    %c2 = arith.constant 2 : i32
    %lo = arith.constant -128 : i32
    %hi = arith.constant 127 : i32
    %s = arith.addi %v, %bv : i32
    %sh = arith.shrsi %s, %c2 : i32
    %c1 = arith.maxsi %sh, %lo : i32
    %c = arith.minsi %c1, %hi : i32
    %t = arith.trunci %c : i32 to i8
    linalg.yield %t : i8
  } -> tensor<8x8xi8>
  return %r : tensor<8x8xi8>
}
