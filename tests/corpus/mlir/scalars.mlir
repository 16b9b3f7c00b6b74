// Scalar arguments and results of each primitive type.
// FLAGS: --iree-input-demote-i64-to-i32=false --iree-input-demote-f64-to-f32=false
// CALL @scalar_i32(i32, i32)
// CALL @scalar_f32(f32, f32)
// CALL @scalar_i64(i64)
// CALL @scalar_mixed(i32, f32, i64)
func.func @scalar_i32(%a: i32, %b: i32) -> (i32, i32, i1) {
  %s = arith.addi %a, %b : i32
  %c7 = arith.constant 7 : i32
  %p = arith.muli %s, %c7 : i32
  %x = arith.xori %p, %a : i32
  %lt = arith.cmpi slt, %a, %b : i32
  return %s, %x, %lt : i32, i32, i1
}

func.func @scalar_f32(%a: f32, %b: f32) -> (f32, f32) {
  %s = arith.addf %a, %b : f32
  %e = math.exp %s : f32
  %m = arith.maximumf %a, %b : f32
  %d = arith.divf %e, %m : f32
  return %s, %d : f32, f32
}

func.func @scalar_i64(%a: i64) -> (i64, i32) {
  %k = arith.constant 1000000007 : i64
  %p = arith.muli %a, %k : i64
  %q = arith.muli %p, %k : i64
  %t = arith.trunci %q : i64 to i32
  return %q, %t : i64, i32
}

func.func @scalar_mixed(%a: i32, %b: f32, %c: i64) -> (f32, i64, f64) {
  %af = arith.sitofp %a : i32 to f32
  %s = arith.addf %af, %b : f32
  %ae = arith.extsi %a : i32 to i64
  %t = arith.addi %ae, %c : i64
  %d = arith.extf %s : f32 to f64
  return %s, %t, %d : f32, i64, f64
}
