// Host-side control flow on values read out of tensors: scf.if and scf.while.
// CALL @if_positive(4xf32)
// CALL @if_positive(4xf32)
// CALL @while_double(3xi32, i32)
// CALL @count_steps(i32)
func.func @if_positive(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %v = tensor.extract %x[%c0] : tensor<4xf32>
  %p = arith.cmpf ogt, %v, %zero : f32
  %r = scf.if %p -> tensor<4xf32> {
    %d = arith.addf %x, %x : tensor<4xf32>
    scf.yield %d : tensor<4xf32>
  } else {
    %n = arith.negf %x : tensor<4xf32>
    %e = math.exp %n : tensor<4xf32>
    scf.yield %e : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// Doubles the tensor until its first element's magnitude reaches the limit (bounded trips).
func.func @while_double(%x: tensor<3xi32>, %limit: i32) -> (tensor<3xi32>, i32) {
  %c0 = arith.constant 0 : index
  %c1i = arith.constant 1 : i32
  %c0i = arith.constant 0 : i32
  %c20 = arith.constant 20 : i32
  %r:2 = scf.while (%t = %x, %n = %c0i) : (tensor<3xi32>, i32) -> (tensor<3xi32>, i32) {
    %v = tensor.extract %t[%c0] : tensor<3xi32>
    %a = math.absi %v : i32
    %lt = arith.cmpi slt, %a, %limit : i32
    %nz = arith.cmpi ne, %a, %c0i : i32
    %few = arith.cmpi slt, %n, %c20 : i32
    %c = arith.andi %lt, %nz : i1
    %cc = arith.andi %c, %few : i1
    scf.condition(%cc) %t, %n : tensor<3xi32>, i32
  } do {
  ^bb0(%t: tensor<3xi32>, %n: i32):
    %d = arith.addi %t, %t : tensor<3xi32>
    %n1 = arith.addi %n, %c1i : i32
    scf.yield %d, %n1 : tensor<3xi32>, i32
  }
  return %r#0, %r#1 : tensor<3xi32>, i32
}

// Collatz-style step counter on a scalar, capped at 100 steps.
func.func @count_steps(%start: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %c100 = arith.constant 100 : i32
  %a = math.absi %start : i32
  %s = arith.addi %a, %c1 : i32
  %r:2 = scf.while (%v = %s, %n = %c0) : (i32, i32) -> (i32, i32) {
    %ne = arith.cmpi sgt, %v, %c1 : i32
    %few = arith.cmpi slt, %n, %c100 : i32
    %c = arith.andi %ne, %few : i1
    scf.condition(%c) %v, %n : i32, i32
  } do {
  ^bb0(%v: i32, %n: i32):
    %rem = arith.remsi %v, %c2 : i32
    %odd = arith.cmpi ne, %rem, %c0 : i32
    %nv = scf.if %odd -> i32 {
      %t = arith.muli %v, %c3 : i32
      %t1 = arith.addi %t, %c1 : i32
      scf.yield %t1 : i32
    } else {
      %h = arith.divsi %v, %c2 : i32
      scf.yield %h : i32
    }
    %n1 = arith.addi %n, %c1 : i32
    scf.yield %nv, %n1 : i32, i32
  }
  return %r#1 : i32
}
