// f32 matmuls whose right-hand side is stored transposed (out = a * b^T, as ONNX exports hand
// nn.Linear weights over): 16 rows a workgroup run in vector lanes (lower.loops.jam.ROW_LANES),
// with an odd reduction length, a column count leaving a partial tile, and 32 rows (packed).
// CALL @mmt_16x128x40(16x40xf32, 128x40xf32)
// CALL @mmt_16x200x37(16x37xf32, 200x37xf32)
// CALL @mmt_32x64x24(32x24xf32, 64x24xf32)
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>

func.func @mmt_16x128x40(%a: tensor<16x40xf32>, %b: tensor<128x40xf32>) -> tensor<16x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x128xf32>) -> tensor<16x128xf32>
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<16x40xf32>, tensor<128x40xf32>) outs(%f : tensor<16x128xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x128xf32>
  return %r : tensor<16x128xf32>
}

func.func @mmt_16x200x37(%a: tensor<16x37xf32>, %b: tensor<200x37xf32>) -> tensor<16x200xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x200xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x200xf32>) -> tensor<16x200xf32>
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<16x37xf32>, tensor<200x37xf32>) outs(%f : tensor<16x200xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x200xf32>
  return %r : tensor<16x200xf32>
}

func.func @mmt_32x64x24(%a: tensor<32x24xf32>, %b: tensor<64x24xf32>) -> tensor<32x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<32x24xf32>, tensor<64x24xf32>) outs(%f : tensor<32x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<32x64xf32>
  return %r : tensor<32x64xf32>
}
