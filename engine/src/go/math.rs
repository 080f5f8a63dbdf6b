//! Go's `math` package as gopher-lua's math library calls it, bit for bit: Kruise's
//! controller is built with Go 1.19/1.20 for amd64, where `Exp` and `Log` are assembly
//! (`exp_amd64.s`, `log_amd64.s`) and the trigonometric, hyperbolic, `Pow`, `Modf`,
//! `Ldexp`, `Frexp` and `Mod` functions are pure Go (Cephes/FDLIBM algorithms), so their
//! last digit often differs from glibc's correctly rounded results.
//!
//! Written from Go 1.19.8's `src/math` (file and function named at each item); the
//! algorithms and constants did not change in Go 1.20. Go's constant expressions (`4/Pi`,
//! `3*Pi/4`, `1/Ln10`) are exact before rounding, so they appear here as bit patterns.
//! Coefficients keep Go's decimal text (more digits than an f64 holds; they round to the
//! same values), so that they can be compared with the source.
#![allow(clippy::excessive_precision)]

use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

/// Go's `4 / Pi`, rounded once (sin.go, tan.go).
const FOUR_OVER_PI: f64 = f64::from_bits(0x3ff4_5f30_6dc9_c883);
/// Go's `3 * Pi / 4` (atan2.go).
const THREE_PI_4: f64 = f64::from_bits(0x4002_d97c_7f33_21d2);
/// Go's `1 / Ln10` (log10.go).
const INV_LN10: f64 = f64::from_bits(0x3fdb_cb7b_1526_e50e);

/// Go's `int64(f)` on amd64: out-of-range values and NaN become the minimum int64
/// (the `CVTTSD2SQ` "integer indefinite" value) instead of saturating as Rust's `as` does.
pub(crate) fn go_float_to_int64(f: f64) -> i64 {
    // 2^63: the first value outside int64.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

const SHIFT: u32 = 52;
const MASK: u64 = 0x7ff;
const BIAS: i64 = 1023;

/// bits.go `normalize`: a subnormal scaled up to a normal and its exponent offset.
fn normalize(x: f64) -> (f64, i64) {
    const SMALLEST_NORMAL: f64 = 2.2250738585072014e-308;
    if x.abs() < SMALLEST_NORMAL {
        (x * (1u64 << 52) as f64, -52)
    } else {
        (x, 0)
    }
}

/// exp_amd64.s `archExp` on a CPU with AVX and FMA (every amd64 server of the last
/// decade; Go picks this path at run time through `useFMA`): reduction by k·ln2 in two
/// parts, a degree-8 Taylor polynomial of x/16, squared four times, scaled by 2^k.
pub fn exp(x: f64) -> f64 {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    const LN2U: f64 = 0.693_147_180_559_662_956_511_601_805_686_950_683_593_75;
    const LN2L: f64 = 0.282_352_905_630_315_771_225_884_481_750_134_360_255_254_120_68e-12;
    const OVERFLOW: f64 = 7.097_827_128_933_84e+02;
    const T: [f64; 9] = [
        0.5,
        1.0,
        2.0,
        1.666_666_666_666_666_666_7e-1,
        4.166_666_666_666_666_666_7e-2,
        8.333_333_333_333_333_333_3e-3,
        1.388_888_888_888_888_888_9e-3,
        1.984_126_984_126_984_127_0e-4,
        2.480_158_730_158_730_158_7e-5,
    ];
    let bits = x.to_bits();
    if bits & !(1 << 63) >= 0x7ff0_0000_0000_0000 {
        // -Inf gives 0; NaN and +Inf are returned.
        return if bits == 0xfff0_0000_0000_0000 {
            0.0
        } else {
            x
        };
    }
    if x > OVERFLOW {
        return f64::INFINITY;
    }
    // CVTSD2SL: round to nearest even; out of int32 range gives 0x80000000.
    let kf = (LOG2E * x).round_ties_even();
    let k: i32 = if (-2_147_483_648.0..2_147_483_648.0).contains(&kf) {
        kf as i32
    } else {
        i32::MIN
    };
    let kd = k as f64;
    // VFNMADD231SD: x - k*c, fused.
    let mut r = (-LN2U).mul_add(kd, x);
    r = (-LN2L).mul_add(kd, r);
    r *= 0.0625;
    let mut p = T[8];
    for c in [T[7], T[6], T[5], T[4], T[3], T[0], T[1]] {
        p = p.mul_add(r, c);
    }
    r *= p;
    for _ in 0..3 {
        let t = r + T[2];
        r *= t;
    }
    let t = r + T[2];
    r = r.mul_add(t, T[1]);
    // ldexp: 2^k built in the exponent field, in one or two steps.
    let mut e = k.wrapping_add(0x3ff);
    if e <= 0 {
        if e < -52 {
            return 0.0;
        }
        e = e.wrapping_add(0x3fe);
        r *= f64::from_bits((e as u32 as u64) << 52);
        e = 1;
    } else if e >= 0x7ff {
        return f64::INFINITY;
    }
    r * f64::from_bits((e as u32 as u64) << 52)
}

/// log_amd64.s `archLog`: FDLIBM's log with the exponent taken straight from the bits
/// (so subnormal inputs are not normalized, as in the assembly).
pub fn log(x: f64) -> f64 {
    const HSQRT2: f64 = std::f64::consts::FRAC_1_SQRT_2; // Go: 7.07106781186547524401e-01
    const LN2HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    const L1: f64 = f64::from_bits(0x3FE5_5555_5555_5593);
    const L2: f64 = f64::from_bits(0x3FD9_9999_9997_FA04);
    const L3: f64 = f64::from_bits(0x3FD2_4924_9422_9359);
    const L4: f64 = f64::from_bits(0x3FCC_71C5_1D8E_78AF);
    const L5: f64 = f64::from_bits(0x3FC7_4664_96CB_03DE);
    const L6: f64 = f64::from_bits(0x3FC3_9A09_D078_C69F);
    const L7: f64 = f64::from_bits(0x3FC2_F112_DF3E_5244);
    let bits = x.to_bits();
    if bits & !(1 << 63) == 0 {
        return f64::NEG_INFINITY;
    }
    if (bits as i64) < 0 {
        return f64::from_bits(0x7FF8_0000_0000_0001);
    }
    if bits >= 0x7ff0_0000_0000_0000 {
        return x;
    }
    let mut f1 = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FE0_0000_0000_0000);
    let mut k = (((bits >> 52) & 0x7ff) as i32 - 0x3fe) as f64;
    if f1 < HSQRT2 {
        k -= 1.0;
        f1 *= 2.0;
    }
    let f = f1 - 1.0;
    let s = f / (2.0 + f);
    let s2 = s * s;
    let s4 = s2 * s2;
    let t1 = s2 * (((L7 * s4 + L5) * s4 + L3) * s4 + L1);
    let t2 = s4 * ((L6 * s4 + L4) * s4 + L2);
    let r = t1 + t2;
    let hfsq = 0.5 * f * f;
    k * LN2HI - ((hfsq - (s * (hfsq + r) + k * LN2LO)) - f)
}

