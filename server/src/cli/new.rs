//! `kruise-lua new <group>/<Kind>` and `kruise-lua new ingress/<class>`: scaffolds a script
//! folder with a working starting script and the three recommended test cases (headers ANDed,
//! headers ORed, weight-only steps), ready for the author to fill in.
//!
//! The fresh script returns the resource unchanged, so each case expects the original
//! resource back and `kruise-lua check` passes on the scaffold. A YAML comment on every
//! `expected` entry says what the author should put there. Existing files are never
//! overwritten, and each file is written atomically (see [`crate::atomic_write`]).

use std::fs;
use std::path::{Path, PathBuf};

use clap::Args;
use kruise_lua_engine::discovery::{CUSTOM_SCRIPT_NAME, INGRESS_FOLDER};

use super::options::EXIT_OK;
use crate::atomic_write::create_new_file;
use crate::project::UsageError;
use crate::project::paths;

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The gateway resource as `<group>/<Kind>` (e.g. `example.io/HTTPRoute`), or
    /// `ingress/<class>` for an ingress-class script
    #[arg(value_name = "GROUP/KIND")]
    pub name: String,
    /// The lua_configuration tree to add the script to (created if missing)
    #[arg(long, value_name = "DIR", default_value = "lua_configuration")]
    pub root: PathBuf,
    /// The stable service the test cases route (`trafficRoutings[0].service`)
    #[arg(long, value_name = "NAME", default_value = "web")]
    pub service: String,
    /// The resource's apiVersion in the cases, `<group>/<version>` or just `<version>`
    /// (default `<group>/v1alpha1`; custom resources only)
    #[arg(long, value_name = "VERSION")]
    pub api_version: Option<String>,
}

/// What `new` scaffolds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A custom provider: `<root>/<group>/<Kind>/trafficRouting.lua`.
    Custom { group: String, kind: String },
    /// An ingress class: `<root>/trafficrouting_ingress/<class>.lua`.
    Ingress { class: String },
}

/// A file to create and its contents.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    pub path: PathBuf,
    pub contents: String,
}

/// The three recommended cases, by file stem.
const CASES: [CaseShape; 3] = [
    CaseShape::HeadersAnd,
    CaseShape::HeadersOr,
    CaseShape::Weights,
];

pub fn execute(args: NewArgs) -> Result<u8, UsageError> {
    let target = parse_target(&args.name)?;
    validate_service(&args.service)?;
    let files = plan(
        &target,
        &args.root,
        &args.service,
        args.api_version.as_deref(),
    )?;
    refuse_links_out_of(&args.root, &files)?;
    let existing: Vec<String> = files
        .iter()
        .filter(|file| fs::symlink_metadata(&file.path).is_ok())
        .map(|file| paths::display(&file.path))
        .collect();
    if !existing.is_empty() {
        return Err(already_exist(&existing));
    }
    write_all(&files)?;
    let mut out = String::new();
    for file in &files {
        out.push_str(&format!("created {}\n", paths::display(&file.path)));
    }
    let check_path = match &target {
        Target::Custom { .. } => files[0].path.parent().unwrap_or(Path::new(".")),
        Target::Ingress { .. } => files[0].path.as_path(),
    };
    out.push_str(&format!(
        "\nNext: complete the checklist at the top of the script, write the gateway's edits where \
         the TODOs are, and replace each `expected` entry as its comment says. Then run:\n  \
         kruise-lua check {}\n",
        paths::display(check_path)
    ));
    super::options::write_stdout(&out)?;
    Ok(EXIT_OK)
}

fn already_exist(existing: &[String]) -> UsageError {
    let verb = if existing.len() == 1 {
        "already exists"
    } else {
        "already exist"
    };
    UsageError(format!(
        "{} {verb}; nothing was written (`new` never overwrites)",
        existing.join(", ")
    ))
}

