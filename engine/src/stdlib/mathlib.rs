//! gopher-lua's math library (mathlib.go at Kruise's pin): every function takes its numbers
//! through `CheckNumber`/`CheckInt`, which do not convert strings (`math.floor("50")` is an
//! argument error), and computes with Go's `math` package (see [`crate::go::math`]).

use std::ffi::c_int;

use mlua::ffi;

use super::capi::{R, Raise, State, check_int, check_number, kruise_nummod, lua_fns, set_fn};
use crate::go;

lua_fns! {
    lua_abs => abs_imp,
    lua_acos => acos_imp,
    lua_asin => asin_imp,
    lua_atan => atan_imp,
    lua_atan2 => atan2_imp,
    lua_ceil => ceil_imp,
    lua_cos => cos_imp,
    lua_cosh => cosh_imp,
    lua_deg => deg_imp,
    lua_exp => exp_imp,
    lua_floor => floor_imp,
    lua_fmod => fmod_imp,
    lua_frexp => frexp_imp,
    lua_ldexp => ldexp_imp,
    lua_log => log_imp,
    lua_log10 => log10_imp,
    lua_max => max_imp,
    lua_min => min_imp,
    lua_mod => mod_imp,
    lua_modf => modf_imp,
    lua_pow => pow_imp,
    lua_rad => rad_imp,
    lua_random => random_imp,
    lua_randomseed => randomseed_imp,
    lua_sin => sin_imp,
    lua_sinh => sinh_imp,
    lua_sqrt => sqrt_imp,
    lua_tan => tan_imp,
    lua_tanh => tanh_imp,
}

/// One number in, `f` of it out (mathAbs, mathSin, ...).
unsafe fn unary(l: State, name: &str, f: fn(f64) -> f64) -> R<c_int> {
    unsafe {
        let x = check_number(l, 1, name)?;
        ffi::lua_pushnumber(l, f(x));
        Ok(1)
    }
}

/// Two numbers in, `f` of them out (mathAtan2, mathFmod, mathPow, mathMod).
unsafe fn binary(l: State, name: &str, f: fn(f64, f64) -> f64) -> R<c_int> {
    unsafe {
        let a = check_number(l, 1, name)?;
        let b = check_number(l, 2, name)?;
        ffi::lua_pushnumber(l, f(a, b));
        Ok(1)
    }
}

unsafe fn abs_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "abs", f64::abs) }
}
unsafe fn acos_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "acos", go::math::acos) }
}
unsafe fn asin_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "asin", go::math::asin) }
}
unsafe fn atan_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "atan", go::math::atan) }
}
unsafe fn atan2_imp(l: State) -> R<c_int> {
    unsafe { binary(l, "atan2", go::math::atan2) }
}
// Go's Floor/Ceil (floor_amd64.s) are exact, as Rust's are.
unsafe fn ceil_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "ceil", f64::ceil) }
}
unsafe fn cos_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "cos", go::math::cos) }
}
unsafe fn cosh_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "cosh", go::math::cosh) }
}
/// mathDeg: `x * 180 / math.Pi`, evaluated left to right.
unsafe fn deg_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "deg", |x| x * 180.0 / std::f64::consts::PI) }
}
unsafe fn exp_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "exp", go::math::exp) }
}
unsafe fn floor_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "floor", f64::floor) }
}
unsafe fn fmod_imp(l: State) -> R<c_int> {
    unsafe { binary(l, "fmod", go::math::fmod) }
}
unsafe fn frexp_imp(l: State) -> R<c_int> {
    unsafe {
        let (frac, exp) = go::math::frexp(check_number(l, 1, "frexp")?);
        ffi::lua_pushnumber(l, frac);
        ffi::lua_pushnumber(l, exp as f64);
        Ok(2)
    }
}
/// mathLdexp: the exponent through CheckInt (Go's int(float64), 64 bits).
unsafe fn ldexp_imp(l: State) -> R<c_int> {
    unsafe {
        let frac = check_number(l, 1, "ldexp")?;
        let exp = check_int(l, 2, "ldexp")?;
        ffi::lua_pushnumber(l, go::math::ldexp(frac, exp));
        Ok(1)
    }
}
unsafe fn log_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "log", go::math::log) }
}
unsafe fn log10_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "log10", go::math::log10) }
}

