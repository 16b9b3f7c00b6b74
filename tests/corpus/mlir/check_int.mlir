// check-dialect tests on integer tensors and scalars.
// CHECK-TESTS
func.func @add_ints() {
  %a = util.unfoldable_constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %b = util.unfoldable_constant dense<[10, 20, 30, 40]> : tensor<4xi32>
  %s = arith.addi %a, %b : tensor<4xi32>
  check.expect_eq_const(%s, dense<[11, 22, 33, 44]> : tensor<4xi32>) : tensor<4xi32>
  return
}

func.func @divrem_signs() {
  %a = util.unfoldable_constant dense<[7, -7, 7, -7]> : tensor<4xi32>
  %b = util.unfoldable_constant dense<[2, 2, -2, -2]> : tensor<4xi32>
  %q = arith.divsi %a, %b : tensor<4xi32>
  %r = arith.remsi %a, %b : tensor<4xi32>
  check.expect_eq_const(%q, dense<[3, -3, -3, 3]> : tensor<4xi32>) : tensor<4xi32>
  check.expect_eq_const(%r, dense<[1, -1, 1, -1]> : tensor<4xi32>) : tensor<4xi32>
  return
}

func.func @scalar_truths() {
  %a = util.unfoldable_constant 5 : i32
  %b = util.unfoldable_constant 9 : i32
  %lt = arith.cmpi slt, %a, %b : i32
  %gt = arith.cmpi sgt, %a, %b : i32
  check.expect_true(%lt) : i1
  check.expect_false(%gt) : i1
  return
}

func.func @all_true_mask() {
  %a = util.unfoldable_constant dense<[3, 1, 4, 1, 5]> : tensor<5xi32>
  %z = arith.constant dense<0> : tensor<5xi32>
  %m = arith.cmpi sgt, %a, %z : tensor<5xi32>
  %e = arith.extui %m : tensor<5xi1> to tensor<5xi32>
  check.expect_all_true(%e) : tensor<5xi32>
  return
}
