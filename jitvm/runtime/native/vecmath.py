"""Vector forms of the host libm's float functions, bit for bit.

IREE's runtime evaluates vm.exp.f32 etc. with the C library's expf. JIT code calls the same
function, one call per element, and a loop around such a call does not vectorise. This
module builds, in LLVM IR, vector versions of those functions that follow the host libm's
algorithm operation by operation (glibc 2.28+ on x86_64 with FMA: ARM's optimized-routines
float functions expf and logf, double-precision evaluation over a small table, the
multiply-adds the FMA build contracts; Sun's fdlibm erff in float arithmetic, not contracted),
so each lane's result is the one the scalar call returns. erff's ranges each have their own
rational function: a lane evaluates its own range's coefficients (one Horner chain each for P
and Q, one division), not every range's. Lanes the fast path does not cover (NaN, infinities,
overflow and underflow ranges) are recomputed with the scalar call itself.

Lowering calls `SCALAR_NAME[name]`, a pure module-local wrapper of the libm call carrying
LLVM's `vector-function-abi-variant` attribute, so the loop vectoriser may replace it with
the vector forms defined next to it. Whether the host's libm is the one reproduced is
checked once per process (`available`): the vector forms are compiled and compared with
the scalar calls on a probe set; any difference and lowering keeps plain libm calls.

With `wide` (a target with AVX-512: runtime.native.target.wide_vectors) the forms come in
16 lanes too, and the 8- and 16-lane forms read their 32-entry tables with two in-register
permutes and a blend instead of one scalar load per lane: the same table entries, so the
same bits. Measured one thread (Xeon, Emerald Rapids, CPU time, load ~1.5): see WIDE_NOTE.
"""

from __future__ import annotations

import os
import platform
import struct
from functools import lru_cache

WIDTHS = (4, 8)
WIDE_WIDTHS = (4, 8, 16)  # with `wide`: 16 lanes fill a 512-bit register of floats
PERMUTE_LANES = 8  # i64 lanes one AVX-512 permute reads from two registers of the table (16 entries)
ENV_SWITCH = "JITVM_VECTOR_MATH"  # "0": plain libm calls (for benchmarks and bisecting)

# glibc's __exp2f_data (sysdeps/ieee754/flt-32/e_exp2f_data.c): 2^(i/32) as doubles, less i << 47.
_EXP2F_TABLE = (
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
)
_EXP2F_N = 32
_EXP2F_SHIFT = float.fromhex("0x1.8p+52")
_EXP2F_POLY = tuple(float.fromhex(c) for c in ("0x1.c6af84b912394p-5", "0x1.ebfce50fac4f3p-3", "0x1.62e42ff0c52d6p-1"))
_INVLN2 = float.fromhex("0x1.71547652b82fep+0")


def _d(value: float) -> str:
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


class _Lines:
    """IR text of one vector function: numbered temporaries, splat constants."""

    def __init__(self, width: int, wide: bool = False):
        self.w = width
        self.wide = wide  # tables read by AVX-512 permutes (_permute_lookup)
        self.lines: list[str] = []
        self.n = 0
        self.block = "entry"  # the block being filled

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")
        self.block = name

    def any(self, mask: str) -> str:
        return self.op(f"call i1 @llvm.vector.reduce.or.v{self.w}i1(<{self.w} x i1> {mask})")

    def t(self, elem: str) -> str:
        return f"<{self.w} x {elem}>"

    def splat(self, elem: str, value: str) -> str:
        return f"splat ({elem} {value})"

    def op(self, text: str) -> str:
        self.n += 1
        name = f"%v{self.n}"
        self.lines.append(f"  {name} = {text}")
        return name


def _lookup(L: _Lines, table: str, idx: str) -> str:
    """table[idx] on every lane: one scalar load per lane (faster than a gather on AMD's cores
    and as fast on Intel's at these widths), or with `wide` two permutes per 8 lanes."""
    if L.wide and L.w in (PERMUTE_LANES, 2 * PERMUTE_LANES):
        return _permute_lookup(L, table, idx)
    i64 = L.t("i64")
    acc = "poison"
    for lane in range(L.w):
        k = L.op(f"extractelement {i64} {idx}, i32 {lane}")
        p = L.op(f"getelementptr inbounds i64, ptr {table}, i64 {k}")
        v = L.op(f"load i64, ptr {p}, align 8")
        acc = L.op(f"insertelement {i64} {acc}, i64 {v}, i32 {lane}")
    return acc