/// Parses `<group>/<Kind>` or `ingress/<class>`.
pub fn parse_target(name: &str) -> Result<Target, UsageError> {
    let usage = |why: &str| {
        UsageError(format!(
            "`{name}`: {why} (expected `<group>/<Kind>` such as `example.io/HTTPRoute`, or `ingress/<class>`)"
        ))
    };
    let Some((group, rest)) = name.split_once('/') else {
        return Err(usage("no `/`"));
    };
    if rest.contains('/') {
        return Err(usage("more than one `/`"));
    }
    // Length first: a long name would otherwise be told about its characters.
    if rest.len() > 63 {
        let what = if group == "ingress" {
            "ingress class"
        } else {
            "Kind"
        };
        return Err(usage(&format!(
            "the {what} is {} characters long; at most 63 are allowed",
            rest.chars().count()
        )));
    }
    if group != "ingress" && group.len() > 253 {
        return Err(usage(&format!(
            "the group is {} characters long; at most 253 are allowed",
            group.chars().count()
        )));
    }
    if group == "ingress" {
        if !is_dns_label(rest) {
            return Err(usage(
                "an ingress class must be lower-case letters, digits and `-`, starting and ending with a letter or digit",
            ));
        }
        return Ok(Target::Ingress {
            class: rest.to_string(),
        });
    }
    if !group.contains('.') || !is_dns_subdomain(group) {
        return Err(usage(
            "the group must be a DNS subdomain with a dot, such as `example.io`",
        ));
    }
    if !is_kind(rest) {
        return Err(usage(
            "the Kind must start with an upper-case letter and hold only letters and digits",
        ));
    }
    Ok(Target::Custom {
        group: group.to_string(),
        kind: rest.to_string(),
    })
}

/// A Kubernetes Service name (DNS-1035 label).
fn validate_service(service: &str) -> Result<(), UsageError> {
    let valid = service.len() <= 63
        && service.starts_with(|c: char| c.is_ascii_lowercase())
        && is_dns_label(service);
    if valid {
        Ok(())
    } else {
        Err(UsageError(format!(
            "--service `{service}`: a Service name is lower-case letters, digits and `-`, starting with a letter"
        )))
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
fn is_dns_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// Dot-separated DNS labels, at most 253 characters.
fn is_dns_subdomain(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(is_dns_label)
}

/// A Kubernetes Kind: an upper-case letter, then letters and digits.
fn is_kind(text: &str) -> bool {
    text.len() <= 63
        && text.starts_with(|c: char| c.is_ascii_uppercase())
        && text.chars().all(|c| c.is_ascii_alphanumeric())
}

/// The files `new` would create for `target` under `root`, script first.
pub fn plan(
    target: &Target,
    root: &Path,
    service: &str,
    api_version: Option<&str>,
) -> Result<Vec<PlannedFile>, UsageError> {
    match target {
        Target::Custom { group, kind } => {
            let api_version = resolve_api_version(group, api_version)?;
            let folder = root.join(group).join(kind);
            let names = Names::new(service);
            let mut files = vec![PlannedFile {
                path: folder.join(CUSTOM_SCRIPT_NAME),
                contents: custom_script(group, kind),
            }];
            for shape in CASES {
                files.push(PlannedFile {
                    path: folder.join("testdata").join(shape.file_name()),
                    contents: custom_case(shape, group, kind, &api_version, &names),
                });
            }
            Ok(files)
        }
        Target::Ingress { class } => {
            if api_version.is_some() {
                return Err(UsageError(
                    "--api-version applies to custom resources only (an ingress-class case uses a networking.k8s.io/v1 Ingress)".to_string(),
                ));
            }
            let folder = root.join(INGRESS_FOLDER);
            let names = Names::new(service);
            let mut files = vec![PlannedFile {
                path: folder.join(format!("{class}.lua")),
                contents: ingress_script(class),
            }];
            for shape in CASES {
                files.push(PlannedFile {
                    path: folder.join("testdata").join(class).join(shape.file_name()),
                    contents: ingress_case(shape, class, &names),
                });
            }
            Ok(files)
        }
    }
}

/// `--api-version` as a full apiVersion. Its group must be `<group>`: Kruise picks the script
/// by the group of `customNetworkRefs[].apiVersion`, so another group would never run it.
fn resolve_api_version(group: &str, given: Option<&str>) -> Result<String, UsageError> {
    let Some(given) = given else {
        return Ok(format!("{group}/v1alpha1"));
    };
    let (given_group, version) = match given.split_once('/') {
        Some((given_group, version)) => (given_group, version),
        None => (group, given),
    };
    if given_group != group {
        return Err(UsageError(format!(
            "--api-version `{given}`: its group must be `{group}` (Kruise picks the script by the resource's group)"
        )));
    }
    if !is_dns_label(version) {
        return Err(UsageError(format!(
            "--api-version `{given}`: the version must look like `v1`, `v1beta1` or `v2alpha1`"
        )));
    }
    Ok(format!("{group}/{version}"))
}

/// Refuses a planned file whose folder under `root` passes through a symbolic link leading
/// outside the tree (or nowhere): `new` would write the files at the link's target.
fn refuse_links_out_of(root: &Path, files: &[PlannedFile]) -> Result<(), UsageError> {
    // A root that does not exist yet has nothing to follow; a root that is itself a link is
    // the tree the user named.
    let Ok(tree) = root.canonicalize() else {
        return Ok(());
    };
    for file in files {
        let Ok(relative) = file.path.strip_prefix(root) else {
            continue;
        };
        let mut at = root.to_path_buf();
        for component in relative.components() {
            at.push(component);
            let Ok(meta) = fs::symlink_metadata(&at) else {
                break;
            };
            if !meta.file_type().is_symlink() {
                continue;
            }
            let why = match at.canonicalize() {
                Ok(target) if target.starts_with(&tree) => continue,
                Ok(target) => format!("is a symbolic link to {}", target.display()),
                Err(_) => "is a symbolic link that leads nowhere".to_owned(),
            };
            return Err(UsageError(format!(
                "{}: {why}, outside {}; nothing was written (`new` writes only inside the tree)",
                paths::display(&at),
                paths::display(root)
            )));
        }
    }
    Ok(())
}

/// Creates every file, or none: on an error, the files already created are removed again.
fn write_all(files: &[PlannedFile]) -> Result<(), UsageError> {
    let mut created: Vec<&Path> = Vec::new();
    for file in files {
        if let Err(error) = write_new_file(&file.path, &file.contents) {
            for path in created {
                let _ = fs::remove_file(path);
            }
            return Err(error);
        }
        created.push(&file.path);
    }
    Ok(())
}

/// Creates `path` (and its folder) with `contents` through [`create_new_file`], which never
/// replaces a file, even one that appeared since the plan was made.
fn write_new_file(path: &Path, contents: &str) -> Result<(), UsageError> {
    let folder = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(folder).map_err(|err| UsageError::io(folder, &err))?;
    match create_new_file(path, contents.as_bytes()) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(already_exist(&[paths::display(path)]))
        }
        Err(err) => Err(UsageError::io(path, &err)),
    }
}