/// log10.go `log10`.
pub fn log10(x: f64) -> f64 {
    log(x) * INV_LN10
}

/// frexp.go `frexp`.
pub fn frexp(f: f64) -> (f64, i64) {
    if f == 0.0 || f.is_infinite() || f.is_nan() {
        return (f, 0);
    }
    let (f, mut exp) = normalize(f);
    let mut x = f.to_bits();
    exp += ((x >> SHIFT) & MASK) as i64 - BIAS + 1;
    x &= !(MASK << SHIFT);
    x |= ((BIAS - 1) as u64) << SHIFT;
    (f64::from_bits(x), exp)
}

/// ldexp.go `ldexp`, with Go's 64-bit `int` exponent (wrapping like Go's `+`).
pub fn ldexp(frac: f64, exp: i64) -> f64 {
    if frac == 0.0 || frac.is_infinite() || frac.is_nan() {
        return frac;
    }
    let (frac, e) = normalize(frac);
    let mut exp = exp.wrapping_add(e);
    let mut x = frac.to_bits();
    exp = exp.wrapping_add(((x >> SHIFT) & MASK) as i64 - BIAS);
    if exp < -1075 {
        return 0.0f64.copysign(frac);
    }
    if exp > 1023 {
        return if frac < 0.0 {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    let mut m = 1.0;
    if exp < -1022 {
        exp += 53;
        m = 1.0 / (1u64 << 53) as f64;
    }
    x &= !(MASK << SHIFT);
    x |= ((exp + BIAS) as u64) << SHIFT;
    m * f64::from_bits(x)
}

/// modf.go `modf`: `Modf(±Inf)` is `(±Inf, NaN)`.
pub fn modf(f: f64) -> (f64, f64) {
    if f < 1.0 {
        if f < 0.0 {
            let (i, fr) = modf(-f);
            return (-i, -fr);
        }
        if f == 0.0 {
            return (f, f);
        }
        return (0.0, f);
    }
    let mut x = f.to_bits();
    let e = (((x >> SHIFT) & MASK) as i64 - BIAS) as u64;
    if e < 64 - 12 {
        x &= !((1u64 << (64 - 12 - e)) - 1);
    }
    let int = f64::from_bits(x);
    (int, f - int)
}

/// mod.go `mod`: the exact remainder, with x's sign.
pub fn fmod(x: f64, y: f64) -> f64 {
    if y == 0.0 || x.is_infinite() || x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    let y = y.abs();
    let (yfr, yexp) = frexp(y);
    let mut r = if x < 0.0 { -x } else { x };
    while r >= y {
        let (rfr, mut rexp) = frexp(r);
        if rfr < yfr {
            rexp -= 1;
        }
        r -= ldexp(y, rexp - yexp);
    }
    if x < 0.0 { -r } else { r }
}

/// trig_reduce.go `mPi4`: the bits of 4/π.
const M_PI4: [u64; 20] = [
    0x0000000000000001,
    0x45f306dc9c882a53,
    0xf84eafa3ea69bb81,
    0xb6c52b3278872083,
    0xfca2c757bd778ac3,
    0x6e48dc74849ba5c0,
    0x0c925dd413a32439,
    0xfc3bd63962534e7d,
    0xd1046bea5d768909,
    0xd338e04d68befc82,
    0x7323ac7306a673e9,
    0x3908bf177bf25076,
    0x3ff12fffbc0b301f,
    0xde5e2316b414da3e,
    0xda6cfd9e4f96136e,
    0x9e8c7ecd3cbfd45a,
    0xea4f758fd7cbe2f6,
    0x7a0e73ef14a525d4,
    0xd7f6bf623f1aba10,
    0xac06608df8f6d757,
];

/// trig_reduce.go `reduceThreshold`: Payne-Hanek reduction from 2^29 on.
const REDUCE_THRESHOLD: f64 = (1u64 << 29) as f64;

/// Go's `<<`/`>>`: a shift by 64 or more gives 0.
fn shl(x: u64, n: u32) -> u64 {
    x.checked_shl(n).unwrap_or(0)
}
fn shr(x: u64, n: u32) -> u64 {
    x.checked_shr(n).unwrap_or(0)
}

/// trig_reduce.go `trigReduce`: x mod π/4 for huge x, with the octant.
fn trig_reduce(x: f64) -> (u64, f64) {
    if x < FRAC_PI_4 {
        return (0, x);
    }
    let mut ix = x.to_bits();
    let exp = ((ix >> SHIFT) & MASK) as i64 - BIAS - SHIFT as i64;
    ix &= !(MASK << SHIFT);
    ix |= 1 << SHIFT;
    let digit = ((exp + 61) / 64) as usize;
    let bitshift = ((exp + 61) % 64) as u32;
    let z0 = shl(M_PI4[digit], bitshift) | shr(M_PI4[digit + 1], 64 - bitshift);
    let z1 = shl(M_PI4[digit + 1], bitshift) | shr(M_PI4[digit + 2], 64 - bitshift);
    let z2 = shl(M_PI4[digit + 2], bitshift) | shr(M_PI4[digit + 3], 64 - bitshift);
    let z2hi = ((z2 as u128 * ix as u128) >> 64) as u64;
    let z1prod = z1 as u128 * ix as u128;
    let (z1hi, z1lo) = ((z1prod >> 64) as u64, z1prod as u64);
    let z0lo = z0.wrapping_mul(ix);
    let (lo, carry) = z1lo.overflowing_add(z2hi);
    let hi = z0lo.wrapping_add(z1hi).wrapping_add(carry as u64);
    let mut j = hi >> 61;
    let mut hi = (hi << 3) | (lo >> 61);
    let lz = hi.leading_zeros();
    let e = (BIAS as u64).wrapping_sub(lz as u64 + 1);
    hi = shl(hi, lz + 1) | shr(lo, 64 - (lz + 1));
    hi >>= 64 - SHIFT;
    hi |= e << SHIFT;
    let mut z = f64::from_bits(hi);
    if j & 1 == 1 {
        j += 1;
        j &= 7;
        z -= 1.0;
    }
    (j, z * FRAC_PI_4)
}

const PI4A: f64 = 7.853_981_256_484_985_351_56e-1;
const PI4B: f64 = 3.774_894_707_930_798_176_68e-8;
const PI4C: f64 = 2.695_151_429_079_059_526_45e-15;

/// sin.go `_sin`, `_cos`.
const SIN: [f64; 6] = [
    1.589_623_015_765_465_680_60e-10,
    -2.505_074_776_285_780_728_66e-8,
    2.755_731_362_138_572_452_13e-6,
    -1.984_126_982_958_953_859_96e-4,
    8.333_333_333_322_118_588_78e-3,
    -1.666_666_666_666_663_072_95e-1,
];
const COS: [f64; 6] = [
    -1.135_853_652_138_768_173_00e-11,
    2.087_570_084_197_473_167_78e-9,
    -2.755_731_417_929_673_881_12e-7,
    2.480_158_728_885_170_453_48e-5,
    -1.388_888_888_887_305_641_16e-3,
    4.166_666_666_666_659_292_18e-2,
];

/// The octant and the reduced argument of |x| (sin.go, shared by sin/cos/tan).
fn octant(x: f64) -> (u64, f64) {
    if x >= REDUCE_THRESHOLD {
        trig_reduce(x)
    } else {
        let mut j = (x * FOUR_OVER_PI) as u64;
        let mut y = j as f64;
        if j & 1 == 1 {
            j += 1;
            y += 1.0;
        }
        ((j), ((x - y * PI4A) - y * PI4B) - y * PI4C)
    }
}

fn sin_poly(z: f64, zz: f64) -> f64 {
    z + z
        * zz
        * (((((SIN[0] * zz + SIN[1]) * zz + SIN[2]) * zz + SIN[3]) * zz + SIN[4]) * zz + SIN[5])
}

fn cos_poly(zz: f64) -> f64 {
    1.0 - 0.5 * zz
        + zz * zz
            * (((((COS[0] * zz + COS[1]) * zz + COS[2]) * zz + COS[3]) * zz + COS[4]) * zz + COS[5])
}

/// sin.go `sin`.
pub fn sin(x: f64) -> f64 {
    if x == 0.0 || x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return f64::NAN;
    }
    let mut sign = x < 0.0;
    let (mut j, z) = octant(x.abs());
    j &= 7;
    if j > 3 {
        sign = !sign;
        j -= 4;
    }
    let zz = z * z;
    let y = if j == 1 || j == 2 {
        cos_poly(zz)
    } else {
        sin_poly(z, zz)
    };
    if sign { -y } else { y }
}

/// sin.go `cos`.
pub fn cos(x: f64) -> f64 {
    if x.is_nan() || x.is_infinite() {
        return f64::NAN;
    }
    let mut sign = false;
    let (mut j, z) = octant(x.abs());
    j &= 7;
    if j > 3 {
        j -= 4;
        sign = !sign;
    }
    if j > 1 {
        sign = !sign;
    }
    let zz = z * z;
    let y = if j == 1 || j == 2 {
        sin_poly(z, zz)
    } else {
        cos_poly(zz)
    };
    if sign { -y } else { y }
}

/// tan.go `tan`.
pub fn tan(x: f64) -> f64 {
    const P: [f64; 3] = [
        -1.309_369_391_813_837_776_46e4,
        1.153_516_648_385_874_161_40e6,
        -1.795_652_519_764_848_779_88e7,
    ];
    const Q: [f64; 5] = [
        1.0,
        1.368_129_634_706_929_546_78e4,
        -1.320_892_344_402_109_674_47e6,
        2.500_838_018_233_579_158_39e7,
        -5.386_957_559_294_546_298_81e7,
    ];
    if x == 0.0 || x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return f64::NAN;
    }
    let sign = x < 0.0;
    // tan does not mask the octant to 0..7 before testing bit 2 (tan.go).
    let (j, z) = octant(x.abs());
    let zz = z * z;
    let mut y = if zz > 1e-14 {
        z + z
            * (zz * ((P[0] * zz + P[1]) * zz + P[2])
                / ((((zz + Q[1]) * zz + Q[2]) * zz + Q[3]) * zz + Q[4]))
    } else {
        z
    };
    if j & 2 == 2 {
        y = -1.0 / y;
    }
    if sign { -y } else { y }
}

