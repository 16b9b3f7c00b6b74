; The stable native entries of a lazily compiled module's functions (lower.lazy): every caller
; (other modules' imports, function tables, dispatch steps, call plans) holds an entry, which
; jumps to what its cell holds now: the compile-on-first-call stub, then the baseline code
; (through the counting entry), then the optimised code a tier-up swapped in.
@${prefix}_cells = global [${count} x ptr] zeroinitializer, align 8
@${prefix}_baseline = global [${count} x ptr] zeroinitializer, align 8
@${prefix}_counts = global [${count} x i64] zeroinitializer, align 8