_PERMUTE = "@llvm.x86.avx512.vpermi2var.q.512"


def _permute_lookup(L: _Lines, table: str, idx: str) -> str:
    """table[idx] for a 32-entry i64 table (indices 0..31, as both tables' callers mask them):
    per 8 lanes, entries 0-15 and 16-31 each picked by one vpermi2q (index bits 0-3), then
    bit 4 chooses between them. The table's four 8-entry quarters are loaded once per call."""
    v8 = f"<{PERMUTE_LANES} x i64>"
    quarters = [L.op(f"load {v8}, ptr {L.op(f'getelementptr inbounds i64, ptr {table}, i64 {8 * q}')}, align 8")
                for q in range(4)]
    parts = []
    for start in range(0, L.w, PERMUTE_LANES):
        lanes = ", ".join(f"i32 {start + k}" for k in range(PERMUTE_LANES))
        part = idx if L.w == PERMUTE_LANES else \
            L.op(f"shufflevector {L.t('i64')} {idx}, {L.t('i64')} poison, <{PERMUTE_LANES} x i32> <{lanes}>")
        low = L.op(f"call {v8} {_PERMUTE}({v8} {quarters[0]}, {v8} {part}, {v8} {quarters[1]})")
        high = L.op(f"call {v8} {_PERMUTE}({v8} {quarters[2]}, {v8} {part}, {v8} {quarters[3]})")
        bit4 = L.op(f"and {v8} {part}, splat (i64 16)")
        upper = L.op(f"icmp ne {v8} {bit4}, zeroinitializer")
        parts.append(L.op(f"select <{PERMUTE_LANES} x i1> {upper}, {v8} {high}, {v8} {low}"))
    if len(parts) == 1:
        return parts[0]
    low, high = parts  # 16 lanes: the two halves put back together
    lanes = ", ".join(f"i32 {k}" for k in range(L.w))
    return L.op(f"shufflevector {v8} {low}, {v8} {high}, <{L.w} x i32> <{lanes}>")


def _expf_fast(L: _Lines, x: str) -> tuple[str, str]:
    """glibc expf's main path on every lane; returns (result, lanes needing the scalar call)."""
    w, f32, f64, i32, i64 = L.w, L.t("float"), L.t("double"), L.t("i32"), L.t("i64")
    fma = f"@llvm.fma.v{w}f64"
    bits = L.op(f"bitcast {f32} {x} to {i32}")
    top = L.op(f"lshr {i32} {bits}, {L.splat('i32', '20')}")
    abstop = L.op(f"and {i32} {top}, {L.splat('i32', '2047')}")
    special = L.op(f"icmp ugt {i32} {abstop}, {L.splat('i32', str(0x42a))}")  # |x| >= 88 or NaN
    xd = L.op(f"fpext {f32} {x} to {f64}")
    invln2n = L.splat("double", _d(_INVLN2 * _EXP2F_N))
    shift = L.splat("double", _d(_EXP2F_SHIFT))
    kd0 = L.op(f"call {f64} {fma}({f64} {invln2n}, {f64} {xd}, {f64} {shift})")
    ki = L.op(f"bitcast {f64} {kd0} to {i64}")
    kd = L.op(f"fsub {f64} {kd0}, {shift}")
    nkd = L.op(f"fneg {f64} {kd}")
    r = L.op(f"call {f64} {fma}({f64} {invln2n}, {f64} {xd}, {f64} {nkd})")
    idx = L.op(f"and {i64} {ki}, {L.splat('i64', '31')}")
    tab = _lookup(L, "@jv.exp2f.table", idx)
    hi = L.op(f"shl {i64} {ki}, {L.splat('i64', '47')}")
    tbits = L.op(f"add {i64} {tab}, {hi}")
    s = L.op(f"bitcast {i64} {tbits} to {f64}")
    c0, c1, c2 = (L.splat("double", _d(c / _EXP2F_N ** (3 - i))) for i, c in enumerate(_EXP2F_POLY))
    z = L.op(f"call {f64} {fma}({f64} {r}, {f64} {c0}, {f64} {c1})")
    r2 = L.op(f"fmul {f64} {r}, {r}")
    y = L.op(f"call {f64} {fma}({f64} {r}, {f64} {c2}, {f64} {L.splat('double', '1.0')})")
    y = L.op(f"call {f64} {fma}({f64} {z}, {f64} {r2}, {f64} {y})")
    y = L.op(f"fmul {f64} {y}, {s}")
    out = L.op(f"fptrunc {f64} {y} to {f32}")
    return out, special


