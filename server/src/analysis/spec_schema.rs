//! The CRD schema of a script's `obj.data.spec` (group and kind from the script, version from
//! its cases' `original.apiVersion`, else the CRD's storage version): followed along Lua paths
//! for completion, hover and KL014, and described as authors read it (`[]object`,
//! `string (enum: a|b)`).

use std::fmt::Write as _;
use std::sync::Arc;

use kruise_lua_engine::schema::{Additional, Schema, SchemaSet, SchemaType};

use super::obj_schema::PathSeg;

/// How many enum values a type text lists before it elides the rest.
const MAX_ENUM_SHOWN: usize = 8;

/// One CRD version's schema for a script's resource, shared with the set it was loaded in.
#[derive(Clone)]
pub struct SpecSchema {
    set: Arc<SchemaSet>,
    /// Which CRD and version, to find it in `set` again.
    crd: usize,
    version: usize,
}

impl std::fmt::Debug for SpecSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SpecSchema({})", self.label())
    }
}

impl PartialEq for SpecSchema {
    fn eq(&self, other: &SpecSchema) -> bool {
        Arc::ptr_eq(&self.set, &other.set) && self.crd == other.crd && self.version == other.version
    }
}

impl SpecSchema {
    /// The schema for `group`/`kind` in `set`: the version named by the first of
    /// `api_versions` (`group/version`, as the cases' `original.apiVersion`) the CRD has, else
    /// its storage version. `None` without such a CRD or when that version has no schema.
    pub fn choose(
        set: Arc<SchemaSet>,
        group: &str,
        kind: &str,
        api_versions: &[String],
    ) -> Option<SpecSchema> {
        let crd = set
            .crds()
            .iter()
            .position(|crd| crd.group == group && crd.kind == kind)?;
        let versions = &set.crds()[crd].versions;
        let named = api_versions.iter().find_map(|api_version| {
            let (api_group, version) = api_version.rsplit_once('/')?;
            (api_group == group)
                .then(|| versions.iter().position(|v| v.name == version))
                .flatten()
        });
        let version = named.or_else(|| versions.iter().position(|v| v.storage))?;
        versions[version].schema.as_ref()?;
        Some(SpecSchema { set, crd, version })
    }

    /// `ApisixRoute apisix.apache.org/v2` (for docs).
    pub fn label(&self) -> String {
        let crd = &self.set.crds()[self.crd];
        format!(
            "{} {}/{}",
            crd.kind, crd.group, crd.versions[self.version].name
        )
    }

    /// The schema of `spec`.
    pub fn spec(&self) -> Option<&Schema> {
        self.set.crds()[self.crd].versions[self.version]
            .schema
            .as_ref()?
            .child("spec")
    }

    /// The schema at `path` below `spec`: keys go into properties (or a map's values),
    /// indices into items.
    pub fn at(&self, path: &[PathSeg]) -> Option<&Schema> {
        let mut schema = self.spec()?;
        for seg in path {
            schema = match seg {
                PathSeg::Key(key) => schema.child(key)?,
                PathSeg::Index(_) | PathSeg::Any => schema.items.as_deref()?,
            };
        }
        Some(schema)
    }

    /// [`type_text`] of the schema at `path`.
    pub fn type_text_at(&self, path: &[PathSeg]) -> Option<String> {
        self.at(path).map(type_text)
    }

    /// Markdown docs of the field at `schema`: its description and where it comes from.
    pub fn describe(&self, schema: &Schema) -> String {
        let mut text = format!("`{}`", type_text(schema));
        if let Some(description) = schema.description.as_deref().filter(|d| !d.is_empty()) {
            let _ = write!(text, "\n\n{description}");
        }
        let _ = write!(text, "\n\nFrom the CRD schema of {}.", self.label());
        text
    }
}

/// Whether the API server keeps a field `key` that `schema` (an object) does not declare.
pub fn keeps_undeclared(schema: &Schema) -> bool {
    schema.preserve_unknown_fields
        || matches!(schema.additional, Additional::Any | Additional::Schema(_))
}

/// The type as an author reads it: `integer`, `string (enum: a|b)`, `[]object`,
/// `map[string]string`, `int-or-string`.
pub fn type_text(schema: &Schema) -> String {
    if schema.int_or_string {
        return "int-or-string".to_string();
    }
    let base = match schema.schema_type {
        Some(SchemaType::Array) => {
            let item = schema.items.as_deref().map_or("any".to_string(), type_text);
            format!("[]{item}")
        }
        Some(SchemaType::Object) => match &schema.additional {
            Additional::Schema(value) if schema.properties.is_empty() => {
                format!("map[string]{}", type_text(value))
            }
            _ => "object".to_string(),
        },
        Some(other) => other.as_str().to_string(),
        None => "any".to_string(),
    };
    match &schema.enum_values {
        Some(values) if !values.is_empty() => {
            let shown: Vec<String> = values
                .iter()
                .take(MAX_ENUM_SHOWN)
                .map(|(value, canonical)| match value {
                    kruise_lua_engine::JsonValue::String(s) => s.clone(),
                    _ => canonical.clone(),
                })
                .collect();
            let more = if values.len() > MAX_ENUM_SHOWN {
                "|…"
            } else {
                ""
            };
            format!("{base} (enum: {}{more})", shown.join("|"))
        }
        _ => base,
    }
}

