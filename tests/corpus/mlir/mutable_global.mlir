// Mutable globals: a scalar counter and an accumulating tensor that change across calls.
// CALL @bump(i32)
// CALL @bump(i32)
// CALL @accumulate(4xf32)
// CALL @accumulate(4xf32)
// CALL @read_state()
util.global private mutable @counter = 0 : i32
util.global private mutable @acc = dense<0.0> : tensor<4xf32>

func.func @bump(%d: i32) -> i32 {
  %c = util.global.load @counter : i32
  %one = arith.constant 1 : i32
  %t = arith.addi %c, %d : i32
  %n = arith.addi %t, %one : i32
  util.global.store %n, @counter : i32
  return %n : i32
}

func.func @accumulate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = util.global.load @acc : tensor<4xf32>
  %s = arith.addf %a, %x : tensor<4xf32>
  util.global.store %s, @acc : tensor<4xf32>
  return %s : tensor<4xf32>
}

func.func @read_state() -> (i32, tensor<4xf32>) {
  %c = util.global.load @counter : i32
  %a = util.global.load @acc : tensor<4xf32>
  return %c, %a : i32, tensor<4xf32>
}