/// atan.go `xatan`.
fn xatan(x: f64) -> f64 {
    const P0: f64 = -8.750_608_600_031_904_122_785e-01;
    const P1: f64 = -1.615_753_718_733_365_076_637e+01;
    const P2: f64 = -7.500_855_792_314_704_667_340e+01;
    const P3: f64 = -1.228_866_684_490_136_173_410e+02;
    const P4: f64 = -6.485_021_904_942_025_371_773e+01;
    const Q0: f64 = 2.485_846_490_142_306_297_962e+01;
    const Q1: f64 = 1.650_270_098_316_988_542_046e+02;
    const Q2: f64 = 4.328_810_604_912_902_668_951e+02;
    const Q3: f64 = 4.853_903_996_359_136_964_868e+02;
    const Q4: f64 = 1.945_506_571_482_613_964_425e+02;
    let mut z = x * x;
    z = z * ((((P0 * z + P1) * z + P2) * z + P3) * z + P4)
        / (((((z + Q0) * z + Q1) * z + Q2) * z + Q3) * z + Q4);
    x * z + x
}

/// atan.go `satan`: argument reduction for x >= 0.
fn satan(x: f64) -> f64 {
    const MOREBITS: f64 = 6.123_233_995_736_765_886_130e-17;
    const TAN3PIO8: f64 = 2.414_213_562_373_095_048_80;
    if x <= 0.66 {
        return xatan(x);
    }
    if x > TAN3PIO8 {
        return FRAC_PI_2 - xatan(1.0 / x) + MOREBITS;
    }
    FRAC_PI_4 + xatan((x - 1.0) / (x + 1.0)) + 0.5 * MOREBITS
}

