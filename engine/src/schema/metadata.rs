//! Labels and annotations against Kubernetes' own object-meta rules, which apply to every
//! resource whatever its CRD says.
//!
//! Rules from kubernetes/apimachinery (read, not copied): `pkg/util/validation/validation.go`
//! (`IsQualifiedName`, `IsValidLabelValue`, `IsDNS1123Subdomain`: name part at most 63
//! characters of `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, optional prefix a DNS-1123
//! subdomain of at most 253 characters; label values at most 63 characters of the same set, or
//! empty) and `pkg/api/validation/objectmeta.go` (`ValidateAnnotations`: keys are qualified
//! names after lower-casing, keys plus values at most 256 KiB in all,
//! `TotalAnnotationSizeLimitB`).

use std::collections::BTreeMap;

use super::Finding;
use crate::yaml::PathSeg;

/// `TotalAnnotationSizeLimitB`: 256 KiB.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;

/// Why `key` is not a qualified name (`prefix/name` or `name`), or `None` when it is one.
pub fn qualified_name_error(key: &str) -> Option<String> {
    let name = match key.split_once('/') {
        None => key,
        Some((prefix, name)) if !name.contains('/') => {
            if prefix.is_empty() {
                return Some("the prefix before `/` must not be empty".to_owned());
            }
            if let Some(reason) = dns1123_subdomain_error(prefix) {
                return Some(format!("prefix {prefix:?}: {reason}"));
            }
            name
        }
        _ => {
            return Some(
                "a qualified name is a name with an optional DNS subdomain prefix and `/` \
                 (e.g. `example.com/MyName`); it has more than one `/`"
                    .to_owned(),
            );
        }
    };
    if name.is_empty() {
        return Some("the name part must not be empty".to_owned());
    }
    if name.len() > QUALIFIED_NAME_MAX {
        return Some(format!(
            "the name part must be at most {QUALIFIED_NAME_MAX} characters, is {}",
            name.len()
        ));
    }
    if !is_name_chars(name) {
        return Some(format!(
            "the name part {name:?} must consist of alphanumerics, `-`, `_` or `.`, and start \
             and end with an alphanumeric"
        ));
    }
    None
}

/// Why `value` is not a valid label value, or `None` when it is one.
pub fn label_value_error(value: &str) -> Option<String> {
    if value.len() > LABEL_VALUE_MAX {
        return Some(format!(
            "must be at most {LABEL_VALUE_MAX} characters, is {}",
            value.len()
        ));
    }
    if !value.is_empty() && !is_name_chars(value) {
        return Some(
            "must be empty or consist of alphanumerics, `-`, `_` or `.`, and start and end with \
             an alphanumeric"
                .to_owned(),
        );
    }
    None
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
fn is_name_chars(text: &str) -> bool {
    let b = text.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn dns1123_subdomain_error(text: &str) -> Option<String> {
    if text.len() > DNS1123_SUBDOMAIN_MAX {
        return Some(format!(
            "must be at most {DNS1123_SUBDOMAIN_MAX} characters, is {}",
            text.len()
        ));
    }
    let label_ok = |label: &str| {
        let b = label.as_bytes();
        !b.is_empty()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    };
    if text.split('.').all(label_ok) {
        None
    } else {
        Some(
            "must be a lower-case DNS subdomain: labels of `a-z`, `0-9` and `-`, separated by \
             `.`, starting and ending with an alphanumeric"
                .to_owned(),
        )
    }
}

fn at(key: &str, field: &str) -> Vec<PathSeg> {
    vec![
        PathSeg::Key("metadata".to_owned()),
        PathSeg::Key(field.to_owned()),
        PathSeg::Key(key.to_owned()),
    ]
}

/// Checks labels (`metadata.labels`): keys are qualified names, values valid label values.
pub fn validate_labels<K: AsRef<str>, V: AsRef<str>>(
    labels: &BTreeMap<K, V>,
    out: &mut Vec<Finding>,
) {
    for (key, value) in labels {
        let (key, value) = (key.as_ref(), value.as_ref());
        if let Some(reason) = qualified_name_error(key) {
            out.push(Finding::error(
                &at(key, "labels"),
                "label-key",
                format!("invalid label key {key:?}: {reason}"),
            ));
        }
        if let Some(reason) = label_value_error(value) {
            out.push(Finding::error(
                &at(key, "labels"),
                "label-value",
                format!("invalid label value {value:?}: {reason}"),
            ));
        }
    }
}

/// Checks annotations (`metadata.annotations`): keys are qualified names once lower-cased, and
/// keys plus values stay within [`TOTAL_ANNOTATION_SIZE_LIMIT`] bytes.
pub fn validate_annotations<K: AsRef<str>, V: AsRef<str>>(
    annotations: &BTreeMap<K, V>,
    out: &mut Vec<Finding>,
) {
    let mut total = 0usize;
    for (key, value) in annotations {
        let key = key.as_ref();
        total += key.len() + value.as_ref().len();
        // Lower-cased only when that changes it (it did cost a string per annotation).
        let lower = if key.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii()) {
            std::borrow::Cow::Owned(key.to_lowercase())
        } else {
            std::borrow::Cow::Borrowed(key)
        };
        if let Some(reason) = qualified_name_error(&lower) {
            out.push(Finding::error(
                &at(key, "annotations"),
                "annotation-key",
                format!("invalid annotation key {key:?}: {reason}"),
            ));
        }
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        out.push(Finding::error(
            &[
                PathSeg::Key("metadata".to_owned()),
                PathSeg::Key("annotations".to_owned()),
            ],
            "annotation-size",
            format!(
                "annotations take {total} bytes, more than the {TOTAL_ANNOTATION_SIZE_LIMIT} \
                 bytes the API server allows"
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        for good in [
            "app",
            "app.kubernetes.io/name",
            "a_b-c.d",
            "A",
            "example.com/X1",
        ] {
            assert_eq!(qualified_name_error(good), None, "{good}");
        }
        for bad in [
            "",
            "/name",
            "a/b/c",
            "-app",
            "app-",
            "Example.com/name",
            "example.com/",
            "has space",
        ] {
            assert!(qualified_name_error(bad).is_some(), "{bad}");
        }
        assert!(qualified_name_error(&"a".repeat(63)).is_none());
        assert!(qualified_name_error(&"a".repeat(64)).is_some());
        let prefix = format!("{}.com/n", "a".repeat(250));
        assert!(qualified_name_error(&prefix).is_some());
    }

    #[test]
    fn label_values() {
        assert_eq!(label_value_error(""), None);
        assert_eq!(label_value_error("v1.2_3-x"), None);
        assert!(label_value_error("-x").is_some());
        assert!(label_value_error("a b").is_some());
        assert!(label_value_error(&"a".repeat(64)).is_some());
    }

    #[test]
    fn annotation_size() {
        let mut out = Vec::new();
        let big = BTreeMap::from([("k".to_owned(), "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT))]);
        validate_annotations(&big, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].rule, "annotation-size");
        let mut out = Vec::new();
        let fits = BTreeMap::from([("k".to_owned(), "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 1))]);
        validate_annotations(&fits, &mut out);
        assert!(out.is_empty());
    }
}