/// The three recommended cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CaseShape {
    /// One step, two header conditions ANDed in one `headers` list.
    HeadersAnd,
    /// One step, two `matches` entries (ORed).
    HeadersOr,
    /// Weight-only steps: 20%, 50%, 100%.
    Weights,
}

impl CaseShape {
    fn file_name(self) -> &'static str {
        match self {
            CaseShape::HeadersAnd => "header_matches_and.yaml",
            CaseShape::HeadersOr => "header_matches_or.yaml",
            CaseShape::Weights => "weights.yaml",
        }
    }

    /// The `steps:` items, indented for `rollout.spec.strategy.canary.steps`.
    fn steps_yaml(self) -> &'static str {
        match self {
            CaseShape::HeadersAnd => {
                "        - matches:
          - headers:
            - type: Exact
              name: x-canary
              value: \"true\"
            - type: RegularExpression
              name: user-agent
              value: \".*Firefox.*\"
"
            }
            CaseShape::HeadersOr => {
                "        - matches:
          - headers:
            - type: Exact
              name: x-canary
              value: \"true\"
          - headers:
            - type: Exact
              name: x-user-group
              value: beta
"
            }
            CaseShape::Weights => {
                "        - traffic: \"20%\"
        - traffic: \"50%\"
        - traffic: \"100%\"
"
            }
        }
    }

    /// What each step asks for, in words (one entry per step).
    fn step_descriptions(self) -> &'static [&'static str] {
        match self {
            CaseShape::HeadersAnd => &["x-canary: \"true\" AND user-agent matching .*Firefox.*"],
            CaseShape::HeadersOr => &["x-canary: \"true\" OR x-user-group: beta"],
            CaseShape::Weights => &["traffic 20%", "traffic 50%", "traffic 100%"],
        }
    }

    /// The file's opening comment.
    fn summary(self) -> &'static str {
        match self {
            CaseShape::HeadersAnd => {
                "# Header matches ANDed: one step whose single match holds two header conditions in one\n\
                 # `headers` list, so only requests carrying both go to the canary."
            }
            CaseShape::HeadersOr => {
                "# Header matches ORed: one step with two `matches` entries, so requests carrying either\n\
                 # header go to the canary."
            }
            CaseShape::Weights => {
                "# Weight-only steps: 20%, 50% and 100% of the traffic to the canary, no matches."
            }
        }
    }
}