/// atan.go `atan`.
pub fn atan(x: f64) -> f64 {
    if x == 0.0 {
        x
    } else if x > 0.0 {
        satan(x)
    } else {
        -satan(-x)
    }
}

/// asin.go `asin`.
pub fn asin(x: f64) -> f64 {
    if x == 0.0 {
        return x;
    }
    let sign = x < 0.0;
    let x = x.abs();
    if x > 1.0 {
        return f64::NAN;
    }
    let mut temp = (1.0 - x * x).sqrt();
    if x > 0.7 {
        temp = FRAC_PI_2 - satan(temp / x);
    } else {
        temp = satan(x / temp);
    }
    if sign { -temp } else { temp }
}

/// asin.go `acos`.
pub fn acos(x: f64) -> f64 {
    FRAC_PI_2 - asin(x)
}

/// atan2.go `atan2`.
pub fn atan2(y: f64, x: f64) -> f64 {
    if y.is_nan() || x.is_nan() {
        return f64::NAN;
    }
    if y == 0.0 {
        return if x >= 0.0 && !x.is_sign_negative() {
            0.0f64.copysign(y)
        } else {
            PI.copysign(y)
        };
    }
    if x == 0.0 {
        return FRAC_PI_2.copysign(y);
    }
    if x.is_infinite() {
        if x > 0.0 {
            return if y.is_infinite() {
                FRAC_PI_4.copysign(y)
            } else {
                0.0f64.copysign(y)
            };
        }
        return if y.is_infinite() {
            THREE_PI_4.copysign(y)
        } else {
            PI.copysign(y)
        };
    }
    if y.is_infinite() {
        return FRAC_PI_2.copysign(y);
    }
    let q = atan(y / x);
    if x < 0.0 {
        if q <= 0.0 {
            return q + PI;
        }
        return q - PI;
    }
    q
}

