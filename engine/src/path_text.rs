//! How a path into a value is written for people and read back: `spec.http[0].route[1].weight`,
//! keys that are not plain names quoted (`annotations["a.b/c"]`), `(root)` for the empty path.

use crate::json::encode::PATH_ENDS_KEPT;
use crate::yaml::PathSeg;

/// A JSON path as authors write it: `spec.http[0].route[1].weight`, keys that are not plain
/// names quoted (`annotations["nginx.ingress.kubernetes.io/canary"]`: a dotted key would be
/// ambiguous), and `(root)` for the empty path. A path deeper than twice
/// `PATH_ENDS_KEPT` levels keeps only its two ends, as
/// the encoder's error paths do (a 9,000-level path would be tens of kilobytes).
pub fn format_path(path: &[PathSeg]) -> String {
    if path.is_empty() {
        return "(root)".to_string();
    }
    if path.len() > 2 * PATH_ENDS_KEPT {
        let hidden = path.len() - 2 * PATH_ENDS_KEPT;
        let mut out = String::new();
        push_segments(&mut out, &path[..PATH_ENDS_KEPT]);
        out.push_str(&format!(" …({hidden} levels)… "));
        let mut tail = String::new();
        push_segments(&mut tail, &path[path.len() - PATH_ENDS_KEPT..]);
        out.push_str(&tail);
        return out;
    }
    let mut out = String::new();
    push_segments(&mut out, path);
    out
}

/// Appends `segments` to `out` in [`format_path`]'s notation (a key after something is
/// preceded by a dot).
fn push_segments(out: &mut String, segments: &[PathSeg]) {
    for seg in segments {
        match seg {
            PathSeg::Key(key) if is_plain_key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            PathSeg::Key(key) => {
                out.push('[');
                out.push_str(&serde_json::to_string(key).expect("strings always serialize"));
                out.push(']');
            }
            PathSeg::Index(index) => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
        }
    }
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'/')
}

/// Reads a path as [`format_path`] writes it (`spec.http[1].route[0]`,
/// `annotations["a.b/c"]`); `None` for anything else (a model's description of a route that
/// is not a path, `(root)`).
pub fn parse_path(text: &str) -> Option<Vec<PathSeg>> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            if after.starts_with('"') {
                // A quoted key: a JSON string up to the `]`.
                let mut de = serde_json::Deserializer::from_str(after).into_iter::<String>();
                let key = de.next()?.ok()?;
                let used = de.byte_offset();
                out.push(PathSeg::Key(key));
                rest = after[used..].strip_prefix(']')?;
            } else {
                let end = after.find(']')?;
                out.push(PathSeg::Index(after[..end].parse().ok()?));
                rest = &after[end + 1..];
            }
        } else {
            let rest_key = if out.is_empty() {
                rest
            } else {
                rest.strip_prefix('.')?
            };
            let end = rest_key.find(['.', '[']).unwrap_or(rest_key.len());
            let key = &rest_key[..end];
            if !is_plain_key(key) {
                return None;
            }
            out.push(PathSeg::Key(key.to_owned()));
            rest = &rest_key[end..];
        }
    }
    (!out.is_empty()).then_some(out)
}
