//! The Go types Kruise decodes a case into, as static tables: what each struct's JSON fields
//! are, their types, and which were promoted from an embedded struct.

use super::*;

/// A Go type, as far as decoding a case needs to know it.
#[derive(Debug)]
pub(super) enum Ty {
    /// `string` or a named string type (the name is for messages).
    Str(&'static str),
    Bool,
    Int32,
    Int64,
    /// `intstr.IntOrString`: its own UnmarshalJSON (a string, or a number that fits int32).
    IntOrString,
    /// `metav1.Time`: its own UnmarshalJSON (null, or an RFC 3339 string).
    Time,
    /// `unstructured.Unstructured`: its own UnmarshalJSON (an object with a `kind`).
    Unstructured,
    /// Not modelled: anything is accepted and nothing is reported inside.
    Any,
    Ptr(&'static Ty),
    Slice(&'static Ty),
    /// `map[string]string`.
    StrMap,
    Struct(&'static StructTy),
}

#[derive(Debug)]
pub(super) struct StructTy {
    /// Package and type name, as Go prints them in errors.
    pub(super) pkg: &'static str,
    pub(super) name: &'static str,
    pub(super) fields: &'static [Field],
}

#[derive(Debug)]
pub(super) struct Field {
    /// The JSON name.
    pub(super) name: &'static str,
    pub(super) ty: Ty,
    /// For a field promoted from an embedded struct: that struct. sigs.k8s.io/yaml's
    /// conversion looks the key up to the embedded struct, not to the field (see module docs).
    pub(super) embedded: Option<&'static Ty>,
}

pub(super) const fn field(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        embedded: None,
    }
}

pub(super) const fn promoted(name: &'static str, ty: Ty, from: &'static Ty) -> Field {
    Field {
        name,
        ty,
        embedded: Some(from),
    }
}

pub(super) static STRING: Ty = Ty::Str("string");

pub(super) static TYPE_META: StructTy = StructTy {
    pkg: "v1",
    name: "TypeMeta",
    fields: &[
        field("apiVersion", Ty::Str("string")),
        field("kind", Ty::Str("string")),
    ],
};
pub(super) static TYPE_META_TY: Ty = Ty::Struct(&TYPE_META);

pub(super) static OBJECT_META: StructTy = StructTy {
    pkg: "v1",
    name: "ObjectMeta",
    fields: &[
        field("name", Ty::Str("string")),
        field("generateName", Ty::Str("string")),
        field("namespace", Ty::Str("string")),
        field("selfLink", Ty::Str("string")),
        field("uid", Ty::Str("types.UID")),
        field("resourceVersion", Ty::Str("string")),
        field("generation", Ty::Int64),
        field("creationTimestamp", Ty::Time),
        field("deletionTimestamp", Ty::Ptr(&Ty::Time)),
        field("deletionGracePeriodSeconds", Ty::Ptr(&Ty::Int64)),
        field("labels", Ty::StrMap),
        field("annotations", Ty::StrMap),
        field("ownerReferences", Ty::Any),
        field("finalizers", Ty::Slice(&STRING)),
        field("managedFields", Ty::Any),
    ],
};

pub(super) static OBJECT_REF: StructTy = StructTy {
    pkg: "v1beta1",
    name: "ObjectRef",
    fields: &[
        field("apiVersion", Ty::Str("string")),
        field("kind", Ty::Str("string")),
        field("name", Ty::Str("string")),
    ],
};

pub(super) static INGRESS_TRAFFIC_ROUTING: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "IngressTrafficRouting",
    fields: &[
        field("classType", Ty::Str("string")),
        field("name", Ty::Str("string")),
    ],
};

pub(super) static GATEWAY_TRAFFIC_ROUTING: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "GatewayTrafficRouting",
    fields: &[field("httpRouteName", Ty::Ptr(&STRING))],
};

pub(super) static TRAFFIC_ROUTING_REF: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "TrafficRoutingRef",
    fields: &[
        field("service", Ty::Str("string")),
        field("gracePeriodSeconds", Ty::Int32),
        field("ingress", Ty::Ptr(&Ty::Struct(&INGRESS_TRAFFIC_ROUTING))),
        field("gateway", Ty::Ptr(&Ty::Struct(&GATEWAY_TRAFFIC_ROUTING))),
        field("customNetworkRefs", Ty::Slice(&Ty::Struct(&OBJECT_REF))),
    ],
};

pub(super) static HTTP_HEADER: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HTTPHeader",
    fields: &[
        field("name", Ty::Str("v1beta1.HTTPHeaderName")),
        field("value", Ty::Str("string")),
    ],
};

pub(super) static HTTP_HEADER_FILTER: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HTTPHeaderFilter",
    fields: &[
        field("set", Ty::Slice(&Ty::Struct(&HTTP_HEADER))),
        field("add", Ty::Slice(&Ty::Struct(&HTTP_HEADER))),
        field("remove", Ty::Slice(&STRING)),
    ],
};