# glibc's erff (sysdeps/ieee754/flt-32/s_erff.c, Sun's fdlibm in float arithmetic): the
# coefficients as their float bits.
_ERFF = {
    "erx": 0x3f58560b, "efx": 0x3e0375d4,
    "pp": (0x3e0375d4, 0xbea66beb, 0xbce9528f, 0xbbbd1489, 0xb7c756b1),
    "qq": (0x3f800000, 0x3ecbbbce, 0x3d852a63, 0x3ba68116, 0x390aee49, 0xb684e21a),
    "pa": (0xbb1acdc6, 0x3ed46805, 0xbebe9208, 0x3ea2fe54, 0xbde31cc2, 0x3d1151b3, 0xbb0df9c0),
    "qa": (0x3f800000, 0x3dd9f331, 0x3f0a5785, 0x3d931ae7, 0x3e013307, 0x3c5f6e13, 0x3c445aa3),
    "ra": (0xbc21a093, 0xbf31a0b7, 0xc128f022, 0xc2798057, 0xc322658c, 0xc3389ae7, 0xc2a2932b, 0xc11d077e),
    "sa": (0x3f800000, 0x419d35ce, 0x4309a863, 0x43d9486f, 0x442158c9, 0x43d6810b, 0x42d9451f, 0x40d23f7c,
           0xbd777f97),
    "rb": (0xbc21a092, 0xbf4c9dd4, 0xc18e104b, 0xc320a2ea, 0xc41f6441, 0xc480230b, 0xc3f1c275),
    "sb": (0x3f800000, 0x41f2b459, 0x43a2e571, 0x44c01759, 0x4547fdbb, 0x451f90ce, 0x43ed43a7, 0xc1b38712),
}


def _f(bits: int) -> str:
    """A float constant in LLVM's notation (the double of the same value)."""
    return _d(struct.unpack("<f", struct.pack("<I", bits))[0])


# erff's ranges of |x| (float bits below the bound) and the coefficient lists of their P and Q.
_ERFF_RANGES = ((0x3f580000, "pp", "qq"),  # |x| < 0.84375, in x*x
                (0x3fa00000, "pa", "qa"),  # < 1.25, in |x| - 1
                (0x4036DB6E, "ra", "sa"),  # < 1/0.35, in 1/(x*x)
                (0x40c00000, "rb", "sb"))  # < 6 (beyond: +-1), in 1/(x*x)


def _columns(ranges, key: int) -> list[tuple[int, ...]]:
    """Coefficient k of P (key 1) or Q (key 2) of each of `ranges`, lowest k first, the
    shorter lists padded with zeros: Horner from the top turns a zero's c + s*0 into c
    exactly (s finite, c not zero), so a padded polynomial's value keeps its bits."""
    lists = [_ERFF[r[key]] for r in ranges]
    n = max(map(len, lists))
    return list(zip(*(tuple(c) + (0,) * (n - len(c)) for c in lists)))


def _by_range(L: _Lines, masks, values) -> str:
    """Each lane's value of its range: values[i] where masks[i] (|x| below range i's bound)
    is the first mask set, the last value where none is."""
    if len(set(values)) == 1:
        return L.splat("float", _f(values[0]))
    acc = L.splat("float", _f(values[-1]))
    for mask, value in reversed(list(zip(masks, values))[:-1]):
        acc = _select(L, mask, L.splat("float", _f(value)), acc)
    return acc


def _rational(L: _Lines, s: str, ranges, masks) -> str:
    """P(s)/Q(s) of each lane's range among `ranges`: P and Q each one Horner chain in float,
    innermost first as the C source groups it, with per-lane coefficients; one division."""
    f32 = L.t("float")
    polys = []
    for key in (1, 2):
        columns = _columns(ranges, key)
        acc = _by_range(L, masks, columns[-1])
        for c in reversed(columns[:-1]):
            acc = L.op(f"fmul {f32} {s}, {acc}")
            acc = L.op(f"fadd {f32} {_by_range(L, masks, c)}, {acc}")
        polys.append(acc)
    return L.op(f"fdiv {f32} {polys[0]}, {polys[1]}")


