//! String `format`s as the API server checks them. The list of formats it knows is
//! apiextensions-apiserver `pkg/apiserver/validation/formats.go` (`supportedVersionedFormats`;
//! names are compared with `-` removed, so `date-time` is `datetime`); other formats are stripped
//! from the schema there and so never fail. Integer formats are not range-checked by the API
//! server (kube-openapi `validate/type.go` only compares type names); see `validate.rs`.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

/// What a string format says about a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormatCheck {
    Valid,
    Invalid,
    /// A format the API server checks but this module does not.
    NotChecked,
    /// A format the API server strips from the schema: no check there either.
    Ignored,
}

/// Checks `value` against string format `format`.
pub(crate) fn check_string_format(format: &str, value: &str) -> FormatCheck {
    let normalized = format.replace('-', "");
    let valid = match normalized.as_str() {
        "password" => true,
        // govalidator.IsBase64: standard alphabet, padded, length a multiple of 4.
        "byte" => is_base64(value),
        // kube-openapi strfmt/default.go `isIPv4`: k8s.io/utils `ParseIPSloppy` accepts it and
        // it has a `.` (so an IPv6 address written with an IPv4 tail, `::ffff:10.0.0.1`, is one).
        "ipv4" => parse_ip_sloppy(value).is_some() && value.contains('.'),
        "ipv6" => value.contains(':') && value.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(value),
        "uuid" => is_uuid(value, None),
        "uuid3" => is_uuid(value, Some(b'3')),
        "uuid4" => is_uuid(value, Some(b'4')),
        "uuid5" => is_uuid(value, Some(b'5')),
        "date" => is_date(value),
        // `^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$` (formats.go comment).
        "hexcolor" => {
            let hex = value.strip_prefix('#').unwrap_or(value);
            matches!(hex.len(), 3 | 6) && hex.bytes().all(|b| b.is_ascii_hexdigit())
        }
        // Kubernetes 1.34+: a DNS label without upper case, and a subdomain without the
        // per-label limit (formats.go comments).
        "k8sshortname" => is_short_name(value),
        "k8slongname" => {
            value.len() <= 253 && !value.is_empty() && value.split('.').all(is_name_segment)
        }
        "bsonobjectid" | "uri" | "email" | "hostname" | "mac" | "isbn" | "isbn10" | "isbn13"
        | "creditcard" | "ssn" | "rgbcolor" | "duration" | "datetime" => {
            return FormatCheck::NotChecked;
        }
        _ => return FormatCheck::Ignored,
    };
    if valid {
        FormatCheck::Valid
    } else {
        FormatCheck::Invalid
    }
}

/// kube-openapi `govalidator/patterns.go` `Base64`:
/// `^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$`,
/// which needs at least one group of four: the empty string is not base64 there.
fn is_base64(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return false;
    }
    let padding = bytes.iter().rev().take_while(|&&b| b == b'=').count();
    if padding > 2 {
        return false;
    }
    bytes[..bytes.len() - padding]
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// k8s.io/utils `net/parse.go`: the regex `ParseIPSloppy` and `ParseCIDRSloppy` strip leading
/// zeros of a dotted quad (and of a prefix length after it) with, before parsing again.
static LEADING_ZEROS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(^|:)0*(0|[1-9][0-9]*)\.0*(0|[1-9][0-9]*)\.0*(0|[1-9][0-9]*)\.0*(0|[1-9][0-9]*)((/)0*(0|[1-9][0-9]*))?$",
    )
    .expect("a valid regex")
});

/// `stripZeros` in k8s.io/utils `net/parse.go`.
const STRIP_ZEROS: &str = "${1}${2}.${3}.${4}.${5}${7}${8}";

/// Go's `net.ParseIP` (Go 1.22+: `netip.ParseAddr` without a zone): dotted-quad IPv4 with no
/// leading zeros, or IPv6 (with an optional IPv4 tail), which is what Rust's parser accepts.
fn parse_ip(value: &str) -> Option<IpAddr> {
    value.parse::<IpAddr>().ok()
}

/// k8s.io/utils `ParseIPSloppy`: `net.ParseIP`, else `net.ParseIP` once leading zeros are
/// stripped (so `010.0.0.1` is 10.0.0.1, as Go before 1.17 read it).
fn parse_ip_sloppy(value: &str) -> Option<IpAddr> {
    parse_ip(value).or_else(|| parse_ip(&LEADING_ZEROS.replace_all(value, STRIP_ZEROS)))
}

