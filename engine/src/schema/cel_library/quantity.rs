//! Kubernetes' CEL quantity library (`quantity`, `isQuantity`, and the `Quantity` methods), as
//! k8s.io/apiserver `pkg/cel/library/quantity.go` declares it, over quantities parsed as
//! apimachinery `pkg/api/resource/quantity.go` (`ParseQuantity`) parses them.

use std::cmp::Ordering;

use cel::common::types::{CelBool, CelDouble, CelInt, CelString, Type};
use cel::{DeclarationError, Env, ExecutionError};

use super::not_modelled;

static QUANTITY: Type = Type::new_unspecified_type("kubernetes.Quantity");

/// A quantity's exact value, `unscaled × 10^-scale`, with no trailing zeros in `unscaled` (so
/// equal values are equal structs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quantity {
    unscaled: i128,
    scale: i32,
}

library_value!(Quantity, QUANTITY);

/// 2^63 - 1: apimachinery caps a binary-SI quantity there (`maxAllowed`).
const MAX_ALLOWED: i128 = i64::MAX as i128;

impl Quantity {
    fn new(unscaled: i128, scale: i32) -> Quantity {
        let (mut unscaled, mut scale) = (unscaled, scale);
        if unscaled == 0 {
            return Quantity {
                unscaled: 0,
                scale: 0,
            };
        }
        while unscaled % 10 == 0 {
            unscaled /= 10;
            scale -= 1;
        }
        Quantity { unscaled, scale }
    }

    /// Parses `text` as apimachinery's `ParseQuantity` does: `<sign><digits>[.<digits>]<suffix>`
    /// with suffix one of the binary (`Ki` … `Ei`), decimal (`n`, `u`, `m`, ``, `k` … `E`) or
    /// exponent (`e3`, `E-2`) forms; values finer than 1n are rounded up (away from zero) to it,
    /// and binary-SI values are capped at 2^63-1. `Err(None)`: not a quantity; `Err(Some)`:
    /// a quantity larger than this checker models.
    pub(crate) fn parse(text: &str) -> Result<Quantity, Option<String>> {
        let bytes = text.as_bytes();
        let mut at = 0;
        let negative = match bytes.first() {
            Some(b'-') => {
                at = 1;
                true
            }
            Some(b'+') => {
                at = 1;
                false
            }
            _ => false,
        };
        let mut digits = String::new();
        let mut fraction_digits = 0i32;
        let mut seen_point = false;
        while let Some(&c) = bytes.get(at) {
            match c {
                b'0'..=b'9' => {
                    digits.push(c as char);
                    if seen_point {
                        fraction_digits += 1;
                    }
                }
                b'.' if !seen_point => seen_point = true,
                _ => break,
            }
            at += 1;
        }
        if digits.is_empty() {
            return Err(None);
        }
        let suffix = &text[at..];
        let (base2_shift, exponent) = match suffix {
            "Ki" => (10, 0),
            "Mi" => (20, 0),
            "Gi" => (30, 0),
            "Ti" => (40, 0),
            "Pi" => (50, 0),
            "Ei" => (60, 0),
            "n" => (0, -9),
            "u" => (0, -6),
            "m" => (0, -3),
            "" => (0, 0),
            "k" => (0, 3),
            "M" => (0, 6),
            "G" => (0, 9),
            "T" => (0, 12),
            "P" => (0, 15),
            "E" => (0, 18),
            _ => {
                let Some(rest) = suffix.strip_prefix(['e', 'E']) else {
                    return Err(None);
                };
                let number = rest.strip_prefix(['+', '-']).unwrap_or(rest);
                if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(None);
                }
                let exponent: i32 = rest
                    .parse()
                    .map_err(|_| Some(format!("the exponent of {text:?} is too large")))?;
                (0, exponent)
            }
        };
        let too_large = || Some(format!("{text:?} has more digits than this checker models"));
        // Trailing zeros are cut first, so long round numbers (`1` and 40 zeros) still fit.
        let leading = digits.trim_start_matches('0');
        let significant = leading.trim_end_matches('0');
        let cut = (leading.len() - significant.len()) as i32;
        let mut unscaled: i128 = if significant.is_empty() {
            0
        } else {
            significant.parse().map_err(|_| too_large())?
        };
        let mut scale = fraction_digits
            .checked_sub(exponent)
            .and_then(|s| s.checked_sub(cut))
            .ok_or_else(too_large)?;
        if base2_shift > 0 {
            unscaled = unscaled
                .checked_mul(1i128 << base2_shift)
                .ok_or_else(too_large)?;
        }
        // Round up, away from zero, to nano (scale 9).
        if scale > 9 && unscaled != 0 {
            let divisor = pow10(scale - 9).ok_or_else(too_large)?;
            let (quotient, remainder) = (unscaled / divisor, unscaled % divisor);
            unscaled = quotient + i128::from(remainder != 0);
            scale = 9;
        }
        let mut quantity = Quantity::new(unscaled, scale);
        if base2_shift > 0 && quantity.compare(&Quantity::new(MAX_ALLOWED, 0)) == Ordering::Greater
        {
            quantity = Quantity::new(MAX_ALLOWED, 0);
        }
        if negative {
            quantity.unscaled = -quantity.unscaled;
        }
        Ok(quantity)
    }

    /// Order of magnitude: the number of integer digits (negative for small fractions).
    fn magnitude(&self) -> i64 {
        let digits = self.unscaled.unsigned_abs().to_string().len() as i64;
        digits - i64::from(self.scale)
    }

    fn compare(&self, other: &Quantity) -> Ordering {
        let sign = |q: &Quantity| q.unscaled.signum();
        match sign(self).cmp(&sign(other)) {
            Ordering::Equal if self.unscaled == 0 => return Ordering::Equal,
            Ordering::Equal => {}
            unequal => return unequal,
        }
        let negative = self.unscaled < 0;
        let by_magnitude = self.magnitude().cmp(&other.magnitude());
        let ordering = if by_magnitude != Ordering::Equal {
            by_magnitude
        } else {
            // Same number of integer digits: aligned, both fit.
            match aligned(self, other) {
                Some((a, b, _)) => a.abs().cmp(&b.abs()),
                None => Ordering::Equal,
            }
        };
        if negative {
            ordering.reverse()
        } else {
            ordering
        }
    }

    fn checked_add(&self, other: &Quantity) -> Option<Quantity> {
        let (a, b, scale) = aligned(self, other)?;
        Some(Quantity::new(a.checked_add(b)?, scale))
    }

    fn as_i64(&self) -> Option<i64> {
        if self.scale > 0 {
            return None;
        }
        let value = self.unscaled.checked_mul(pow10(-self.scale)?)?;
        i64::try_from(value).ok()
    }

    fn approximate_float(&self) -> f64 {
        self.unscaled as f64 * 10f64.powi(-self.scale)
    }
}