def _select(L: _Lines, cond: str, a: str, b: str) -> str:
    return L.op(f"select <{L.w} x i1> {cond}, {L.t('float')} {a}, {L.t('float')} {b}")


def _erff_tail(L: _Lines, x: str, ax: str, negative: str, masks) -> tuple[str, str]:
    """(P/Q of every range, the tail's value) for a vector with a lane at 1.25 <= |x| < 6:
    there R/S in 1/(x*x), then exp(-z*z - 0.5625) * exp((z-x)*(z+x) + R/S) / |x| with z = |x|
    cut to 12 mantissa bits."""
    f32, i32 = L.t("float"), L.t("i32")
    one = L.splat("float", "1.0")
    axbits = L.op(f"bitcast {f32} {ax} to {i32}")
    zbits = L.op(f"and {i32} {axbits}, {L.splat('i32', str(0xfffff000))}")
    zz = L.op(f"bitcast {i32} {zbits} to {f32}")
    nz = L.op(f"fneg {f32} {zz}")
    e1 = L.op(f"fsub {f32} {L.op(f'fmul {f32} {nz}, {zz}')}, {L.splat('float', _f(0x3f100000))}")
    x2 = L.op(f"fmul {f32} {x}, {x}")  # the bits of |x|*|x|
    s = _select(L, masks[0], x2, _select(L, masks[1], L.op(f"fsub {f32} {ax}, {one}"),
                                          L.op(f"fdiv {f32} {one}, {x2}")))
    pq = _rational(L, s, _ERFF_RANGES, masks)
    zmx = L.op(f"fsub {f32} {zz}, {ax}")
    zpx = L.op(f"fadd {f32} {zz}, {ax}")
    e2 = L.op(f"fadd {f32} {L.op(f'fmul {f32} {zmx}, {zpx}')}, {pq}")
    exp1, _ = _expf_fast(L, e1)
    exp2, _ = _expf_fast(L, e2)  # both arguments lie well inside expf's fast path
    rr = L.op(f"fmul {f32} {exp1}, {exp2}")
    rx = L.op(f"fdiv {f32} {rr}, {ax}")
    return pq, _select(L, negative, L.op(f"fsub {f32} {rx}, {one}"), L.op(f"fsub {f32} {one}, {rx}"))


def _erff_combine(L: _Lines, x: str, pq: str, tail: str, negative: str, masks) -> str:
    """Each lane's erff from its range's P/Q (and the tail's value, 1.25 <= |x| < 6)."""
    f32 = L.t("float")
    one = L.splat("float", "1.0")
    small = L.op(f"fadd {f32} {x}, {L.op(f'fmul {f32} {x}, {pq}')}")  # |x| < 0.84375: x + x*(P/Q)
    mid_pos = L.op(f"fadd {f32} {L.splat('float', _f(_ERFF['erx']))}, {pq}")  # < 1.25: +-erx +- P/Q
    mid_neg = L.op(f"fsub {f32} {L.splat('float', _f(_ERFF['erx'] | 0x80000000))}, {pq}")
    middle = _select(L, negative, mid_neg, mid_pos)
    # |x| >= 6: one - tiny, tiny - one
    tiny = L.splat("float", _d(float(struct.unpack("<f", struct.pack("<f", 1e-30))[0])))
    sat = _select(L, negative, L.op(f"fsub {f32} {tiny}, {one}"), L.op(f"fsub {f32} {one}, {tiny}"))
    out = _select(L, masks[3], tail, sat)
    out = _select(L, masks[1], middle, out)
    return _select(L, masks[0], small, out)


