//! How paths are shown in reports: as given on the command line, with forward slashes and
//! without leading `./` components, so reports are identical on every platform.

use std::path::{Component, Path};

/// `path` as reports show it.
pub fn display(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut absolute = false;
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::RootDir => absolute = true,
            Component::Prefix(prefix) => {
                parts.push(prefix.as_os_str().to_string_lossy().into_owned())
            }
            Component::ParentDir => parts.push("..".to_string()),
            Component::Normal(name) => parts.push(name.to_string_lossy().into_owned()),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// `path` (a display path) shown relative to the display path `base` when it lies below it.
pub fn relative<'a>(path: &'a str, base: &str) -> &'a str {
    if base.is_empty() || base == "." {
        return path;
    }
    match path.strip_prefix(base) {
        Some(rest) if rest.starts_with('/') => &rest[1..],
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_strips_current_dir_and_uses_forward_slashes() {
        assert_eq!(
            display(Path::new("./lua_configuration/a.io/K/trafficRouting.lua")),
            "lua_configuration/a.io/K/trafficRouting.lua"
        );
        assert_eq!(display(Path::new("/abs/./x")), "/abs/x");
        assert_eq!(display(Path::new(".")), ".");
        assert_eq!(display(Path::new("../up/x.yaml")), "../up/x.yaml");
    }

    #[test]
    fn relative_only_strips_whole_components() {
        assert_eq!(relative("a/b/testdata/x.yaml", "a/b"), "testdata/x.yaml");
        assert_eq!(relative("a/bc/x.yaml", "a/b"), "a/bc/x.yaml");
        assert_eq!(relative("x.yaml", "."), "x.yaml");
    }
}
