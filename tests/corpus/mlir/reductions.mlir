// Sum and max reductions along different axes.
// CALL @sum_rows(7x13xf32)
// CALL @sum_cols(7x13xf32)
// CALL @max_last(4x5x6xf32)
// CALL @sum_all_i32(64xi32)
func.func @sum_rows(%x: tensor<7x13xf32>) -> tensor<7xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<7xf32>) -> tensor<7xf32>
  %r = linalg.reduce ins(%x : tensor<7x13xf32>) outs(%f : tensor<7xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %r : tensor<7xf32>
}

func.func @sum_cols(%x: tensor<7x13xf32>) -> tensor<13xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<13xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<13xf32>) -> tensor<13xf32>
  %r = linalg.reduce ins(%x : tensor<7x13xf32>) outs(%f : tensor<13xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %r : tensor<13xf32>
}

func.func @max_last(%x: tensor<4x5x6xf32>) -> tensor<4x5xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4x5xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %r = linalg.reduce ins(%x : tensor<4x5x6xf32>) outs(%f : tensor<4x5xf32>) dimensions = [2]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  return %r : tensor<4x5xf32>
}

func.func @sum_all_i32(%x: tensor<64xi32>) -> tensor<i32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<i32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<i32>) -> tensor<i32>
  %r = linalg.reduce ins(%x : tensor<64xi32>) outs(%f : tensor<i32>) dimensions = [0]
    (%in: i32, %acc: i32) {
      %s = arith.addi %in, %acc : i32
      linalg.yield %s : i32
    }
  return %r : tensor<i32>
}