def _erff_fast(L: _Lines, x: str) -> tuple[str, str]:
    """glibc erff, one rational function per lane with its range's coefficients, the shortest
    that covers the vector's ranges (|x| < 0.84375 on all lanes, < 1.25, else all four with
    the tail's two expf); NaN, infinities and |x| < 2^-28 go to the scalar call."""
    f32, i32 = L.t("float"), L.t("i32")
    one = L.splat("float", "1.0")
    hx = L.op(f"bitcast {f32} {x} to {i32}")
    ix = L.op(f"and {i32} {hx}, {L.splat('i32', str(0x7fffffff))}")
    negative = L.op(f"icmp slt {i32} {hx}, zeroinitializer")

    def below(bound: int) -> str:
        return L.op(f"icmp ult {i32} {ix}, {L.splat('i32', str(bound))}")

    not_finite = L.op(f"icmp uge {i32} {ix}, {L.splat('i32', str(0x7f800000))}")
    special = L.op(f"or <{L.w} x i1> {not_finite}, {below(0x31800000)}")
    masks = [below(bound) for bound, _, _ in _ERFF_RANGES]
    ax = L.op(f"call {f32} @llvm.fabs.v{L.w}f32({f32} {x})")
    in_tail = L.op(f"xor <{L.w} x i1> {masks[1]}, {masks[3]}")
    not_small = L.op(f"xor <{L.w} x i1> {masks[0]}, splat (i1 true)")
    L.lines.append(f"  br i1 {L.any(in_tail)}, label %erf.tail, label %erf.head")
    L.label("erf.tail")
    pq, tail = _erff_tail(L, x, ax, negative, masks)
    out_tail = _erff_combine(L, x, pq, tail, negative, masks)
    L.lines.append("  br label %erf.join")
    L.label("erf.head")
    z = L.op(f"fmul {f32} {x}, {x}")
    L.lines.append(f"  br i1 {L.any(not_small)}, label %erf.middle, label %erf.small")
    L.label("erf.small")  # every lane |x| < 0.84375: x + x*(P/Q)
    pq = _rational(L, z, _ERFF_RANGES[:1], masks)
    out_small = L.op(f"fadd {f32} {x}, {L.op(f'fmul {f32} {x}, {pq}')}")
    L.lines.append("  br label %erf.join")
    L.label("erf.middle")
    pq = _rational(L, _select(L, masks[0], z, L.op(f"fsub {f32} {ax}, {one}")), _ERFF_RANGES[:2], masks)
    out_middle = _erff_combine(L, x, pq, "poison", negative, masks)
    L.lines.append("  br label %erf.join")
    L.label("erf.join")
    out = L.op(f"phi {f32} [ {out_tail}, %erf.tail ], [ {out_small}, %erf.small ], [ {out_middle}, %erf.middle ]")
    return out, special


# glibc's __logf_data (sysdeps/ieee754/flt-32/e_logf_data.c): (1/c, log c) per subinterval.
_LOGF_TABLE = (
    ("0x1.661ec79f8f3bep+0", "-0x1.57bf7808caadep-2"), ("0x1.571ed4aaf883dp+0", "-0x1.2bef0a7c06ddbp-2"),
    ("0x1.49539f0f010bp+0", "-0x1.01eae7f513a67p-2"), ("0x1.3c995b0b80385p+0", "-0x1.b31d8a68224e9p-3"),
    ("0x1.30d190c8864a5p+0", "-0x1.6574f0ac07758p-3"), ("0x1.25e227b0b8eap+0", "-0x1.1aa2bc79c81p-3"),
    ("0x1.1bb4a4a1a343fp+0", "-0x1.a4e76ce8c0e5ep-4"), ("0x1.12358f08ae5bap+0", "-0x1.1973c5a611cccp-4"),
    ("0x1.0953f419900a7p+0", "-0x1.252f438e10c1ep-5"), ("0x1p+0", "0x0p+0"),
    ("0x1.e608cfd9a47acp-1", "0x1.aa5aa5df25984p-5"), ("0x1.ca4b31f026aap-1", "0x1.c5e53aa362eb4p-4"),
    ("0x1.b2036576afce6p-1", "0x1.526e57720db08p-3"), ("0x1.9c2d163a1aa2dp-1", "0x1.bc2860d22477p-3"),
    ("0x1.886e6037841edp-1", "0x1.1058bc8a07ee1p-2"), ("0x1.767dcf5534862p-1", "0x1.4043057b6ee09p-2"),
)
_LOGF_LN2 = float.fromhex("0x1.62e42fefa39efp-1")
_LOGF_POLY = tuple(float.fromhex(c) for c in ("-0x1.00ea348b88334p-2", "0x1.5575b0be00b6ap-2", "-0x1.ffffef20a4123p-2"))


_LOGF_GLOBAL = ("@jv.logf.table = internal unnamed_addr constant [32 x i64] ["
                + ", ".join(f"i64 {int(_d(float.fromhex(v)), 16)}" for pair in _LOGF_TABLE for v in pair) + "], align 8")