/// mathMax/mathMin: at least one argument, each a number; the first of equal values wins,
/// and NaN never replaces (comparisons with NaN are false).
unsafe fn extreme(l: State, name: &str, better: fn(f64, f64) -> bool) -> R<c_int> {
    unsafe {
        let top = ffi::lua_gettop(l);
        if top == 0 {
            return Err(Raise::Msg("wrong number of arguments".into()));
        }
        let mut best = check_number(l, 1, name)?;
        for i in 2..=top {
            let v = check_number(l, i, name)?;
            if better(v, best) {
                best = v;
            }
        }
        ffi::lua_pushnumber(l, best);
        Ok(1)
    }
}
unsafe fn max_imp(l: State) -> R<c_int> {
    unsafe { extreme(l, "max", |v, best| v > best) }
}
unsafe fn min_imp(l: State) -> R<c_int> {
    unsafe { extreme(l, "min", |v, best| v < best) }
}
/// mathMod: the `%` operator's rule (gopher's luaModulo).
unsafe fn mod_imp(l: State) -> R<c_int> {
    unsafe { binary(l, "mod", |a, b| kruise_nummod(a, b)) }
}
unsafe fn modf_imp(l: State) -> R<c_int> {
    unsafe {
        let (int, frac) = go::math::modf(check_number(l, 1, "modf")?);
        ffi::lua_pushnumber(l, int);
        ffi::lua_pushnumber(l, frac);
        Ok(2)
    }
}
unsafe fn pow_imp(l: State) -> R<c_int> {
    unsafe { binary(l, "pow", go::math::pow) }
}
/// mathRad: `x * math.Pi / 180`, evaluated left to right.
unsafe fn rad_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "rad", |x| x * std::f64::consts::PI / 180.0) }
}

/// A float in [0, 1) from the VM's own `math.random` (upvalue 1): Go's global source is
/// seeded randomly in the Go 1.20 that Kruise builds with, so only the range is fixed.
unsafe fn unit_random(l: State) -> f64 {
    unsafe {
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_call(l, 0, 1);
        let r = ffi::lua_tonumber(l, -1);
        ffi::lua_pop(l, 1);
        r
    }
}

/// mathRandom: no argument gives a float; `random(n)` is `rand.Intn(n) + 1` and
/// `random(m, n)` is `rand.Intn(n + 1 - m) + m`, where Intn panics on a bound <= 0.
unsafe fn random_imp(l: State) -> R<c_int> {
    unsafe {
        let (low, span) = match ffi::lua_gettop(l) {
            0 => {
                let r = unit_random(l);
                ffi::lua_pushnumber(l, r);
                return Ok(1);
            }
            1 => (1i64, check_int(l, 1, "random")?),
            _ => {
                let min = check_int(l, 1, "random")?;
                let max = check_int(l, 2, "random")?.wrapping_add(1);
                (min, max.wrapping_sub(min))
            }
        };
        if span <= 0 {
            return Err(Raise::Raw("invalid argument to Intn".into()));
        }
        let pick = ((unit_random(l) * span as f64) as i64).clamp(0, span - 1);
        ffi::lua_pushnumber(l, pick.wrapping_add(low) as f64);
        Ok(1)
    }
}

/// mathRandomseed: CheckInt64; the seed goes to the VM's generator (upvalue 1).
unsafe fn randomseed_imp(l: State) -> R<c_int> {
    unsafe {
        let seed = check_int(l, 1, "randomseed")?;
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_pushnumber(l, (seed as i32) as f64);
        ffi::lua_call(l, 1, 0);
        Ok(0)
    }
}
unsafe fn sin_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "sin", go::math::sin) }
}
unsafe fn sinh_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "sinh", go::math::sinh) }
}
unsafe fn sqrt_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "sqrt", f64::sqrt) }
}
unsafe fn tan_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "tan", go::math::tan) }
}
unsafe fn tanh_imp(l: State) -> R<c_int> {
    unsafe { unary(l, "tanh", go::math::tanh) }
}

/// Replaces the functions of the math table at `t` with gopher's, and sets `huge` to the
/// largest finite double (OpenMath).
pub(super) unsafe fn install(l: State, t: c_int) {
    unsafe {
        ffi::lua_pushnumber(l, f64::MAX);
        ffi::lua_setfield(l, t, c"huge".as_ptr());
        ffi::lua_pushnumber(l, std::f64::consts::PI);
        ffi::lua_setfield(l, t, c"pi".as_ptr());
        for (name, f) in [
            (c"abs", lua_abs as ffi::lua_CFunction),
            (c"acos", lua_acos),
            (c"asin", lua_asin),
            (c"atan", lua_atan),
            (c"atan2", lua_atan2),
            (c"ceil", lua_ceil),
            (c"cos", lua_cos),
            (c"cosh", lua_cosh),
            (c"deg", lua_deg),
            (c"exp", lua_exp),
            (c"floor", lua_floor),
            (c"fmod", lua_fmod),
            (c"frexp", lua_frexp),
            (c"ldexp", lua_ldexp),
            (c"log", lua_log),
            (c"log10", lua_log10),
            (c"max", lua_max),
            (c"min", lua_min),
            (c"mod", lua_mod),
            (c"modf", lua_modf),
            (c"pow", lua_pow),
            (c"rad", lua_rad),
            (c"sin", lua_sin),
            (c"sinh", lua_sinh),
            (c"sqrt", lua_sqrt),
            (c"tan", lua_tan),
            (c"tanh", lua_tanh),
        ] {
            set_fn(l, t, name, f);
        }
        // random and randomseed keep the VM's generator as their upvalue.
        for (name, f) in [
            (c"random", lua_random as ffi::lua_CFunction),
            (c"randomseed", lua_randomseed),
        ] {
            ffi::lua_getfield(l, t, name.as_ptr());
            ffi::lua_pushcclosure(l, f, 1);
            ffi::lua_setfield(l, t, name.as_ptr());
        }
    }
}