/// sinh.go `sinh`.
pub fn sinh(x: f64) -> f64 {
    const P0: f64 = -0.630_767_364_049_771_699_118_478_725_1e+6;
    const P1: f64 = -0.899_127_202_203_950_935_539_801_351_1e+5;
    const P2: f64 = -0.289_421_135_598_956_380_728_466_036_6e+4;
    const P3: f64 = -0.263_056_321_339_749_706_281_948_9e+2;
    const Q0: f64 = -0.630_767_364_049_771_699_121_207_727_7e+6;
    const Q1: f64 = 0.152_151_737_879_001_907_069_648_517_6e+5;
    const Q2: f64 = -0.173_678_953_558_233_699_533_450_911e+3;
    // Go negates only when `x < 0`, so -0 passes through and keeps its sign (not `abs`).
    let sign = x < 0.0;
    let x = if sign { -x } else { x };
    let temp = if x > 21.0 {
        exp(x) * 0.5
    } else if x > 0.5 {
        let ex = exp(x);
        (ex - 1.0 / ex) * 0.5
    } else {
        let sq = x * x;
        let t = (((P3 * sq + P2) * sq + P1) * sq + P0) * x;
        t / (((sq + Q2) * sq + Q1) * sq + Q0)
    };
    if sign { -temp } else { temp }
}