pub(super) static HTTP_PATH_MATCH: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HTTPPathMatch",
    fields: &[
        field("type", Ty::Ptr(&Ty::Str("v1beta1.PathMatchType"))),
        field("value", Ty::Ptr(&STRING)),
    ],
};

pub(super) static HTTP_HEADER_MATCH: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HTTPHeaderMatch",
    fields: &[
        field("type", Ty::Ptr(&Ty::Str("v1beta1.HeaderMatchType"))),
        field("name", Ty::Str("v1beta1.HTTPHeaderName")),
        field("value", Ty::Str("string")),
    ],
};

pub(super) static HTTP_QUERY_PARAM_MATCH: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HTTPQueryParamMatch",
    fields: &[
        field("type", Ty::Ptr(&Ty::Str("v1beta1.QueryParamMatchType"))),
        field("name", Ty::Str("string")),
        field("value", Ty::Str("string")),
    ],
};

pub(super) static HTTP_ROUTE_MATCH_V1BETA1: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HttpRouteMatch",
    fields: &[
        field("path", Ty::Ptr(&Ty::Struct(&HTTP_PATH_MATCH))),
        field("headers", Ty::Slice(&Ty::Struct(&HTTP_HEADER_MATCH))),
        field(
            "queryParams",
            Ty::Slice(&Ty::Struct(&HTTP_QUERY_PARAM_MATCH)),
        ),
    ],
};

pub(super) static TRAFFIC_ROUTING_STRATEGY_V1BETA1: StructTy = StructTy {
    pkg: "v1beta1",
    name: "TrafficRoutingStrategy",
    fields: &[
        field("traffic", Ty::Ptr(&STRING)),
        field(
            "requestHeaderModifier",
            Ty::Ptr(&Ty::Struct(&HTTP_HEADER_FILTER)),
        ),
        field("matches", Ty::Slice(&Ty::Struct(&HTTP_ROUTE_MATCH_V1BETA1))),
    ],
};
pub(super) static TRAFFIC_ROUTING_STRATEGY_V1BETA1_TY: Ty =
    Ty::Struct(&TRAFFIC_ROUTING_STRATEGY_V1BETA1);

pub(super) static ROLLOUT_PAUSE: StructTy = StructTy {
    pkg: "v1beta1",
    name: "RolloutPause",
    fields: &[field("duration", Ty::Ptr(&Ty::Int32))],
};

pub(super) static CANARY_STEP: StructTy = StructTy {
    pkg: "v1beta1",
    name: "CanaryStep",
    fields: &[
        promoted(
            "traffic",
            Ty::Ptr(&STRING),
            &TRAFFIC_ROUTING_STRATEGY_V1BETA1_TY,
        ),
        promoted(
            "requestHeaderModifier",
            Ty::Ptr(&Ty::Struct(&HTTP_HEADER_FILTER)),
            &TRAFFIC_ROUTING_STRATEGY_V1BETA1_TY,
        ),
        promoted(
            "matches",
            Ty::Slice(&Ty::Struct(&HTTP_ROUTE_MATCH_V1BETA1)),
            &TRAFFIC_ROUTING_STRATEGY_V1BETA1_TY,
        ),
        field("replicas", Ty::Ptr(&Ty::IntOrString)),
        field("pause", Ty::Struct(&ROLLOUT_PAUSE)),
    ],
};

pub(super) static PATCH_POD_TEMPLATE_METADATA: StructTy = StructTy {
    pkg: "v1beta1",
    name: "PatchPodTemplateMetadata",
    fields: &[
        field("annotations", Ty::StrMap),
        field("labels", Ty::StrMap),
    ],
};

pub(super) static CANARY_STRATEGY: StructTy = StructTy {
    pkg: "v1beta1",
    name: "CanaryStrategy",
    fields: &[
        field("steps", Ty::Slice(&Ty::Struct(&CANARY_STEP))),
        field(
            "trafficRoutings",
            Ty::Slice(&Ty::Struct(&TRAFFIC_ROUTING_REF)),
        ),
        field("failureThreshold", Ty::Ptr(&Ty::IntOrString)),
        field(
            "patchPodTemplateMetadata",
            Ty::Ptr(&Ty::Struct(&PATCH_POD_TEMPLATE_METADATA)),
        ),
        field("enableExtraWorkloadForCanary", Ty::Bool),
        field("trafficRoutingRef", Ty::Str("string")),
        field("disableGenerateCanaryService", Ty::Bool),
    ],
};

pub(super) static BLUE_GREEN_STRATEGY: StructTy = StructTy {
    pkg: "v1beta1",
    name: "BlueGreenStrategy",
    fields: &[
        field("steps", Ty::Slice(&Ty::Struct(&CANARY_STEP))),
        field(
            "trafficRoutings",
            Ty::Slice(&Ty::Struct(&TRAFFIC_ROUTING_REF)),
        ),
        field("failureThreshold", Ty::Ptr(&Ty::IntOrString)),
        field("trafficRoutingRef", Ty::Str("string")),
        field("disableGenerateCanaryService", Ty::Bool),
    ],
};

