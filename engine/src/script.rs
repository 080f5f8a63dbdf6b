//! What a script is: a custom network provider's for `<group>/<Kind>` or an ingress class's,
//! which decides the `obj` it gets and the result it must return.

/// What kind of script, which decides the `obj` it gets and the result it must return.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScriptKind {
    /// A custom network provider script for `<group>/<Kind>`.
    Custom { group: String, kind: String },
    /// An ingress-class script (`trafficrouting_ingress/<class>.lua`).
    Ingress { class: String },
}

/// Which `obj` and result a script gets: a custom network provider's, or an ingress class's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScriptFlavor {
    #[default]
    Custom,
    /// Ingress-class scripts: the step's obj is turned into an `IngressData` (weight as a
    /// string, `original`'s annotations) and only annotations are compared.
    Ingress,
}

impl From<&ScriptKind> for ScriptFlavor {
    fn from(kind: &ScriptKind) -> Self {
        match kind {
            ScriptKind::Custom { .. } => ScriptFlavor::Custom,
            ScriptKind::Ingress { .. } => ScriptFlavor::Ingress,
        }
    }
}