def _logf_fast(L: _Lines, x: str) -> tuple[str, str]:
    """glibc logf's main path (FMA build) on every lane; zero, negative, subnormal, inf and NaN
    lanes go to the scalar call."""
    w, f32, f64, i32, i64 = L.w, L.t("float"), L.t("double"), L.t("i32"), L.t("i64")
    fma = f"@llvm.fma.v{w}f64"
    ix = L.op(f"bitcast {f32} {x} to {i32}")
    low = L.op(f"sub {i32} {ix}, {L.splat('i32', str(0x00800000))}")
    special = L.op(f"icmp uge {i32} {low}, {L.splat('i32', str(0x7f800000 - 0x00800000))}")
    tmp = L.op(f"sub {i32} {ix}, {L.splat('i32', str(0x3f330000))}")
    sub = L.op(f"lshr {i32} {tmp}, {L.splat('i32', '19')}")
    i = L.op(f"and {i32} {sub}, {L.splat('i32', '15')}")
    k = L.op(f"ashr {i32} {tmp}, {L.splat('i32', '23')}")
    top = L.op(f"and {i32} {tmp}, {L.splat('i32', str(0xff800000))}")
    iz = L.op(f"sub {i32} {ix}, {top}")
    i2 = L.op(f"shl {i32} {i}, {L.splat('i32', '1')}")
    inv_index = L.op(f"zext {i32} {i2} to {i64}")
    log_index = L.op(f"or {i64} {inv_index}, {L.splat('i64', '1')}")
    invc = L.op(f"bitcast {i64} {_lookup(L, '@jv.logf.table', inv_index)} to {f64}")
    logc = L.op(f"bitcast {i64} {_lookup(L, '@jv.logf.table', log_index)} to {f64}")
    zf = L.op(f"bitcast {i32} {iz} to {f32}")
    z = L.op(f"fpext {f32} {zf} to {f64}")
    r = L.op(f"call {f64} {fma}({f64} {z}, {f64} {invc}, {f64} {L.splat('double', '-1.0')})")
    kd = L.op(f"sitofp {i32} {k} to {f64}")
    y0 = L.op(f"call {f64} {fma}({f64} {kd}, {f64} {L.splat('double', _d(_LOGF_LN2))}, {f64} {logc})")
    a0, a1, a2 = (L.splat("double", _d(c)) for c in _LOGF_POLY)
    r2 = L.op(f"fmul {f64} {r}, {r}")
    y = L.op(f"call {f64} {fma}({f64} {r}, {f64} {a1}, {f64} {a2})")
    y = L.op(f"call {f64} {fma}({f64} {r2}, {f64} {a0}, {f64} {y})")
    y0r = L.op(f"fadd {f64} {y0}, {r}")
    y = L.op(f"call {f64} {fma}({f64} {y}, {f64} {r2}, {f64} {y0r})")
    return L.op(f"fptrunc {f64} {y} to {f32}"), special


_FAST = {"expf": _expf_fast, "erff": _erff_fast, "logf": _logf_fast}
_EXP2F_GLOBAL = ("@jv.exp2f.table = internal unnamed_addr constant [32 x i64] ["
                 + ", ".join(f"i64 {v}" for v in _EXP2F_TABLE) + "], align 8")
_GLOBALS = {"expf": _EXP2F_GLOBAL, "erff": _EXP2F_GLOBAL, "logf": _LOGF_GLOBAL}  # the tables a function's forms read
FUNCTIONS = tuple(_FAST)  # the libm functions with vector forms
SCALAR_NAME = {name: f"jv.{name}" for name in FUNCTIONS}


def vector_name(name: str, width: int) -> str:
    return f"jv.{name}.v{width}"


def widths(wide: bool = False) -> tuple[int, ...]:
    """The lane counts of the forms (see the module's docstring on `wide`)."""
    return WIDE_WIDTHS if wide else WIDTHS


