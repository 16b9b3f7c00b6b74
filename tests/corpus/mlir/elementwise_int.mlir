// Elementwise integer arithmetic in several widths.
// CALL @i32_ops(2x4xi32, 2x4xi32)
// CALL @i8_ops(16xi8, 16xi8)
// CALL @i1_logic(8xi1, 8xi1)
func.func @i32_ops(%a: tensor<2x4xi32>, %b: tensor<2x4xi32>) -> (tensor<2x4xi32>, tensor<2x4xi32>, tensor<2x4xi32>) {
  %s = arith.addi %a, %b : tensor<2x4xi32>
  %p = arith.muli %a, %b : tensor<2x4xi32>
  %m = arith.maxsi %a, %b : tensor<2x4xi32>
  %d = arith.subi %s, %m : tensor<2x4xi32>
  %x = arith.xori %d, %p : tensor<2x4xi32>
  %o = arith.ori %x, %a : tensor<2x4xi32>
  %n = arith.andi %o, %b : tensor<2x4xi32>
  return %s, %p, %n : tensor<2x4xi32>, tensor<2x4xi32>, tensor<2x4xi32>
}

func.func @i8_ops(%a: tensor<16xi8>, %b: tensor<16xi8>) -> (tensor<16xi8>, tensor<16xi8>) {
  %c100 = arith.constant dense<100> : tensor<16xi8>
  %s = arith.addi %a, %c100 : tensor<16xi8>
  %w = arith.addi %s, %c100 : tensor<16xi8>
  %p = arith.muli %a, %b : tensor<16xi8>
  %m = arith.minsi %w, %p : tensor<16xi8>
  return %w, %m : tensor<16xi8>, tensor<16xi8>
}

func.func @i1_logic(%a: tensor<8xi1>, %b: tensor<8xi1>) -> (tensor<8xi1>, tensor<8xi32>) {
  %x = arith.xori %a, %b : tensor<8xi1>
  %o = arith.andi %x, %a : tensor<8xi1>
  %e = arith.extui %o : tensor<8xi1> to tensor<8xi32>
  return %x, %e : tensor<8xi1>, tensor<8xi32>
}