/// The service names the cases use, as YAML scalars.
struct Names {
    /// The stable service as written (for comments).
    service: String,
    /// The stable service as a YAML scalar (quoted if YAML 1.1 would read it as another type).
    service_yaml: String,
}

impl Names {
    fn new(service: &str) -> Names {
        Names {
            service: service.to_string(),
            service_yaml: yaml_scalar(service),
        }
    }
}

/// `text` as a plain YAML scalar, or double-quoted when sigs.k8s.io/yaml (YAML 1.1) would read
/// it as a boolean, null or number. The inputs are validated names, so no escaping is needed.
fn yaml_scalar(text: &str) -> String {
    const SPECIAL: [&str; 12] = [
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "", ".inf",
    ];
    let lower = text.to_ascii_lowercase();
    let numeric_start = text.starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c));
    if SPECIAL.contains(&lower.as_str()) || numeric_start {
        format!("\"{text}\"")
    } else {
        text.to_string()
    }
}

/// Indents every non-empty line of `text` by `width` spaces.
fn indent(text: &str, width: usize) -> String {
    let pad = " ".repeat(width);
    text.lines()
        .map(|line| {
            if line.is_empty() {
                "\n".to_string()
            } else {
                format!("{pad}{line}\n")
            }
        })
        .collect()
}