pub(super) static ROLLOUT_STRATEGY: StructTy = StructTy {
    pkg: "v1beta1",
    name: "RolloutStrategy",
    fields: &[
        field("paused", Ty::Bool),
        field("canary", Ty::Ptr(&Ty::Struct(&CANARY_STRATEGY))),
        field("blueGreen", Ty::Ptr(&Ty::Struct(&BLUE_GREEN_STRATEGY))),
    ],
};

pub(super) static ROLLOUT_SPEC: StructTy = StructTy {
    pkg: "v1beta1",
    name: "RolloutSpec",
    fields: &[
        field("workloadRef", Ty::Struct(&OBJECT_REF)),
        field("strategy", Ty::Struct(&ROLLOUT_STRATEGY)),
        field("disabled", Ty::Bool),
    ],
};

pub(super) static ROLLOUT: StructTy = StructTy {
    pkg: "v1beta1",
    name: "Rollout",
    fields: &[
        promoted("apiVersion", Ty::Str("string"), &TYPE_META_TY),
        promoted("kind", Ty::Str("string"), &TYPE_META_TY),
        field("metadata", Ty::Struct(&OBJECT_META)),
        field("spec", Ty::Struct(&ROLLOUT_SPEC)),
        field("status", Ty::Any),
    ],
};

pub(super) static HTTP_ROUTE_MATCH_V1ALPHA1: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "HttpRouteMatch",
    fields: &[field("headers", Ty::Slice(&Ty::Struct(&HTTP_HEADER_MATCH)))],
};

pub(super) static TRAFFIC_ROUTING_STRATEGY_V1ALPHA1: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "TrafficRoutingStrategy",
    fields: &[
        field("weight", Ty::Ptr(&Ty::Int32)),
        field(
            "requestHeaderModifier",
            Ty::Ptr(&Ty::Struct(&HTTP_HEADER_FILTER)),
        ),
        field(
            "matches",
            Ty::Slice(&Ty::Struct(&HTTP_ROUTE_MATCH_V1ALPHA1)),
        ),
    ],
};

pub(super) static TRAFFIC_ROUTING_SPEC: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "TrafficRoutingSpec",
    fields: &[
        field("objectRef", Ty::Slice(&Ty::Struct(&TRAFFIC_ROUTING_REF))),
        field("strategy", Ty::Struct(&TRAFFIC_ROUTING_STRATEGY_V1ALPHA1)),
    ],
};

pub(super) static TRAFFIC_ROUTING: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "TrafficRouting",
    fields: &[
        promoted("apiVersion", Ty::Str("string"), &TYPE_META_TY),
        promoted("kind", Ty::Str("string"), &TYPE_META_TY),
        field("metadata", Ty::Struct(&OBJECT_META)),
        field("spec", Ty::Struct(&TRAFFIC_ROUTING_SPEC)),
        field("status", Ty::Any),
    ],
};

pub(super) static TEST_CASE: StructTy = StructTy {
    pkg: "custom",
    name: "TestCase",
    fields: &[
        field("rollout", Ty::Ptr(&Ty::Struct(&ROLLOUT))),
        field("trafficRouting", Ty::Ptr(&Ty::Struct(&TRAFFIC_ROUTING))),
        field("original", Ty::Ptr(&Ty::Unstructured)),
        field("expected", Ty::Slice(&Ty::Ptr(&Ty::Unstructured))),
    ],
};
pub(super) static TEST_CASE_TY: Ty = Ty::Struct(&TEST_CASE);

impl Ty {
    /// The type's name as Go's `reflect.Type.String()` prints it.
    pub(super) fn go_name(&self) -> String {
        match self {
            Ty::Str(name) => name.to_string(),
            Ty::Bool => "bool".into(),
            Ty::Int32 => "int32".into(),
            Ty::Int64 => "int64".into(),
            Ty::IntOrString => "intstr.IntOrString".into(),
            Ty::Time => "v1.Time".into(),
            Ty::Unstructured => "unstructured.Unstructured".into(),
            Ty::Any => "interface {}".into(),
            Ty::Ptr(inner) => format!("*{}", inner.go_name()),
            Ty::Slice(inner) => format!("[]{}", inner.go_name()),
            Ty::StrMap => "map[string]string".into(),
            Ty::Struct(st) => format!("{}.{}", st.pkg, st.name),
        }
    }
}

/// The field a JSON key decodes into: an exact match first, else the first case-insensitive one.
pub(super) fn find_field<'t>(st: &'t StructTy, key: &str) -> Option<&'t Field> {
    st.fields
        .iter()
        .find(|f| f.name == key)
        .or_else(|| st.fields.iter().find(|f| field_name_matches(f.name, key)))
}
