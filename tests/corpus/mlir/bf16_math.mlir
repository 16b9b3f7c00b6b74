// bf16 maths: elementwise arithmetic, exp and tanh, a reduction, matmuls (bf16 and f32
// accumulators), a scalar argument (the VM passes its bits in an i32), conversions to and
// from f32 (rounded to nearest even) and to i32. VMVX cannot lower bf16 arithmetic, so
// llvm-cpu only.
// TARGETS: llvm-cpu
// CALL @bf16_elementwise(37xbf16, 37xbf16)
// CALL @bf16_exp(19xbf16)
// CALL @bf16_sum_rows(6x11xbf16)
// CALL @bf16_matmul(5x8xbf16, 8x7xbf16)
// CALL @bf16_convert(13xf32, 13xbf16)
// CALL @bf16_scale(9xbf16, bf16)
func.func @bf16_elementwise(%a: tensor<37xbf16>, %b: tensor<37xbf16>) -> (tensor<37xbf16>, tensor<37xbf16>) {
  %s = arith.addf %a, %b : tensor<37xbf16>
  %p = arith.mulf %s, %a : tensor<37xbf16>
  %d = arith.subf %p, %b : tensor<37xbf16>
  %q = arith.divf %d, %b : tensor<37xbf16>
  %m = arith.maximumf %q, %a : tensor<37xbf16>
  %n = arith.negf %m : tensor<37xbf16>
  return %q, %n : tensor<37xbf16>, tensor<37xbf16>
}

func.func @bf16_exp(%x: tensor<19xbf16>) -> (tensor<19xbf16>, tensor<19xbf16>) {
  %e = math.exp %x : tensor<19xbf16>
  %t = math.tanh %x : tensor<19xbf16>
  return %e, %t : tensor<19xbf16>, tensor<19xbf16>
}

func.func @bf16_sum_rows(%x: tensor<6x11xbf16>) -> tensor<6xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<6xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<6xbf16>) -> tensor<6xbf16>
  %r = linalg.reduce ins(%x : tensor<6x11xbf16>) outs(%f : tensor<6xbf16>) dimensions = [1]
    (%in: bf16, %acc: bf16) {
      %s = arith.addf %in, %acc : bf16
      linalg.yield %s : bf16
    }
  return %r : tensor<6xbf16>
}

func.func @bf16_matmul(%a: tensor<5x8xbf16>, %b: tensor<8x7xbf16>) -> (tensor<5x7xbf16>, tensor<5x7xf32>) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<5x7xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<5x7xbf16>) -> tensor<5x7xbf16>
  %r = linalg.matmul ins(%a, %b : tensor<5x8xbf16>, tensor<8x7xbf16>) outs(%f : tensor<5x7xbf16>) -> tensor<5x7xbf16>
  %zero32 = arith.constant 0.0 : f32
  %e32 = tensor.empty() : tensor<5x7xf32>
  %f32 = linalg.fill ins(%zero32 : f32) outs(%e32 : tensor<5x7xf32>) -> tensor<5x7xf32>
  %w = linalg.matmul ins(%a, %b : tensor<5x8xbf16>, tensor<8x7xbf16>) outs(%f32 : tensor<5x7xf32>) -> tensor<5x7xf32>
  return %r, %w : tensor<5x7xbf16>, tensor<5x7xf32>
}

func.func @bf16_convert(%x: tensor<13xf32>, %h: tensor<13xbf16>) -> (tensor<13xbf16>, tensor<13xf32>, tensor<13xi32>) {
  %big = arith.constant dense<40000.0> : tensor<13xf32>
  %xs = arith.mulf %x, %big : tensor<13xf32>
  %t = arith.truncf %xs : tensor<13xf32> to tensor<13xbf16>
  %w = arith.extf %h : tensor<13xbf16> to tensor<13xf32>
  %i = arith.fptosi %h : tensor<13xbf16> to tensor<13xi32>
  return %t, %w, %i : tensor<13xbf16>, tensor<13xf32>, tensor<13xi32>
}

func.func @bf16_scale(%x: tensor<9xbf16>, %s: bf16) -> tensor<9xbf16> {
  %e = tensor.empty() : tensor<9xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<9xbf16>) outs(%e : tensor<9xbf16>) {
  ^bb0(%in: bf16, %o: bf16):
    %m = arith.mulf %in, %s : bf16
    %a = arith.addf %m, %s : bf16
    linalg.yield %a : bf16
  } -> tensor<9xbf16>
  return %r : tensor<9xbf16>
}