fn pow10(exponent: i32) -> Option<i128> {
    10i128.checked_pow(u32::try_from(exponent).ok()?)
}

/// Both unscaled values at the larger scale, and that scale.
fn aligned(a: &Quantity, b: &Quantity) -> Option<(i128, i128, i32)> {
    let scale = a.scale.max(b.scale);
    let a_unscaled = a.unscaled.checked_mul(pow10(scale - a.scale)?)?;
    let b_unscaled = b.unscaled.checked_mul(pow10(scale - b.scale)?)?;
    Some((a_unscaled, b_unscaled, scale))
}

fn parse_or_error(text: &str) -> Result<Quantity, ExecutionError> {
    Quantity::parse(text).map_err(|large| match large {
        Some(reason) => not_modelled("quantity", reason),
        None => ExecutionError::function_error(
            "quantity",
            format!("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text:?}"),
        ),
    })
}

fn quantity(text: &CelString<'_>) -> Result<Quantity, ExecutionError> {
    parse_or_error(text.inner())
}

fn is_quantity(text: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    match Quantity::parse(text.inner()) {
        Ok(_) => Ok(true.into()),
        Err(None) => Ok(false.into()),
        Err(Some(reason)) => Err(not_modelled("isQuantity", reason)),
    }
}

fn sign(this: &Quantity) -> CelInt {
    CelInt::from(this.unscaled.signum() as i64)
}

fn is_greater_than(this: &Quantity, other: &Quantity) -> CelBool {
    (this.compare(other) == Ordering::Greater).into()
}

fn is_less_than(this: &Quantity, other: &Quantity) -> CelBool {
    (this.compare(other) == Ordering::Less).into()
}

fn compare_to(this: &Quantity, other: &Quantity) -> CelInt {
    CelInt::from(this.compare(other) as i64)
}

fn as_approximate_float(this: &Quantity) -> CelDouble {
    this.approximate_float().into()
}

fn as_integer(this: &Quantity) -> Result<CelInt, ExecutionError> {
    this.as_i64().map(CelInt::from).ok_or_else(|| {
        ExecutionError::function_error("asInteger", "cannot convert value to integer")
    })
}

fn is_integer(this: &Quantity) -> CelBool {
    this.as_i64().is_some().into()
}

fn sum(a: &Quantity, b: &Quantity) -> Result<Quantity, ExecutionError> {
    a.checked_add(b)
        .ok_or_else(|| not_modelled("add", "the sum is larger than this checker models"))
}

fn add(this: &Quantity, other: &Quantity) -> Result<Quantity, ExecutionError> {
    sum(this, other)
}

fn add_int(this: &Quantity, other: &CelInt) -> Result<Quantity, ExecutionError> {
    sum(this, &Quantity::new(i128::from(*other.inner()), 0))
}

fn sub(this: &Quantity, other: &Quantity) -> Result<Quantity, ExecutionError> {
    sum(this, &Quantity::new(-other.unscaled, other.scale))
}

fn sub_int(this: &Quantity, other: &CelInt) -> Result<Quantity, ExecutionError> {
    sum(this, &Quantity::new(-i128::from(*other.inner()), 0))
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(QUANTITY.to_owned())?;
    cel::add_overload!(env, fn quantity: (CelString) -> Result<Quantity>)?;
    cel::add_overload!(env, fn is_quantity: (CelString) -> Result<CelBool>)?;
    cel::add_member_overload!(env, fn sign: (Quantity) -> CelInt)?;
    cel::add_member_overload!(env, fn is_greater_than: (Quantity, Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn is_less_than: (Quantity, Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn compare_to: (Quantity, Quantity) -> CelInt)?;
    cel::add_member_overload!(env, fn as_approximate_float: (Quantity) -> CelDouble)?;
    cel::add_member_overload!(env, fn as_integer: (Quantity) -> Result<CelInt>)?;
    cel::add_member_overload!(env, fn is_integer: (Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn add: (Quantity, Quantity) -> Result<Quantity>)?;
    cel::add_member_overload!(env, fn add_int: (Quantity, CelInt) -> Result<Quantity>, name = "add")?;
    cel::add_member_overload!(env, fn sub: (Quantity, Quantity) -> Result<Quantity>)?;
    cel::add_member_overload!(env, fn sub_int: (Quantity, CelInt) -> Result<Quantity>, name = "sub")?;
    Ok(())
}
