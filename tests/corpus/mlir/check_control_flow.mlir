// check-dialect tests over host control flow and mutable state.
// CHECK-TESTS
util.global private mutable @calls = 0 : i32

func.func @loop_sum() {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %n = util.unfoldable_constant 10 : i32
  %r:2 = scf.while (%i = %c0, %s = %c0) : (i32, i32) -> (i32, i32) {
    %lt = arith.cmpi slt, %i, %n : i32
    scf.condition(%lt) %i, %s : i32, i32
  } do {
  ^bb0(%i: i32, %s: i32):
    %s1 = arith.addi %s, %i : i32
    %i1 = arith.addi %i, %c1 : i32
    scf.yield %i1, %s1 : i32, i32
  }
  %c45 = arith.constant 45 : i32
  %eq = arith.cmpi eq, %r#1, %c45 : i32
  check.expect_true(%eq) : i1
  return
}

func.func @branchy_tensor() {
  %x = util.unfoldable_constant dense<[2.0, -1.0, 0.5]> : tensor<3xf32>
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %v = tensor.extract %x[%c0] : tensor<3xf32>
  %p = arith.cmpf ogt, %v, %zero : f32
  %r = scf.if %p -> tensor<3xf32> {
    %d = arith.mulf %x, %x : tensor<3xf32>
    scf.yield %d : tensor<3xf32>
  } else {
    scf.yield %x : tensor<3xf32>
  }
  check.expect_almost_eq_const(%r, dense<[4.0, 1.0, 0.25]> : tensor<3xf32>) : tensor<3xf32>
  return
}

func.func @global_counter() {
  %c = util.global.load @calls : i32
  %one = arith.constant 1 : i32
  %n = arith.addi %c, %one : i32
  util.global.store %n, @calls : i32
  %again = util.global.load @calls : i32
  %ge = arith.cmpi sge, %again, %one : i32
  check.expect_true(%ge) : i1
  return
}
