// The smallest useful module: elementwise add of two 4xf32 tensors (for `jitvm dump` demos).
// Compiled to hello.vmfb by build_examples.py.
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
