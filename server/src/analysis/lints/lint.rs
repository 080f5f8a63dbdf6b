//! What a lint is: the trait each lint implements, the context it reads (the script's syntax
//! tree, semantic model, flavor, the shape of `obj.data.spec`) and the diagnostic it reports.

use std::cell::OnceCell;
use std::ops::Range;

use full_moon::ast::Ast;
use kruise_lua_engine::script::{ScriptFlavor, ScriptKind};

use crate::analysis::semantic::Model;
use crate::analysis::severity::Severity;
use crate::analysis::spec_shape::SpecShape;
use crate::analysis::walk::{self, Chain};

/// Everything a lint may look at.
pub struct LintContext<'a> {
    pub source: &'a str,
    pub ast: &'a Ast,
    pub model: &'a Model,
    pub flavor: ScriptFlavor,
    /// Whether the source has syntax errors (the AST is then partial).
    pub has_syntax_errors: bool,
    /// The shape of `obj.data.spec` from the script's test cases, when known.
    pub spec_shape: Option<&'a SpecShape>,
    /// The provider of a script embedded in a ConfigMap (None for a `.lua` file).
    pub configmap_kind: Option<&'a ScriptKind>,
    chains: OnceCell<Vec<Chain<'a>>>,
}

impl<'a> LintContext<'a> {
    pub fn new(
        source: &'a str,
        ast: &'a Ast,
        model: &'a Model,
        flavor: ScriptFlavor,
        has_syntax_errors: bool,
        spec_shape: Option<&'a SpecShape>,
    ) -> Self {
        LintContext {
            source,
            ast,
            model,
            flavor,
            has_syntax_errors,
            spec_shape,
            configmap_kind: None,
            chains: OnceCell::new(),
        }
    }

    /// Marks the script as embedded in a ConfigMap under the key of `kind`.
    pub fn in_configmap(mut self, kind: Option<&'a ScriptKind>) -> Self {
        self.configmap_kind = kind;
        self
    }

    /// Every chain of the chunk (see [`walk::chains`]), collected once for all lints.
    pub fn chains(&self) -> &[Chain<'a>] {
        self.chains.get_or_init(|| walk::chains(self.ast.nodes()))
    }
}

/// An edit that fixes a diagnostic (for code actions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    pub title: String,
    pub range: Range<usize>,
    pub replacement: String,
}

/// A finding of one lint, before configuration assigns its severity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintDiagnostic {
    pub range: Range<usize>,
    pub message: String,
    pub fix: Option<Fix>,
}

impl LintDiagnostic {
    pub fn new(range: Range<usize>, message: impl Into<String>) -> Self {
        LintDiagnostic {
            range,
            message: message.into(),
            fix: None,
        }
    }

    pub fn with_fix(
        mut self,
        title: impl Into<String>,
        range: Range<usize>,
        replacement: &str,
    ) -> Self {
        self.fix = Some(Fix {
            title: title.into(),
            range,
            replacement: replacement.to_string(),
        });
        self
    }
}

/// One lint. Implementations are stateless.
pub trait Lint: Sync {
    /// The stable code, `KL001`...
    fn code(&self) -> &'static str;
    /// A kebab-case name, also accepted in configuration.
    fn name(&self) -> &'static str;
    fn default_severity(&self) -> Severity;
    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic>;
}