/// sinh.go `cosh`.
pub fn cosh(x: f64) -> f64 {
    let x = x.abs();
    if x > 21.0 {
        return exp(x) * 0.5;
    }
    let ex = exp(x);
    (ex + 1.0 / ex) * 0.5
}

/// tanh.go `tanh`.
pub fn tanh(x: f64) -> f64 {
    const P: [f64; 3] = [
        -9.643_991_794_250_522_386_28e-1,
        -9.928_772_310_019_185_865_64e1,
        -1.614_687_684_417_084_479_52e3,
    ];
    const Q: [f64; 3] = [
        1.128_116_784_916_329_314_02e2,
        2.235_488_390_601_004_485_83e3,
        4.844_063_053_251_254_860_48e3,
    ];
    const MAXLOG: f64 = 8.802_969_193_111_305_429_598_8e+01;
    let z = x.abs();
    if z > 0.5 * MAXLOG {
        return if x < 0.0 { -1.0 } else { 1.0 };
    }
    if z >= 0.625 {
        let s = exp(2.0 * z);
        let z = 1.0 - 2.0 / (s + 1.0);
        return if x < 0.0 { -z } else { z };
    }
    if x == 0.0 {
        return x;
    }
    let s = x * x;
    x + x * s * ((P[0] * s + P[1]) * s + P[2]) / (((s + Q[0]) * s + Q[1]) * s + Q[2])
}

/// pow.go `isOddInt`.
fn is_odd_int(x: f64) -> bool {
    let (xi, xf) = modf(x);
    xf == 0.0 && (go_float_to_int64(xi) & 1) == 1
}

/// pow.go `pow`: special cases, then exp(yf·log x) for the fraction of y and repeated
/// squaring with separate exponent tracking for its integer part.
pub fn pow(x: f64, y: f64) -> f64 {
    if y == 0.0 || x == 1.0 {
        return 1.0;
    }
    if y == 1.0 {
        return x;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 {
        if y < 0.0 {
            return if is_odd_int(y) {
                f64::INFINITY.copysign(x)
            } else {
                f64::INFINITY
            };
        }
        // y > 0 (y == 0 and NaN were handled above).
        return if is_odd_int(y) { x } else { 0.0 };
    }
    if y.is_infinite() {
        return if x == -1.0 {
            1.0
        } else if (x.abs() < 1.0) == (y > 0.0) {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if x.is_infinite() {
        if x < 0.0 {
            return pow(1.0 / x, -y);
        }
        return if y < 0.0 { 0.0 } else { f64::INFINITY };
    }
    if y == 0.5 {
        return x.sqrt();
    }
    if y == -0.5 {
        return 1.0 / x.sqrt();
    }
    let (mut yi, mut yf) = modf(y.abs());
    if yf != 0.0 && x < 0.0 {
        return f64::NAN;
    }
    if yi >= 9_223_372_036_854_775_808.0 {
        return if x == -1.0 {
            1.0
        } else if (x.abs() < 1.0) == (y > 0.0) {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let mut a1 = 1.0;
    let mut ae: i64 = 0;
    if yf != 0.0 {
        if yf > 0.5 {
            yf -= 1.0;
            yi += 1.0;
        }
        a1 = exp(yf * log(x));
    }
    let (mut x1, mut xe) = frexp(x);
    let mut i = yi as i64;
    while i != 0 {
        if !(-(1 << 12)..=(1 << 12)).contains(&xe) {
            ae += xe;
            break;
        }
        if i & 1 == 1 {
            a1 *= x1;
            ae += xe;
        }
        x1 *= x1;
        xe <<= 1;
        if x1 < 0.5 {
            x1 += x1;
            xe -= 1;
        }
        i >>= 1;
    }
    if y < 0.0 {
        a1 = 1.0 / a1;
        ae = -ae;
    }
    ldexp(a1, ae)
}