/// Go's `net.ParseCIDR`: an address and a decimal prefix length (any number of digits) at
/// most the address's bit length (128 for an IPv6 address with an IPv4 tail).
fn parse_cidr(value: &str) -> bool {
    let Some((ip, bits)) = value.split_once('/') else {
        return false;
    };
    let Some(ip) = parse_ip(ip) else {
        return false;
    };
    let max: u64 = if ip.is_ipv4() { 32 } else { 128 };
    // Go's `dtoi` gives up past 0xFFFFFF, far above any bit length.
    !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits
            .trim_start_matches('0')
            .parse::<u64>()
            .map_or(bits.trim_start_matches('0').is_empty(), |n| n <= max)
}

/// kube-openapi strfmt/default.go `isCIDR`: k8s.io/utils `ParseCIDRSloppy`, which retries
/// `net.ParseCIDR` with leading zeros stripped.
fn is_cidr(value: &str) -> bool {
    parse_cidr(value) || parse_cidr(&LEADING_ZEROS.replace_all(value, STRIP_ZEROS))
}

/// `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$` for
/// versions 4 and 5 (`V` the version digit, version 3 without the `[89ab]` variant), and any hex
/// digits for plain `uuid` (formats.go comments).
fn is_uuid(value: &str, version: Option<u8>) -> bool {
    let groups = [8usize, 4, 4, 4, 12];
    let mut rest = value.as_bytes();
    let mut hex = Vec::with_capacity(32);
    for (index, len) in groups.iter().enumerate() {
        if index > 0 {
            rest = rest.strip_prefix(b"-").unwrap_or(rest);
        }
        if rest.len() < *len || !rest[..*len].iter().all(u8::is_ascii_hexdigit) {
            return false;
        }
        hex.extend_from_slice(&rest[..*len]);
        rest = &rest[*len..];
    }
    if !rest.is_empty() {
        return false;
    }
    match version {
        None => true,
        Some(v) => {
            hex[12] == v
                && (v == b'3' || matches!(hex[16].to_ascii_lowercase(), b'8' | b'9' | b'a' | b'b'))
        }
    }
}

/// RFC 3339 full-date: `YYYY-MM-DD`, a real calendar day.
fn is_date(value: &str) -> bool {
    let b = value.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = &value[range];
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// Lower-case alphanumerics and `-`, not starting or ending with `-`.
fn is_name_segment(segment: &str) -> bool {
    let b = segment.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_short_name(value: &str) -> bool {
    value.len() <= 63 && is_name_segment(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_formats() {
        use FormatCheck::*;
        let cases = [
            ("ipv4", "10.0.0.1", Valid),
            ("ipv4", "10.0.0.256", Invalid),
            // k8s.io/utils ParseIPSloppy: leading zeros are decimal; an IPv6 address with an
            // IPv4 tail has a dot.
            ("ipv4", "010.0.0.1", Valid),
            ("ipv4", "0010.00.0.001", Valid),
            ("ipv4", "::ffff:10.0.0.1", Valid),
            ("ipv4", "::ffff:010.0.0.1", Valid),
            ("ipv4", "0256.0.0.1", Invalid),
            ("ipv4", "::1", Invalid),
            ("ipv4", "10.0.0", Invalid),
            ("ipv6", "::1", Valid),
            ("ipv6", "10.0.0.1", Invalid),
            ("cidr", "10.0.0.0/8", Valid),
            ("cidr", "10.0.0.0/33", Invalid),
            ("cidr", "010.0.0.0/8", Valid),
            ("cidr", "10.0.0.0/008", Valid),
            ("cidr", "10.0.0.0/0000000008", Valid),
            ("cidr", "::ffff:10.0.0.0/104", Valid),
            ("cidr", "::ffff:10.0.0.0/129", Invalid),
            ("cidr", "10.0.0.0/", Invalid),
            ("cidr", "10.0.0.0/+8", Invalid),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", Valid),
            ("uuid", "123e4567e89b12d3a456426614174000", Valid),
            ("uuid", "123e4567-e89b-12d3-a456", Invalid),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", Valid),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", Invalid),
            ("date", "2024-02-29", Valid),
            ("date", "2023-02-29", Invalid),
            ("byte", "aGVsbG8=", Valid),
            ("byte", "aGVsbG8", Invalid),
            // govalidator's Base64 regex needs one group of four.
            ("byte", "", Invalid),
            ("byte", "AA==", Valid),
            ("byte", "A===", Invalid),
            ("hexcolor", "#fff", Valid),
            ("hexcolor", "#ffff", Invalid),
            ("k8s-short-name", "web-1", Valid),
            ("k8s-short-name", "Web", Invalid),
            ("k8s-long-name", "a.b-c.d", Valid),
            ("k8s-long-name", "a..b", Invalid),
            ("date-time", "2024-01-01T00:00:00Z", NotChecked),
            ("email", "x", NotChecked),
            ("my-format", "x", Ignored),
        ];
        for (format, value, want) in cases {
            assert_eq!(check_string_format(format, value), want, "{format} {value}");
        }
    }
}