/// A path below `spec` as the API server names it: `spec.http[].route[].weight`.
pub fn spec_path_text(path: &[PathSeg]) -> String {
    let mut text = String::from("spec");
    for seg in path {
        match seg {
            PathSeg::Key(key) => {
                text.push('.');
                text.push_str(key);
            }
            PathSeg::Index(_) | PathSeg::Any => text.push_str("[]"),
        }
    }
    text
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A CRD of our own for tests: `Gizmo` in `test.kruise-lua.dev`, versions v1 (storage) and
    /// v2 (whose spec has `extra` too).
    pub const GIZMO_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.test.kruise-lua.dev}
spec:
  group: test.kruise-lua.dev
  names: {kind: Gizmo, plural: gizmos}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                http:
                  type: array
                  description: HTTP routes.
                  items:
                    type: object
                    properties:
                      route:
                        type: array
                        items:
                          type: object
                          properties:
                            weight: {type: integer, description: Share of the traffic.}
                            destination:
                              type: object
                              properties:
                                host: {type: string}
                      mode: {type: string, enum: [Canary, Blue]}
                      port: {x-kubernetes-int-or-string: true}
                labels:
                  type: object
                  additionalProperties: {type: string}
                free:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
    - name: v2
      served: true
      storage: false
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                extra: {type: boolean}
";

    pub fn gizmo_set() -> Arc<SchemaSet> {
        let mut set = SchemaSet::new();
        set.add_text("gizmo.yaml", GIZMO_CRD).unwrap();
        Arc::new(set)
    }

    pub fn gizmo(api_versions: &[&str]) -> SpecSchema {
        let versions: Vec<String> = api_versions.iter().map(|v| v.to_string()).collect();
        SpecSchema::choose(gizmo_set(), "test.kruise-lua.dev", "Gizmo", &versions).unwrap()
    }

    fn key(k: &str) -> PathSeg {
        PathSeg::Key(k.to_string())
    }

    #[test]
    fn version_from_api_version_else_storage() {
        assert_eq!(gizmo(&[]).label(), "Gizmo test.kruise-lua.dev/v1");
        assert_eq!(
            gizmo(&["test.kruise-lua.dev/v2"]).label(),
            "Gizmo test.kruise-lua.dev/v2"
        );
        // Another group's apiVersion, or an unknown version, says nothing.
        assert_eq!(
            gizmo(&["other.io/v2", "test.kruise-lua.dev/v9"]).label(),
            "Gizmo test.kruise-lua.dev/v1"
        );
        assert!(SpecSchema::choose(gizmo_set(), "test.kruise-lua.dev", "Other", &[]).is_none());
    }

    #[test]
    fn paths_and_type_texts() {
        let schema = gizmo(&[]);
        let at = |path: &[PathSeg]| type_text(schema.at(path).unwrap());
        assert_eq!(at(&[key("http")]), "[]object");
        assert_eq!(
            at(&[
                key("http"),
                PathSeg::Index(1),
                key("route"),
                PathSeg::Any,
                key("weight")
            ]),
            "integer"
        );
        assert_eq!(
            at(&[key("http"), PathSeg::Any, key("mode")]),
            "string (enum: Canary|Blue)"
        );
        assert_eq!(
            at(&[key("http"), PathSeg::Any, key("port")]),
            "int-or-string"
        );
        assert_eq!(at(&[key("labels")]), "map[string]string");
        assert_eq!(at(&[key("labels"), key("anything")]), "string");
        assert!(schema.at(&[key("htp")]).is_none());
        let weight = schema
            .at(&[
                key("http"),
                PathSeg::Any,
                key("route"),
                PathSeg::Any,
                key("weight"),
            ])
            .unwrap();
        assert_eq!(
            schema.describe(weight),
            "`integer`\n\nShare of the traffic.\n\nFrom the CRD schema of Gizmo test.kruise-lua.dev/v1."
        );
        assert!(keeps_undeclared(schema.at(&[key("free")]).unwrap()));
        assert!(keeps_undeclared(schema.at(&[key("labels")]).unwrap()));
        assert!(!keeps_undeclared(
            schema.at(&[key("http"), PathSeg::Any]).unwrap()
        ));
        assert_eq!(
            spec_path_text(&[key("http"), PathSeg::Index(2), key("route"), PathSeg::Any]),
            "spec.http[].route[]"
        );
    }
}
