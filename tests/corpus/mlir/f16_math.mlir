// f16 maths: elementwise arithmetic, exp and tanh, a reduction, matmuls (f16 and f32
// accumulators), a scalar argument (the VM passes its bits in an i32), conversions to and
// from f32 (overflowing to inf) and to i32. VMVX cannot lower f16 arithmetic (iree-compile
// 3.13: "failed to legalize arith.cmpf"), so llvm-cpu only.
// TARGETS: llvm-cpu
// CALL @f16_elementwise(37xf16, 37xf16)
// CALL @f16_exp(19xf16)
// CALL @f16_sum_rows(6x11xf16)
// CALL @f16_matmul(5x8xf16, 8x7xf16)
// CALL @f16_convert(13xf32, 13xf16)
// CALL @f16_scale(9xf16, f16)
func.func @f16_elementwise(%a: tensor<37xf16>, %b: tensor<37xf16>) -> (tensor<37xf16>, tensor<37xf16>) {
  %s = arith.addf %a, %b : tensor<37xf16>
  %p = arith.mulf %s, %a : tensor<37xf16>
  %d = arith.subf %p, %b : tensor<37xf16>
  %q = arith.divf %d, %b : tensor<37xf16>
  %m = arith.maximumf %q, %a : tensor<37xf16>
  %n = arith.negf %m : tensor<37xf16>
  return %q, %n : tensor<37xf16>, tensor<37xf16>
}

func.func @f16_exp(%x: tensor<19xf16>) -> (tensor<19xf16>, tensor<19xf16>) {
  %e = math.exp %x : tensor<19xf16>
  %t = math.tanh %x : tensor<19xf16>
  return %e, %t : tensor<19xf16>, tensor<19xf16>
}

func.func @f16_sum_rows(%x: tensor<6x11xf16>) -> tensor<6xf16> {
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<6xf16>
  %f = linalg.fill ins(%zero : f16) outs(%e : tensor<6xf16>) -> tensor<6xf16>
  %r = linalg.reduce ins(%x : tensor<6x11xf16>) outs(%f : tensor<6xf16>) dimensions = [1]
    (%in: f16, %acc: f16) {
      %s = arith.addf %in, %acc : f16
      linalg.yield %s : f16
    }
  return %r : tensor<6xf16>
}

func.func @f16_matmul(%a: tensor<5x8xf16>, %b: tensor<8x7xf16>) -> (tensor<5x7xf16>, tensor<5x7xf32>) {
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<5x7xf16>
  %f = linalg.fill ins(%zero : f16) outs(%e : tensor<5x7xf16>) -> tensor<5x7xf16>
  %r = linalg.matmul ins(%a, %b : tensor<5x8xf16>, tensor<8x7xf16>) outs(%f : tensor<5x7xf16>) -> tensor<5x7xf16>
  %zero32 = arith.constant 0.0 : f32
  %e32 = tensor.empty() : tensor<5x7xf32>
  %f32 = linalg.fill ins(%zero32 : f32) outs(%e32 : tensor<5x7xf32>) -> tensor<5x7xf32>
  %w = linalg.matmul ins(%a, %b : tensor<5x8xf16>, tensor<8x7xf16>) outs(%f32 : tensor<5x7xf32>) -> tensor<5x7xf32>
  return %r, %w : tensor<5x7xf16>, tensor<5x7xf32>
}

func.func @f16_convert(%x: tensor<13xf32>, %h: tensor<13xf16>) -> (tensor<13xf16>, tensor<13xf32>, tensor<13xi32>) {
  %big = arith.constant dense<40000.0> : tensor<13xf32>
  %xs = arith.mulf %x, %big : tensor<13xf32>
  %t = arith.truncf %xs : tensor<13xf32> to tensor<13xf16>
  %w = arith.extf %h : tensor<13xf16> to tensor<13xf32>
  %i = arith.fptosi %h : tensor<13xf16> to tensor<13xi32>
  return %t, %w, %i : tensor<13xf16>, tensor<13xf32>, tensor<13xi32>
}

func.func @f16_scale(%x: tensor<9xf16>, %s: f16) -> tensor<9xf16> {
  %e = tensor.empty() : tensor<9xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<9xf16>) outs(%e : tensor<9xf16>) {
  ^bb0(%in: f16, %o: f16):
    %m = arith.mulf %in, %s : f16
    %a = arith.addf %m, %s : f16
    linalg.yield %a : f16
  } -> tensor<9xf16>
  return %r : tensor<9xf16>
}
