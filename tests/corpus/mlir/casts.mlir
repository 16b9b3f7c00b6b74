// Conversions between integer and float types, widths and bit patterns.
// CALL @int_float(12xi32, 12xf32)
// CALL @widths(12xi32)
// CALL @bitcasts(8xf32)
func.func @int_float(%i: tensor<12xi32>, %f: tensor<12xf32>) -> (tensor<12xf32>, tensor<12xi32>, tensor<12xf32>, tensor<12xi32>) {
  %k = arith.constant dense<3.75> : tensor<12xf32>
  %a = arith.sitofp %i : tensor<12xi32> to tensor<12xf32>
  %fs = arith.mulf %f, %k : tensor<12xf32>
  %b = arith.fptosi %fs : tensor<12xf32> to tensor<12xi32>
  %ai = math.absi %i : tensor<12xi32>
  %c = arith.uitofp %ai : tensor<12xi32> to tensor<12xf32>
  %af = math.absf %fs : tensor<12xf32>
  %d = arith.fptoui %af : tensor<12xf32> to tensor<12xi32>
  return %a, %b, %c, %d : tensor<12xf32>, tensor<12xi32>, tensor<12xf32>, tensor<12xi32>
}

func.func @widths(%i: tensor<12xi32>) -> (tensor<12xi8>, tensor<12xi32>, tensor<12xi32>) {
  %k = arith.constant dense<37> : tensor<12xi32>
  %m = arith.muli %i, %k : tensor<12xi32>
  %t8 = arith.trunci %m : tensor<12xi32> to tensor<12xi8>
  %s = arith.extsi %t8 : tensor<12xi8> to tensor<12xi32>
  %u = arith.extui %t8 : tensor<12xi8> to tensor<12xi32>
  return %t8, %s, %u : tensor<12xi8>, tensor<12xi32>, tensor<12xi32>
}

func.func @bitcasts(%f: tensor<8xf32>) -> (tensor<8xi32>, tensor<8xf32>) {
  %b = arith.bitcast %f : tensor<8xf32> to tensor<8xi32>
  %one = arith.constant dense<1> : tensor<8xi32>
  %b1 = arith.addi %b, %one : tensor<8xi32>
  %f1 = arith.bitcast %b1 : tensor<8xi32> to tensor<8xf32>
  return %b, %f1 : tensor<8xi32>, tensor<8xf32>
}
