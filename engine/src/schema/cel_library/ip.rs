//! Kubernetes' CEL IP and CIDR libraries (`ip`, `isIP`, `ip.isCanonical`, `cidr`, `isCIDR`,
//! and their methods), as k8s.io/apiserver `pkg/cel/library/ip.go` and `cidr.go` declare them,
//! over addresses parsed as Go's `net/netip` parses them (`ParseAddr`, `ParsePrefix`: no
//! leading zeros in IPv4 octets, no zones), IPv4-mapped IPv6 addresses refused as Kubernetes
//! refuses them (`parseIPAddr`, `parseCIDR`). A CIDR with bits set after its prefix is accepted,
//! as `parseCIDR` does (the library's comment says otherwise; its code decides).

use std::net::{IpAddr, Ipv6Addr};

use cel::common::types::{CelBool, CelInt, CelString, Type};
use cel::{DeclarationError, Env, ExecutionError};

static IP: Type = Type::new_unspecified_type("net.IP");
static CIDR: Type = Type::new_unspecified_type("net.CIDR");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ip(IpAddr);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cidr {
    addr: IpAddr,
    bits: u8,
}

library_value!(Ip, IP);

library_value!(Cidr, CIDR);

fn is_4_in_6(addr: &IpAddr) -> bool {
    matches!(addr, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// An address as `netip.ParseAddr` reads it, without zone or IPv4-mapped form.
pub(crate) fn parse_ip(text: &str) -> Result<IpAddr, String> {
    // Rust's parser refuses leading zeros in IPv4 octets and zones, as netip does.
    let addr: IpAddr = text
        .parse()
        .map_err(|_| format!("IP Address {text:?} parse error during conversion from string"))?;
    if is_4_in_6(&addr) {
        return Err(format!("IPv4-mapped IPv6 address {text:?} is not allowed"));
    }
    Ok(addr)
}

pub(crate) fn parse_cidr(text: &str) -> Result<Cidr, String> {
    let error = || {
        format!(
            "network address parse error during conversion from string: netip.ParsePrefix({text:?})"
        )
    };
    let (addr, bits) = text.split_once('/').ok_or_else(error)?;
    let addr: IpAddr = addr.parse().map_err(|_| error())?;
    // netip: decimal digits, no sign, no leading zero.
    if bits.is_empty()
        || !bits.bytes().all(|b| b.is_ascii_digit())
        || (bits.len() > 1 && bits.starts_with('0'))
    {
        return Err(error());
    }
    let bits: u8 = bits.parse().map_err(|_| error())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if bits > max {
        return Err(error());
    }
    if is_4_in_6(&addr) {
        return Err(format!("IPv4-mapped IPv6 address {text:?} is not allowed"));
    }
    Ok(Cidr { addr, bits })
}

fn to_bits(addr: IpAddr) -> (u128, u8) {
    match addr {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
        IpAddr::V6(v6) => (u128::from(v6), 128),
    }
}

fn mask(addr: IpAddr, bits: u8) -> IpAddr {
    let (value, width) = to_bits(addr);
    let host_bits = u32::from(width - bits);
    let masked = if host_bits >= 128 {
        0
    } else {
        value & !((1u128 << host_bits) - 1)
    };
    match addr {
        IpAddr::V4(_) => IpAddr::V4((masked as u32).into()),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(masked)),
    }
}

impl Cidr {
    fn contains(&self, addr: IpAddr) -> bool {
        addr.is_ipv4() == self.addr.is_ipv4() && mask(addr, self.bits) == mask(self.addr, self.bits)
    }
}

fn error(function: &str, reason: String) -> ExecutionError {
    ExecutionError::function_error(function, reason)
}

fn ip(text: &CelString<'_>) -> Result<Ip, ExecutionError> {
    parse_ip(text.inner()).map(Ip).map_err(|e| error("ip", e))
}

fn is_ip(text: &CelString<'_>) -> CelBool {
    parse_ip(text.inner()).is_ok().into()
}

fn is_canonical(text: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let addr = parse_ip(text.inner()).map_err(|e| error("ip.isCanonical", e))?;
    // Rust prints IPv6 as RFC 5952 says, as Go's netip does.
    Ok((addr.to_string() == text.inner()).into())
}

fn family(this: &Ip) -> CelInt {
    CelInt::from(if this.0.is_ipv4() { 4 } else { 6 })
}

fn is_unspecified(this: &Ip) -> CelBool {
    this.0.is_unspecified().into()
}

fn is_loopback(this: &Ip) -> CelBool {
    this.0.is_loopback().into()
}

fn is_link_local_multicast(this: &Ip) -> CelBool {
    // Go netip: 224.0.0.0/24, ff02::/16 (any flags: ffx2).
    match this.0 {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => {
            let o = v6.octets();
            o[0] == 0xff && o[1] & 0x0f == 0x02
        }
    }
    .into()
}

fn link_local_unicast(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_unicast(this: &Ip) -> CelBool {
    link_local_unicast(this.0).into()
}

fn is_global_unicast(this: &Ip) -> CelBool {
    // Go netip `IsGlobalUnicast`.
    let addr = this.0;
    let broadcast = matches!(addr, IpAddr::V4(v4) if v4.is_broadcast());
    (!addr.is_unspecified()
        && !broadcast
        && !addr.is_loopback()
        && !addr.is_multicast()
        && !link_local_unicast(addr))
    .into()
}

fn ip_to_string(this: &Ip) -> CelString<'static> {
    this.0.to_string().into()
}

fn cidr(text: &CelString<'_>) -> Result<Cidr, ExecutionError> {
    parse_cidr(text.inner()).map_err(|e| error("cidr", e))
}

fn is_cidr(text: &CelString<'_>) -> CelBool {
    parse_cidr(text.inner()).is_ok().into()
}

fn contains_ip(this: &Cidr, other: &Ip) -> CelBool {
    this.contains(other.0).into()
}

fn contains_ip_string(this: &Cidr, other: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let addr = parse_ip(other.inner()).map_err(|e| error("containsIP", e))?;
    Ok(this.contains(addr).into())
}

fn cidr_contains(this: &Cidr, other: &Cidr) -> bool {
    // cidr.go: `Overlaps` and a prefix no longer than the other's.
    this.bits <= other.bits && this.contains(other.addr)
}

fn contains_cidr(this: &Cidr, other: &Cidr) -> CelBool {
    cidr_contains(this, other).into()
}

fn contains_cidr_string(this: &Cidr, other: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let other = parse_cidr(other.inner()).map_err(|e| error("containsCIDR", e))?;
    Ok(cidr_contains(this, &other).into())
}

fn cidr_ip(this: &Cidr) -> Ip {
    Ip(this.addr)
}

fn masked(this: &Cidr) -> Cidr {
    Cidr {
        addr: mask(this.addr, this.bits),
        bits: this.bits,
    }
}

fn prefix_length(this: &Cidr) -> CelInt {
    CelInt::from(i64::from(this.bits))
}

fn cidr_to_string(this: &Cidr) -> CelString<'static> {
    format!("{}/{}", this.addr, this.bits).into()
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(IP.to_owned())?;
    env.add_type(CIDR.to_owned())?;
    cel::add_overload!(env, fn ip: (CelString) -> Result<Ip>)?;
    cel::add_overload!(env, fn is_ip: (CelString) -> CelBool, name = "isIP")?;
    cel::add_overload!(env, fn is_canonical: (CelString) -> Result<CelBool>, name = "ip.isCanonical")?;
    cel::add_member_overload!(env, fn family: (Ip) -> CelInt)?;
    cel::add_member_overload!(env, fn is_unspecified: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_loopback: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_link_local_multicast: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_link_local_unicast: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_global_unicast: (Ip) -> CelBool)?;
    cel::add_overload!(env, fn ip_to_string: (Ip) -> CelString, name = "string")?;
    cel::add_overload!(env, fn cidr: (CelString) -> Result<Cidr>)?;
    cel::add_overload!(env, fn is_cidr: (CelString) -> CelBool, name = "isCIDR")?;
    cel::add_member_overload!(env, fn contains_ip: (Cidr, Ip) -> CelBool, name = "containsIP")?;
    cel::add_member_overload!(env, fn contains_ip_string: (Cidr, CelString) -> Result<CelBool>, name = "containsIP")?;
    cel::add_member_overload!(env, fn contains_cidr: (Cidr, Cidr) -> CelBool, name = "containsCIDR")?;
    cel::add_member_overload!(env, fn contains_cidr_string: (Cidr, CelString) -> Result<CelBool>, name = "containsCIDR")?;
    cel::add_member_overload!(env, fn cidr_ip: (Cidr) -> Ip, name = "ip")?;
    cel::add_member_overload!(env, fn masked: (Cidr) -> Cidr)?;
    cel::add_member_overload!(env, fn prefix_length: (Cidr) -> CelInt)?;
    cel::add_overload!(env, fn cidr_to_string: (Cidr) -> CelString, name = "string")?;
    Ok(())
}
