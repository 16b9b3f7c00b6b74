// Data-tiled matmuls with VMVX microkernels: the executables import vmvx.mmt4d, vmvx.pack,
// vmvx.unpack and (for dynamic shapes) vmvx.query_tile_sizes.2d. Sizes are not multiples of
// the tiles so packing pads and unpacking trims.
// FLAGS: --iree-vmvx-enable-microkernels --iree-opt-data-tiling
// CALL @tiled_f32(13x21xf32, 21x11xf32)
// CALL @tiled_i8(9x14xi8, 14x6xi8)
// CALL @tiled_dynamic(7x5xf32, 5x9xf32, 7x9xf32)
// CALL @tiled_dynamic(16x3xf32, 3x2xf32, 16x2xf32)
func.func @tiled_f32(%a: tensor<13x21xf32>, %b: tensor<21x11xf32>) -> tensor<13x11xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<13x11xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<13x11xf32>) -> tensor<13x11xf32>
  %r = linalg.matmul ins(%a, %b : tensor<13x21xf32>, tensor<21x11xf32>) outs(%f : tensor<13x11xf32>) -> tensor<13x11xf32>
  return %r : tensor<13x11xf32>
}

func.func @tiled_i8(%a: tensor<9x14xi8>, %b: tensor<14x6xi8>) -> tensor<9x6xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<9x6xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<9x6xi32>) -> tensor<9x6xi32>
  %r = linalg.matmul ins(%a, %b : tensor<9x14xi8>, tensor<14x6xi8>) outs(%f : tensor<9x6xi32>) -> tensor<9x6xi32>
  return %r : tensor<9x6xi32>
}

func.func @tiled_dynamic(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%c : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
