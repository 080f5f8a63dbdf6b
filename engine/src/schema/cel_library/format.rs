//! Kubernetes' CEL format library (Kubernetes 1.31): `format.dns1123Label()` and the other named
//! formats, `format.named(name)`, and `<Format>.validate(s)` (`optional.none()` when `s` is
//! valid, else the list of what is wrong), as k8s.io/apiserver `pkg/cel/library/format.go`
//! (`ConstantFormats`) declares them. Validity follows the validators it names (apimachinery
//! `NameIsDNSLabel`, `NameIsDNSSubdomain`, `NameIsDNS1035Label` — with a trailing `-` allowed
//! for the `…Prefix` forms —, `IsQualifiedName`, `IsValidLabelValue`, Go's
//! `url.ParseRequestURI`, kube-openapi strfmt's uuid, byte, date); the messages are this
//! checker's. `datetime` is reported as not checked (strfmt's date-time parser is not modelled).

use cel::common::types::{CelList, CelOptional, CelString, Type};
use cel::common::value::Val;
use cel::{DeclarationError, Env, ExecutionError};

use super::not_modelled;
use super::url::Url;
use crate::schema::formats::{FormatCheck, check_string_format};
use crate::schema::metadata::{label_value_error, qualified_name_error};

static FORMAT: Type = Type::new_unspecified_type("kubernetes.NamedFormat");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Format(&'static str);

library_value!(Format, FORMAT);

/// format.go `ConstantFormats`.
const NAMES: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// apimachinery `maskTrailingDash`: a prefix may end in `-` (a name is appended to it).
fn mask_trailing_dash(text: &str) -> String {
    match text.strip_suffix('-') {
        Some(rest) if text.len() > 1 => format!("{rest}a"),
        _ => text.to_owned(),
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, or with `letter_first`, `[a-z]([-a-z0-9]*[a-z0-9])?`.
fn dns_label(text: &str, letter_first: bool) -> bool {
    let b = text.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && (if letter_first {
            b[0].is_ascii_lowercase()
        } else {
            b[0] != b'-'
        })
        && b[b.len() - 1] != b'-'
}

fn label_errors(text: &str, letter_first: bool) -> Vec<String> {
    let mut errors = Vec::new();
    if text.len() > 63 {
        errors.push("must be no more than 63 characters".to_owned());
    }
    if !dns_label(text, letter_first) {
        errors.push(if letter_first {
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start \
             with an alphabetic character, and end with an alphanumeric character"
                .to_owned()
        } else {
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character"
                .to_owned()
        });
    }
    errors
}

fn subdomain_errors(text: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if text.len() > 253 {
        errors.push("must be no more than 253 characters".to_owned());
    }
    if !text.split('.').all(|label| dns_label(label, false)) {
        errors.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character"
                .to_owned(),
        );
    }
    errors
}

fn strfmt(name: &str, text: &str, message: &str) -> Vec<String> {
    match check_string_format(name, text) {
        FormatCheck::Invalid => vec![message.to_owned()],
        _ => Vec::new(),
    }
}

/// What is wrong with `text` in format `name`; `Err` for a format not modelled here.
fn errors(name: &str, text: &str) -> Result<Vec<String>, ExecutionError> {
    Ok(match name {
        "dns1123Label" => label_errors(text, false),
        "dns1123LabelPrefix" => label_errors(&mask_trailing_dash(text), false),
        "dns1035Label" => label_errors(text, true),
        "dns1035LabelPrefix" => label_errors(&mask_trailing_dash(text), true),
        "dns1123Subdomain" => subdomain_errors(text),
        "dns1123SubdomainPrefix" => subdomain_errors(&mask_trailing_dash(text)),
        "qualifiedName" => qualified_name_error(text).into_iter().collect(),
        "labelValue" => label_value_error(text).into_iter().collect(),
        "uri" => Url::parse(text).err().into_iter().collect(),
        "uuid" => strfmt("uuid", text, "does not match the UUID format"),
        "byte" => strfmt("byte", text, "invalid base64"),
        "date" => strfmt("date", text, "invalid date"),
        other => {
            return Err(not_modelled(
                "validate",
                format!("format.{other}() is not modelled by this checker"),
            ));
        }
    })
}

fn named(name: &CelString<'_>) -> CelOptional<'static> {
    match NAMES.iter().find(|n| **n == name.inner()) {
        Some(found) => CelOptional::of(Box::new(Format(found))),
        None => CelOptional::none(),
    }
}

fn validate(this: &Format, text: &CelString<'_>) -> Result<CelOptional<'static>, ExecutionError> {
    let found = errors(this.0, text.inner())?;
    if found.is_empty() {
        return Ok(CelOptional::none());
    }
    let list: Vec<Box<dyn Val>> = found
        .into_iter()
        .map(|e| Box::new(CelString::from(e)) as Box<dyn Val>)
        .collect();
    Ok(CelOptional::of(Box::new(CelList::from(list))))
}

macro_rules! constant_formats {
    ($env:expr, $($fn_name:ident => $name:literal),* $(,)?) => {{
        $(
            fn $fn_name() -> Format {
                Format($name)
            }
            cel::add_overload!($env, fn $fn_name: () -> Format, name = concat!("format.", $name))?;
        )*
    }};
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(FORMAT.to_owned())?;
    cel::add_overload!(env, fn named: (CelString) -> CelOptional, name = "format.named")?;
    cel::add_member_overload!(env, fn validate: (Format, CelString) -> Result<CelOptional>)?;
    constant_formats!(env,
        dns1123_label => "dns1123Label",
        dns1123_subdomain => "dns1123Subdomain",
        dns1035_label => "dns1035Label",
        qualified_name => "qualifiedName",
        dns1123_label_prefix => "dns1123LabelPrefix",
        dns1123_subdomain_prefix => "dns1123SubdomainPrefix",
        dns1035_label_prefix => "dns1035LabelPrefix",
        label_value => "labelValue",
        uri => "uri",
        uuid => "uuid",
        byte => "byte",
        date => "date",
        datetime => "datetime",
    );
    Ok(())
}
