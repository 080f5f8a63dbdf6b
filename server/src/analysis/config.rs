//! Lint configuration: which lints run and at what severity.
//!
//! Read from `kruise-lua.toml` at the `lua_configuration` root:
//!
//! ```toml
//! [lints]
//! KL005 = "off"          # by code ...
//! KL006 = "warning"
//! unused-local = "hint"  # ... or by name
//! ```
//!
//! `kruise-lua lint` and `check --lint` look it up the same way for each file
//! ([`LintConfig::nearest`]).
//!
//! Levels: `"off"` (also `"allow"`), `"error"`, `"warning"` (`"warn"`), `"info"`
//! (`"information"`), `"hint"`. Other tables in the file are left to other tools. The same
//! settings come from the language client as JSON: `{"lints": {"KL005": "off"}}`.

use super::severity::Severity;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;

use super::lints;

/// A configured level for one lint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LintLevel {
    Off,
    On(Severity),
}

impl LintLevel {
    fn parse(text: &str) -> Option<LintLevel> {
        Some(match text.to_ascii_lowercase().as_str() {
            "off" | "allow" | "none" => LintLevel::Off,
            "error" | "deny" => LintLevel::On(Severity::Error),
            "warning" | "warn" => LintLevel::On(Severity::Warning),
            "info" | "information" => LintLevel::On(Severity::Information),
            "hint" => LintLevel::On(Severity::Hint),
            _ => return None,
        })
    }
}

/// A problem in a configuration file or settings object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Per-lint overrides; lints not mentioned run at their default severity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LintConfig {
    /// Keyed by lint code (`"KL005"`).
    levels: BTreeMap<&'static str, LintLevel>,
}

/// The file format (and the LSP settings' shape): only the `lints` table is ours.
#[derive(Deserialize, Default)]
struct RawConfig {
    #[serde(default)]
    lints: BTreeMap<String, String>,
}

impl LintConfig {
    /// The configuration file's name, looked up at the `lua_configuration` root.
    pub const FILE_NAME: &'static str = "kruise-lua.toml";

    /// Parses the text of a `kruise-lua.toml`.
    pub fn from_toml_str(text: &str) -> Result<LintConfig, ConfigError> {
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| ConfigError(format!("{}: {e}", Self::FILE_NAME)))?;
        Self::from_raw(raw)
    }

    /// Reads `<dir>/kruise-lua.toml`; a missing file gives the default configuration.
    pub fn load(dir: &Path) -> Result<LintConfig, ConfigError> {
        let path = dir.join(Self::FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::from_toml_str(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LintConfig::default()),
            Err(e) => Err(ConfigError(format!("{}: {e}", path.display()))),
        }
    }

    /// The configuration for a file at `path`, as the language server finds it: the nearest
    /// `kruise-lua.toml` in its folder or above (the search stops at a repository root, a
    /// folder holding `.git`), else the default. Returns the file it read, if any.
    pub fn nearest(path: &Path) -> Result<(LintConfig, Option<std::path::PathBuf>), ConfigError> {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        for dir in absolute.ancestors().skip(1) {
            let file = dir.join(Self::FILE_NAME);
            if file.is_file() {
                let config = Self::load(dir).map_err(|e| {
                    let cause = e.0.strip_prefix("kruise-lua.toml: ").unwrap_or(&e.0);
                    ConfigError(format!("{}: {cause}", file.display()))
                })?;
                return Ok((config, Some(file)));
            }
            if dir.join(".git").exists() {
                break;
            }
        }
        Ok((LintConfig::default(), None))
    }

    /// Builds the configuration from LSP settings JSON: `{"lints": {"KL005": "off"}}`.
    pub fn from_json(settings: &serde_json::Value) -> Result<LintConfig, ConfigError> {
        let raw: RawConfig = serde_json::from_value(settings.clone())
            .map_err(|e| ConfigError(format!("settings: {e}")))?;
        Self::from_raw(raw)
    }

    fn from_raw(raw: RawConfig) -> Result<LintConfig, ConfigError> {
        let mut config = LintConfig::default();
        for (key, value) in raw.lints {
            let lint = lints::find(&key).ok_or_else(|| {
                ConfigError(format!(
                    "unknown lint `{key}` (known: {})",
                    lints::all()
                        .iter()
                        .map(|l| format!("{} {}", l.code(), l.name()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            let level = LintLevel::parse(&value).ok_or_else(|| {
                ConfigError(format!(
                    "lint `{key}`: unknown level `{value}` (use off, error, warning, info or hint)"
                ))
            })?;
            config.levels.insert(lint.code(), level);
        }
        Ok(config)
    }

    /// Overrides from `other` win over this configuration's (e.g. client settings over the
    /// file).
    pub fn merge(&mut self, other: &LintConfig) {
        self.levels
            .extend(other.levels.iter().map(|(k, v)| (*k, *v)));
    }

    /// The severity lint `code` reports at, or None when it is off.
    pub fn severity(&self, code: &str, default: Severity) -> Option<Severity> {
        match self.levels.get(code) {
            Some(LintLevel::Off) => None,
            Some(LintLevel::On(severity)) => Some(*severity),
            None => Some(default),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_by_code_and_name() {
        let config = LintConfig::from_toml_str(
            "[lints]\nKL005 = \"off\"\nKL006 = \"warning\"\nunused-local = \"error\"\n\
             [other-tool]\nx = 1\n",
        )
        .unwrap();
        assert_eq!(config.severity("KL005", Severity::Hint), None);
        assert_eq!(
            config.severity("KL006", Severity::Hint),
            Some(Severity::Warning)
        );
        assert_eq!(
            config.severity("KL007", Severity::Hint),
            Some(Severity::Error)
        );
        assert_eq!(
            config.severity("KL001", Severity::Error),
            Some(Severity::Error)
        );
    }

    #[test]
    fn errors_name_the_problem() {
        let e = LintConfig::from_toml_str("[lints]\nKL999 = \"off\"").unwrap_err();
        assert!(e.0.contains("unknown lint `KL999`"), "{e}");
        let e = LintConfig::from_toml_str("[lints]\nKL001 = \"loud\"").unwrap_err();
        assert!(e.0.contains("unknown level `loud`"), "{e}");
        let e = LintConfig::from_toml_str("[lints\n").unwrap_err();
        assert!(e.0.starts_with("kruise-lua.toml"), "{e}");
    }

    #[test]
    fn json_settings_and_merge() {
        let json = serde_json::json!({"lints": {"KL005": "hint", "kl006": "off"}});
        let settings = LintConfig::from_json(&json).unwrap();
        let mut file = LintConfig::from_toml_str("[lints]\nKL005 = \"off\"").unwrap();
        file.merge(&settings);
        assert_eq!(
            file.severity("KL005", Severity::Information),
            Some(Severity::Hint)
        );
        assert_eq!(file.severity("KL006", Severity::Hint), None);
        assert!(LintConfig::from_json(&serde_json::json!({})).unwrap() == LintConfig::default());
    }

    #[test]
    fn load_missing_file_is_default() {
        let dir = std::env::temp_dir().join("kruise-lua-analysis-config-test-missing");
        assert_eq!(LintConfig::load(&dir).unwrap(), LintConfig::default());
    }
}
