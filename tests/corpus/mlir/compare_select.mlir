// Comparisons (ordered/unordered float, signed/unsigned int) and select.
// CALL @cmp_f32(16xf32, 16xf32)
// CALL @cmp_i32(16xi32, 16xi32)
// CALL @select_mix(16xi1, 16xf32, 16xf32)
func.func @cmp_f32(%a: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<16xi1>, tensor<16xi1>, tensor<16xi1>, tensor<16xi1>, tensor<16xf32>) {
  // Elements of %a above 1.0 become NaN so ordered and unordered predicates differ.
  %one = arith.constant dense<1.0> : tensor<16xf32>
  %nan = arith.constant dense<0x7FC00000> : tensor<16xf32>
  %big = arith.cmpf ogt, %a, %one : tensor<16xf32>
  %an = arith.select %big, %nan, %a : tensor<16xi1>, tensor<16xf32>
  %lt = arith.cmpf olt, %an, %b : tensor<16xf32>
  %ule = arith.cmpf ule, %an, %b : tensor<16xf32>
  %oeq = arith.cmpf oeq, %an, %an : tensor<16xf32>
  %une = arith.cmpf une, %an, %b : tensor<16xf32>
  %r = arith.select %lt, %an, %b : tensor<16xi1>, tensor<16xf32>
  return %lt, %ule, %oeq, %une, %r : tensor<16xi1>, tensor<16xi1>, tensor<16xi1>, tensor<16xi1>, tensor<16xf32>
}

func.func @cmp_i32(%a: tensor<16xi32>, %b: tensor<16xi32>) -> (tensor<16xi32>, tensor<16xi32>) {
  %slt = arith.cmpi slt, %a, %b : tensor<16xi32>
  %ult = arith.cmpi ult, %a, %b : tensor<16xi32>
  %sge = arith.cmpi sge, %a, %b : tensor<16xi32>
  %eq = arith.cmpi eq, %a, %b : tensor<16xi32>
  %x = arith.select %slt, %a, %b : tensor<16xi1>, tensor<16xi32>
  %y = arith.select %ult, %a, %b : tensor<16xi1>, tensor<16xi32>
  %o = arith.ori %sge, %eq : tensor<16xi1>
  %z = arith.select %o, %y, %x : tensor<16xi1>, tensor<16xi32>
  return %x, %z : tensor<16xi32>, tensor<16xi32>
}

func.func @select_mix(%c: tensor<16xi1>, %a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %r = arith.select %c, %a, %b : tensor<16xi1>, tensor<16xf32>
  return %r : tensor<16xf32>
}
