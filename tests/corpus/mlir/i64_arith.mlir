// i64 arithmetic kept in i64 (no demotion), on tensors and on scalars.
// FLAGS: --iree-input-demote-i64-to-i32=false
// CALL @i64_tensor(10xi64, 10xi64)
// CALL @i64_scalar(i64, i64)
func.func @i64_tensor(%a: tensor<10xi64>, %b: tensor<10xi64>) -> (tensor<10xi64>, tensor<10xi64>, tensor<10xi64>) {
  %big = arith.constant dense<4000000000> : tensor<10xi64>
  %sh = arith.constant dense<33> : tensor<10xi64>
  %one = arith.constant dense<1> : tensor<10xi64>
  %x = arith.muli %a, %big : tensor<10xi64>
  %y = arith.addi %x, %b : tensor<10xi64>
  %z = arith.shli %b, %sh : tensor<10xi64>
  %w = arith.shrsi %z, %one : tensor<10xi64>
  %u = arith.shrui %x, %one : tensor<10xi64>
  %ab = math.absi %b : tensor<10xi64>
  %den = arith.addi %ab, %one : tensor<10xi64>
  %q = arith.divsi %x, %den : tensor<10xi64>
  %r = arith.remsi %y, %den : tensor<10xi64>
  %s = arith.addi %q, %r : tensor<10xi64>
  %m = arith.maxsi %s, %w : tensor<10xi64>
  %t = arith.xori %m, %u : tensor<10xi64>
  return %y, %t, %z : tensor<10xi64>, tensor<10xi64>, tensor<10xi64>
}

func.func @i64_scalar(%a: i64, %b: i64) -> (i64, i64) {
  %k = arith.constant 123456789012 : i64
  %x = arith.muli %a, %k : i64
  %y = arith.subi %x, %b : i64
  %c = arith.cmpi slt, %a, %b : i64
  %z = arith.select %c, %x, %y : i64
  return %y, %z : i64, i64
}
