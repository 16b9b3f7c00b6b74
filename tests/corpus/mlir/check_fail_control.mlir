// Negative control: the single expectation below is false and must be reported as a failure.
// CHECK-TESTS
// EXPECT-TRAP @must_fail
func.func @must_fail() {
  %a = util.unfoldable_constant dense<[1, 2, 3]> : tensor<3xi32>
  %b = arith.addi %a, %a : tensor<3xi32>
  check.expect_eq_const(%b, dense<[2, 4, 7]> : tensor<3xi32>) : tensor<3xi32>
  return
}