def _vector_function(name: str, width: int, wide: bool = False) -> str:
    """`name`'s vector form: the fast path on all lanes, then the scalar call on the lanes it
    does not cover (a branch taken only when one does)."""
    L = _Lines(width, wide)
    f32 = L.t("float")
    out, special = _FAST[name](L, "%x")
    anyslow = L.any(special)
    body = [f"define internal {f32} @{vector_name(name, width)}({f32} %x) nounwind {{", "entry:"]
    body += L.lines
    last = L.block
    body.append(f"  br i1 {anyslow}, label %slow0, label %done, !prof !{{!\"branch_weights\", i32 1, i32 1000}}")
    acc = out
    for lane in range(width):
        body += [
            f"slow{lane}:",
            f"  %acc{lane} = phi {f32} [ {acc}, %{last if lane == 0 else f'join{lane - 1}'} ]",
            f"  %s{lane} = extractelement <{width} x i1> {special}, i32 {lane}",
            f"  br i1 %s{lane}, label %call{lane}, label %join{lane}",
            f"call{lane}:",
            f"  %x{lane} = extractelement {f32} %x, i32 {lane}",
            f"  %y{lane} = call float @{name}(float %x{lane}) nobuiltin",
            f"  %ins{lane} = insertelement {f32} %acc{lane}, float %y{lane}, i32 {lane}",
            f"  br label %join{lane}",
            f"join{lane}:",
            f"  %res{lane} = phi {f32} [ %acc{lane}, %slow{lane} ], [ %ins{lane}, %call{lane} ]",
        ]
        body.append(f"  br label %{'slow' + str(lane + 1) if lane + 1 < width else 'done'}")
        acc = f"%res{lane}"
    body += ["done:", f"  %r = phi {f32} [ {out}, %{last} ], [ {acc}, %join{width - 1} ]", f"  ret {f32} %r", "}"]
    return "\n".join(body).replace(f"slow{width}", "done")


def _variants(name: str, wide: bool) -> str:
    return ",".join(f"_ZGV_LLVM_N{w}v_{SCALAR_NAME[name]}({vector_name(name, w)})" for w in widths(wide))


def _scalar_wrapper(name: str, wide: bool = False) -> str:
    """The function lowering calls: libm's, pure to LLVM (errno is not IREE's concern), never
    inlined before the vectoriser has seen the variants it names."""
    variants = _variants(name, wide)
    return (f"define internal float @{SCALAR_NAME[name]}(float %x) noinline nounwind willreturn "
            f"memory(none) {{\n  %r = call float @{name}(float %x) nobuiltin\n  ret float %r\n}}\n"
            f"; variants: {variants}")


def call_attributes(name: str, wide: bool = False) -> str:
    """The attribute a call of `SCALAR_NAME[name]` carries so the vectoriser knows its forms."""
    return f'"vector-function-abi-variant"="{_variants(name, wide)}"'


def definitions(names, declare_libm: bool = True, wide: bool = False) -> str:
    """IR text defining the scalar wrappers and vector forms of `names` (and their tables),
    kept alive for the vectoriser by llvm.compiler.used (`declare_libm`: with declarations
    of the libm functions, for a module that does not declare them itself; `wide`: the
    AVX-512 forms, see the module's docstring)."""
    names = sorted(names)
    parts, used = [], []
    for table in sorted({_GLOBALS[name] for name in names}):
        parts.append(table)
    for name in names:
        parts.append(_scalar_wrapper(name, wide))
        for w in widths(wide):
            parts.append(_vector_function(name, w, wide))
            used.append(f"ptr @{vector_name(name, w)}")
        if declare_libm:
            parts.append(f"declare float @{name}(float) nounwind")
    parts.append(f"@llvm.compiler.used = appending global [{len(used)} x ptr] [{', '.join(used)}], "
                 f'section "llvm.metadata"')
    return "\n".join(parts) + "\n"


def map_function(name: str, symbol: str, width: int | None = None) -> str:
    """`void symbol(ptr in, ptr out, i64 n)`: out[i] = name(in[i]) for i < n: with `width`,
    `width` lanes at a time through the vector form (n a multiple of it); else one at a time
    through libm itself (the reference)."""
    step = width or 1
    t = f"<{width} x float>" if width else "float"
    call = f"call {t} @{vector_name(name, width)}({t} %x)" if width else f"call float @{name}(float %x) nobuiltin"
    return f"""define void @{symbol}(ptr noalias %in, ptr noalias %out, i64 %n) nounwind {{
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %p = getelementptr float, ptr %in, i64 %i
  %x = load {t}, ptr %p, align 4
  %y = {call}
  %q = getelementptr float, ptr %out, i64 %i
  store {t} %y, ptr %q, align 4
  %next = add i64 %i, {step}
  %more = icmp ult i64 %next, %n
  br i1 %more, label %loop, label %exit
exit:
  ret void
}}
"""