/// A resource (lines at column 0) as an item of the `expected` list.
fn list_item(resource: &str) -> String {
    let mut out = String::new();
    for (index, line) in resource.lines().enumerate() {
        out.push_str(if index == 0 { "- " } else { "  " });
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The Rollout of a case: `trafficRoutings[0]` is `service` with `reference` (the
/// `customNetworkRefs` or `ingress` part, indented for the item), then the shape's steps.
fn rollout_yaml(shape: CaseShape, names: &Names, reference: &str) -> String {
    let service = &names.service_yaml;
    format!(
        "rollout:
  apiVersion: rollouts.kruise.io/v1beta1
  kind: Rollout
  metadata:
    name: {service}
  spec:
    workloadRef:
      apiVersion: apps/v1
      kind: Deployment
      name: {service}
    strategy:
      canary:
        trafficRoutings:
        - service: {service}
{reference}        steps:
{steps}",
        steps = shape.steps_yaml()
    )
}

fn custom_case(
    shape: CaseShape,
    group: &str,
    kind: &str,
    api_version: &str,
    names: &Names,
) -> String {
    let kind_yaml = yaml_scalar(kind);
    let service = &names.service_yaml;
    let reference = format!(
        "          customNetworkRefs:
          - apiVersion: {api_version}
            kind: {kind_yaml}
            name: {service}
"
    );
    // A placeholder spec: one route to the stable service and one to another service, which a
    // script must leave alone. The author replaces it with a real resource of the gateway.
    let spec = format!(
        "spec:
  routes:
  - name: main
    match:
      pathPrefix: /
    backends:
    - service: {service}
      port: 80
  - name: other
    match:
      pathPrefix: /other
    backends:
    - service: other
      port: 80
"
    );
    let resource = format!(
        "apiVersion: {api_version}
kind: {kind_yaml}
metadata:
  name: {service}
"
    );
    let canary = format!("{}-canary", names.service);
    let stable = &names.service;
    let mut out = String::new();
    out.push_str(shape.summary());
    out.push_str(&format!(
        "\n# Scaffolded by `kruise-lua new {group}/{kind}`: the expectations below still equal the\n\
         # original (the fresh script returns it unchanged). Replace each one as its comment says.\n"
    ));
    out.push_str(&rollout_yaml(shape, names, &reference));
    out.push_str("original:\n");
    out.push_str(&indent(&resource, 2));
    out.push_str(&format!(
        "  # TODO: replace this placeholder spec with a real {kind} as your users write it, with a\n  \
         # route to the stable service `{stable}` and one that must stay unchanged.\n"
    ));
    out.push_str(&indent(&spec, 2));
    out.push_str("expected:\n");
    let weights = [(80, 20), (50, 50), (0, 100)];
    for (index, description) in shape.step_descriptions().iter().enumerate() {
        // Steps are numbered from 1 (as in every report); `expected[index]` is this entry.
        let number = index + 1;
        let todo = match shape {
            CaseShape::HeadersAnd | CaseShape::HeadersOr => format!(
                "# TODO step {number} ({description}): the {kind} with a canary route in front of the\n\
                 # stable one that only these requests reach, pointing at `{canary}`; the route to\n\
                 # `other` unchanged."
            ),
            CaseShape::Weights => {
                let (stable_part, canary_part) = weights[index];
                format!(
                    "# TODO step {number} ({description}): the {kind} with `{stable}` at weight {stable_part} and\n\
                     # `{canary}` at weight {canary_part}; the route to `other` unchanged."
                )
            }
        };
        out.push_str(&todo);
        out.push('\n');
        out.push_str(&list_item(&format!("{resource}{spec}")));
    }
    out
}

fn ingress_case(shape: CaseShape, class: &str, names: &Names) -> String {
    let class_yaml = yaml_scalar(class);
    let service = &names.service_yaml;
    let canary = format!("{}-canary", names.service);
    let reference = format!(
        "          ingress:
            classType: {class_yaml}
            name: {service}
"
    );
    let metadata = format!(
        "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {canary}
  annotations:
    example.com/team: {service}
"
    );
    let spec = format!(
        "spec:
  ingressClassName: {class_yaml}
  rules:
  - host: {stable}.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: {canary}
            port:
              number: 80
",
        stable = names.service
    );
    let mut out = String::new();
    out.push_str(shape.summary());
    out.push_str(&format!(
        "\n# Scaffolded by `kruise-lua new ingress/{class}`. An ingress-class script only sets the\n\
         # canary Ingress's annotations, so only `annotations` are compared. The expectations below\n\
         # still equal the original (the fresh script returns its annotations unchanged). Replace\n\
         # each one as its comment says.\n"
    ));
    out.push_str(&rollout_yaml(shape, names, &reference));
    out.push_str("original:\n");
    out.push_str("  # The canary Ingress as Kruise creates it. TODO: give it annotations the script must keep\n  # (and stale canary ones it must drop).\n");
    out.push_str(&indent(&format!("{metadata}{spec}"), 2));
    out.push_str("expected:\n");
    for (index, description) in shape.step_descriptions().iter().enumerate() {
        // Steps are numbered from 1 (as in every report); `expected[index]` is this entry.
        let number = index + 1;
        let todo = match shape {
            CaseShape::HeadersAnd | CaseShape::HeadersOr => format!(
                "# TODO step {number} ({description}): the canary annotations that send these requests to\n\
                 # `{canary}`. If the controller cannot express this, make the script raise an error and\n\
                 # keep a case only for what it can express."
            ),
            CaseShape::Weights => format!(
                "# TODO step {number} ({description}): the canary weight annotation (obj.weight is the\n\
                 # string \"{weight}\").",
                weight = ["20", "50", "100"][index]
            ),
        };
        out.push_str(&todo);
        out.push('\n');
        out.push_str(&list_item(&metadata));
    }
    out
}

fn custom_script(group: &str, kind: &str) -> String {
    CUSTOM_SCRIPT
        .replace("@KIND@", kind)
        .replace("@GROUP@", group)
}

fn ingress_script(class: &str) -> String {
    INGRESS_SCRIPT.replace("@CLASS@", class)
}

const CUSTOM_SCRIPT: &str = r#"-- @KIND@ (@GROUP@): TODO say in one line what this script edits, for example "splits
-- spec.routes[].backends between the stable and the canary service".
--
-- Checklist: replace each item with its answer, as the other scripts of lua_configuration do.
--   [ ] What it edits: which routes or destinations change (only those pointing at the stable
--       service) and where the canary ones go.
--   [ ] canaryWeight / stableWeight: how a stable destination is split. -1 means "no traffic in
--       this step" and leaves the weights unchanged.
--   [ ] matches: headers ANDed in one `headers` list, ORed across `matches`, path, queryParams.
--       Which ones the gateway honours; raise an error for a combination it cannot express
--       rather than route the wrong requests.
--   [ ] requestHeaderModifier (set / add / remove): applied to canary-bound requests only, or
--       ignored, and why.
--   [ ] canaryService == stableService (a TrafficRouting CR): a canary subset or label, or the
--       resource unchanged, and why.
-- Honoured Rollout fields: TODO
-- Ignored: TODO, and why.
--
-- As scaffolded, the script reads `obj` into plain values (weight, canaryMatches, headerOps) and
-- returns obj.data unchanged: the gateway's own edits go where the TODOs are.

local stable = obj.stableService
local canary = obj.canaryService
-- A TrafficRouting CR routes between the pods of one service: only a gateway that selects pods
-- by label (subsets) can tell the canary apart.
local sameService = canary == stable
-- The resource's spec; nil when the resource has none.
local spec = obj.data.spec

-- A deep copy. A table reached twice in the result (the same headers in two routes, or a table
-- of obj stored again) cannot be encoded, so copy what is taken from obj or stored twice.
local function copy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = copy(x) end
  return out
end

-- The canary share of this step: nil when the step sets no traffic (canaryWeight is -1), and at
-- most 100.
local weight = obj.canaryWeight
if weight ~= nil and weight < 0 then weight = nil end
if weight ~= nil and weight > 100 then weight = 100 end

-- Splits a stable destination's weight `w` into its stable and canary parts (when weight ~= nil).
local function split(w)
  local canaryPart = math.floor(w * weight / 100)
  return w - canaryPart, canaryPart
end

-- The step's matches, ORed; the conditions inside one match are ANDed. obj.matches is nil when
-- the step has none and an empty table for a TrafficRouting CR without matches; every field of
-- a match is optional (a match may hold only a path). Types default as in the Gateway API.
local canaryMatches = {}
for _, m in ipairs(obj.matches or {}) do
  local conditions = {}
  local any = false
  if m.path ~= nil then
    conditions.path = {type = m.path.type or "PathPrefix", value = m.path.value or "/"}
    any = true
  end
  for _, h in ipairs(m.headers or {}) do
    conditions.headers = conditions.headers or {}
    table.insert(conditions.headers, {type = h.type or "Exact", name = h.name, value = h.value})
    any = true
  end
  for _, q in ipairs(m.queryParams or {}) do
    conditions.queryParams = conditions.queryParams or {}
    table.insert(conditions.queryParams, {type = q.type or "Exact", name = q.name, value = q.value})
    any = true
  end
  if any then table.insert(canaryMatches, conditions) end
end

-- requestHeaderModifier: nil when the step has none; set and add are lists of {name, value},
-- remove a list of names, and each is absent when empty.
local headerOps = nil
local modifier = obj.requestHeaderModifier
if modifier ~= nil and (modifier.set ~= nil or modifier.add ~= nil or modifier.remove ~= nil) then
  headerOps = {set = copy(modifier.set), add = copy(modifier.add), remove = copy(modifier.remove)}
end

-- Whether a destination names the stable service. TODO: also accept the gateway's own forms
-- of the name if it has any (for example "web.namespace.svc.cluster.local").
local function isStable(name)
  return name == stable
end

if spec ~= nil then
  -- TODO: walk spec's routes with ipairs (never build an array from pairs over obj: its order
  -- is random in Kruise) and, for each route with a destination where isStable(...) holds:
  --   * when #canaryMatches > 0, insert in front of it a canary route: copy(route), with the
  --     route's own conditions ANDed with each of canaryMatches, pointing at `canary` (or at a
  --     canary subset of `stable` when sameService), with headerOps applied if the gateway can;
  --   * when weight ~= nil, local stablePart, canaryPart = split(w) for the destination's weight
  --     w, and put a `canary` destination with canaryPart right after the stable one.
  -- Don't emit empty tables: they encode as null in the controller and [] in the test harness.
end

return obj.data
"#;

const INGRESS_SCRIPT: &str = r#"-- @CLASS@ ingress canary annotations: TODO say in one line which annotations of the canary
-- Ingress this script sets (for example "@CLASS@.ingress.kubernetes.io/canary-*").
--
-- Checklist: replace each item with its answer, as the other scripts of lua_configuration do.
--   [ ] weight: obj.weight is a string such as "20"; "-1" means no traffic share in this step.
--   [ ] matches: which header conditions the controller can express (one header, several ANDed
--       in one `headers` list, the same header ORed across matches), and path or queryParams.
--       Raise an error for the others rather than route the wrong requests.
--   [ ] requestHeaderModifier (set / add / remove): honoured if the controller has header
--       control, or ignored, and why.
--   [ ] Stale annotations: the canary annotations of an earlier step must not linger.
-- Honoured Rollout fields: TODO
-- Ignored: TODO, and why.
--
-- As scaffolded, the script copies the canary Ingress's annotations and returns them unchanged:
-- the controller's canary annotations go where the TODOs are. The result must be a map of
-- string to string.

-- TODO: the prefix of the controller's canary annotations.
local PREFIX = "@CLASS@.ingress.kubernetes.io/"

-- The canary Ingress's annotations (obj.annotations is nil when it has none). Copying a map
-- with pairs is fine: the keys of the result are sorted when it is encoded.
local annotations = {}
for k, v in pairs(obj.annotations or {}) do
  -- TODO: skip the canary annotations this script sets, so an earlier step's do not linger.
  annotations[k] = v
end

-- The weight of this step as a string, or nil when the step sets no traffic.
local weight = obj.weight
if weight == "-1" then weight = nil end
-- TODO: if weight ~= nil then annotations[PREFIX .. "canary-weight"] = weight end

-- The header conditions, one list per match: ANDed inside a list, ORed across lists. Matches
-- without headers (only a path or query) are skipped; every field of a match is optional.
local headerGroups = {}
for _, m in ipairs(obj.matches or {}) do
  if m.headers ~= nil and #m.headers > 0 then
    local group = {}
    for _, h in ipairs(m.headers) do
      table.insert(group, {type = h.type or "Exact", name = h.name, value = h.value})
    end
    table.insert(headerGroups, group)
  end
end
-- TODO: turn headerGroups into annotations, for one header for example
--   annotations[PREFIX .. "canary-by-header"] = headerGroups[1][1].name
-- and error("...") for what the controller cannot express.

-- TODO: obj.requestHeaderModifier ({set = {{name =, value =}, ...}, add = ..., remove = {"h", ...}},
-- nil when the step has none), if the controller can modify request headers.

return annotations
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_custom_and_ingress_targets() {
        assert_eq!(
            parse_target("example.io/HTTPRoute").unwrap(),
            Target::Custom {
                group: "example.io".into(),
                kind: "HTTPRoute".into()
            }
        );
        assert_eq!(
            parse_target("ingress/aliyun-alb").unwrap(),
            Target::Ingress {
                class: "aliyun-alb".into()
            }
        );
    }

    #[test]
    fn rejects_bad_names() {
        for bad in [
            "HTTPRoute",
            "example/HTTPRoute",
            "example.io/httpRoute",
            "example.io/HTTP-Route",
            "Example.io/HTTPRoute",
            "example..io/HTTPRoute",
            "-example.io/HTTPRoute",
            "example.io/HTTPRoute/x",
            "example.io/",
            "ingress/Nginx",
            "ingress/",
            "ingress/-x",
        ] {
            assert!(parse_target(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn long_names_are_told_their_length() {
        let long_kind = format!("example.io/H{}", "x".repeat(63));
        let err = parse_target(&long_kind).err().unwrap().0;
        assert!(
            err.contains("the Kind is 64 characters long; at most 63"),
            "{err}"
        );
        assert!(parse_target(&format!("example.io/H{}", "x".repeat(62))).is_ok());
        let long_class = format!("ingress/{}", "a".repeat(64));
        let err = parse_target(&long_class).err().unwrap().0;
        assert!(
            err.contains("the ingress class is 64 characters long"),
            "{err}"
        );
        let long_group = format!("{}.io/Kind", "a.".repeat(130));
        let err = parse_target(&long_group).err().unwrap().0;
        assert!(err.contains("the group is 263 characters long"), "{err}");
    }

    #[test]
    fn quotes_scalars_yaml_would_retype() {
        assert_eq!(yaml_scalar("web"), "web");
        assert_eq!(yaml_scalar("yes"), "\"yes\"");
        assert_eq!(yaml_scalar("On"), "\"On\"");
        assert_eq!(yaml_scalar("N"), "\"N\"");
        assert_eq!(yaml_scalar("010"), "\"010\"");
        assert_eq!(yaml_scalar("Widget"), "Widget");
    }

    #[test]
    fn api_version_group_must_match() {
        assert_eq!(
            resolve_api_version("example.io", None).unwrap(),
            "example.io/v1alpha1"
        );
        assert_eq!(
            resolve_api_version("example.io", Some("v2")).unwrap(),
            "example.io/v2"
        );
        assert_eq!(
            resolve_api_version("example.io", Some("example.io/v1beta1")).unwrap(),
            "example.io/v1beta1"
        );
        assert!(resolve_api_version("example.io", Some("other.io/v1")).is_err());
        assert!(resolve_api_version("example.io", Some("a/b/c")).is_err());
    }
}
