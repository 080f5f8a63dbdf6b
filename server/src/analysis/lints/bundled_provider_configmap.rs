//! KL011: a ConfigMap script for a custom provider Kruise already ships a script for. Kruise's
//! `getLuaScript` (openkruise/rollouts, pkg/trafficrouting/network/customNetworkProvider/
//! custom_network_provider.go) first looks up `lua_configuration/<group>/<Kind>/trafficRouting.lua`
//! among the files bundled in its image (pkg/util/lua_configuration.go), and reads the
//! `kruise-rollout-configuration` ConfigMap only when there is none. The image bundles Istio's
//! VirtualService and DestinationRule scripts, so a ConfigMap entry for those is never read.
//! (Ingress classes are the other way round: the ConfigMap wins; `check` reports both cases.)

use kruise_lua_engine::script::ScriptKind;

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::severity::Severity;

/// The custom providers whose scripts Kruise's image ships (openkruise/rollouts,
/// `lua_configuration/`): group and Kind.
const BUNDLED: &[(&str, &str)] = &[
    ("networking.istio.io", "VirtualService"),
    ("networking.istio.io", "DestinationRule"),
];

pub struct BundledProviderConfigMap;

impl Lint for BundledProviderConfigMap {
    fn code(&self) -> &'static str {
        "KL011"
    }
    fn name(&self) -> &'static str {
        "bundled-provider-configmap"
    }
    fn default_severity(&self) -> Severity {
        Severity::Warning
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        let Some(ScriptKind::Custom { group, kind }) = ctx.configmap_kind else {
            return Vec::new();
        };
        if !BUNDLED.contains(&(group.as_str(), kind.as_str())) {
            return Vec::new();
        }
        // The first line of the script: the finding is about the script as a whole.
        let start = ctx.source.len() - ctx.source.trim_start().len();
        let end = ctx.source[start..]
            .find('\n')
            .map_or(ctx.source.len(), |i| start + i);
        vec![LintDiagnostic::new(
            start..end,
            format!(
                "Kruise ships its own script for {group}/{kind} and always runs that one: this ConfigMap entry is never read (Kruise reads the ConfigMap only for providers it has no script for)"
            ),
        )]
    }
}
