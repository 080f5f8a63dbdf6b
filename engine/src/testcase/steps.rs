//! From the decoded case to its steps, as Kruise's test builds them: the `obj` of each step
//! (weights, traffic, matches, header modifiers) and the expected entries.

use super::*;

pub(super) fn name_value_match(node: &DNode<'_>) -> NameValueMatch {
    NameValueMatch {
        match_type: node
            .field("type")
            .and_then(DNode::string)
            .map(str::to_string),
        name: node.field_string("name"),
        value: node.field_string("value"),
    }
}

pub(super) fn non_empty<T>(list: Vec<T>) -> Option<Vec<T>> {
    (!list.is_empty()).then_some(list)
}

pub(super) fn route_match(node: &DNode<'_>, keep_only_headers: bool) -> HttpRouteMatch {
    let list = |name: &str| {
        node.field(name)
            .map(|l| l.items().iter().map(name_value_match).collect::<Vec<_>>())
    };
    let headers = list("headers").and_then(non_empty);
    if keep_only_headers {
        return HttpRouteMatch {
            path: None,
            headers,
            query_params: None,
        };
    }
    HttpRouteMatch {
        path: node.field("path").map(|p| HttpPathMatch {
            match_type: p.field("type").and_then(DNode::string).map(str::to_string),
            value: p.field("value").and_then(DNode::string).map(str::to_string),
        }),
        headers,
        query_params: list("queryParams").and_then(non_empty),
    }
}

pub(super) fn header_modifier(node: &DNode<'_>) -> HeaderModifier {
    let pairs = |name: &str| {
        node.field(name)
            .map(|l| {
                l.items()
                    .iter()
                    .map(|h| (h.field_string("name"), h.field_string("value")))
                    .collect::<Vec<_>>()
            })
            .and_then(non_empty)
    };
    HeaderModifier {
        set: pairs("set"),
        add: pairs("add"),
        remove: node
            .field("remove")
            .map(|l| {
                l.items()
                    .iter()
                    .map(|h| h.string().unwrap_or_default().to_string())
                    .collect::<Vec<_>>()
            })
            .and_then(non_empty),
    }
}

pub(super) fn case_error(message: impl Into<String>, span: Span) -> CaseError {
    CaseError {
        message: message.into(),
        span: Some(span),
    }
}

pub(super) type BuiltCase = (CaseKind, Vec<CaseStep>, Vec<ExpectedEntry>, Option<Span>);

/// Builds the case from the decoded document. The resources' JSON is moved out of `top`
/// (not copied): a big `original` exists once while the case is built.
pub(super) fn build_case(
    top: &mut DNode<'_>,
    root: &YamlNode,
    warnings: &mut Vec<CaseWarning>,
) -> Result<BuiltCase, CaseError> {
    if top.field("rollout").is_none() && top.field("trafficRouting").is_none() {
        return Err(case_error(
            "neither rollout nor trafficRouting defined in test case",
            root.span,
        ));
    }

    // The resources must be objects with a kind (checked while decoding) and must be there.
    let Some(original) = top.field_mut("original") else {
        return Err(case_error(
            "original is missing or null (upstream test panics: nil pointer)",
            root.span,
        ));
    };
    let original_src = original.src;
    let Dv::Unstructured(original_object) = &mut original.v else {
        return Err(case_error("original is not an object", original_src.span));
    };
    let data = data_of(
        std::mem::take(original_object),
        original_src,
        "original",
        warnings,
    );

    let mut expected = Vec::new();
    let no_items = &mut Vec::new();
    let entries = match top.field_mut("expected") {
        Some(DNode {
            v: Dv::List(items), ..
        }) => items,
        _ => no_items,
    };
    for (i, entry) in entries.iter_mut().enumerate() {
        let Dv::Unstructured(object) = &mut entry.v else {
            return Err(case_error(
                format!("expected[{i}] is null (upstream test panics: nil pointer)"),
                entry.src.span,
            ));
        };
        let object = std::mem::take(object);
        let data = data_of(object, entry.src, &format!("expected[{i}]"), warnings);
        expected.push(ExpectedEntry {
            canonical: data.to_canonical_json(),
            data,
            node: entry.src.clone(),
        });
    }
    let expected_span = top.field("expected").map(|n| n.src.span);

    let rollout = top.field("rollout");
    let traffic_routing = top.field("trafficRouting");
    let (kind, steps) = if let Some(rollout) = rollout {
        if let Some(tr) = traffic_routing {
            warnings.push(CaseWarning {
                message: "both rollout and trafficRouting are set; Kruise's test uses rollout and ignores trafficRouting".into(),
                span: Some(tr.src.span),
            });
        }
        (CaseKind::Rollout, rollout_steps(rollout, data, warnings)?)
    } else {
        let tr = traffic_routing.expect("checked above");
        (
            CaseKind::TrafficRouting,
            vec![traffic_routing_step(tr, data)?],
        )
    };

    if expected.len() > steps.len() {
        let extra = &expected[steps.len()];
        warnings.push(CaseWarning {
            message: format!(
                "expected has {} entries but the case has {} step(s); Kruise never compares the extra entries",
                expected.len(),
                steps.len()
            ),
            span: Some(extra.node.span),
        });
    }
    Ok((kind, steps, expected, expected_span))
}

/// The steps of a rollout case. Every step's obj shares `original`'s data (a case with many
/// steps and a big `original` holds it once).
pub(super) fn rollout_steps(
    rollout: &DNode<'_>,
    data: Data,
    warnings: &mut Vec<CaseWarning>,
) -> Result<Vec<CaseStep>, CaseError> {
    let strategy = rollout.field("spec").and_then(|s| s.field("strategy"));
    let strategy_span = strategy.map_or(rollout.src.span, |s| s.src.span);
    let (name, chosen) = match (
        strategy.and_then(|s| s.field("canary")),
        strategy.and_then(|s| s.field("blueGreen")),
    ) {
        (Some(canary), _) => ("canary", canary),
        (None, Some(blue_green)) => ("blueGreen", blue_green),
        (None, None) => {
            return Err(case_error(
                "rollout.spec.strategy.canary is missing (upstream test panics: nil pointer)",
                strategy_span,
            ));
        }
    };
    let Some(first_ref) = chosen
        .field("trafficRoutings")
        .and_then(|r| r.items().first())
    else {
        return Err(case_error(
            format!(
                "rollout.spec.strategy.{name}.trafficRoutings is empty (upstream test panics: index out of range)"
            ),
            chosen.src.span,
        ));
    };
    let stable_service = first_ref.field_string("service");
    let canary_service = format!("{stable_service}-canary");
    let steps = chosen.field("steps").map(DNode::items).unwrap_or_default();
    if steps.is_empty() {
        warnings.push(CaseWarning {
            message: format!("rollout.spec.strategy.{name}.steps is empty: the case runs nothing"),
            span: Some(chosen.src.span),
        });
    }
    let data = Arc::new(data);
    Ok(steps
        .iter()
        .map(|step| {
            let traffic = step.field("traffic").and_then(DNode::string);
            let canary_weight = LuaData::canary_weight_from_traffic(traffic);
            let matches = step
                .field("matches")
                .map(|m| m.items().iter().map(|m| route_match(m, false)).collect());
            CaseStep {
                obj: Arc::new(LuaData {
                    data: Arc::clone(&data),
                    canary_weight,
                    stable_weight: 100i32.wrapping_sub(canary_weight),
                    matches,
                    canary_service: canary_service.clone(),
                    stable_service: stable_service.clone(),
                    request_header_modifier: step
                        .field("requestHeaderModifier")
                        .map(header_modifier),
                }),
                span: Some(step.src.span),
                traffic_set: traffic.is_some(),
            }
        })
        .collect())
}

pub(super) fn traffic_routing_step(tr: &DNode<'_>, data: Data) -> Result<CaseStep, CaseError> {
    let spec = tr.field("spec");
    let Some(object_ref) = spec
        .and_then(|s| s.field("objectRef"))
        .and_then(|r| r.items().first())
    else {
        return Err(case_error(
            "trafficRouting.spec.objectRef is empty (upstream test panics: index out of range)",
            spec.map_or(tr.src.span, |s| s.src.span),
        ));
    };
    let service = object_ref.field_string("service");
    let strategy = spec.and_then(|s| s.field("strategy"));
    let canary_weight = match strategy.and_then(|s| s.field("weight")).map(|w| &w.v) {
        Some(Dv::Int(w)) => Some(*w as i32),
        _ => None,
    };
    // Kruise builds a fresh, never-nil list holding only each match's headers.
    let matches = strategy
        .and_then(|s| s.field("matches"))
        .map(|m| m.items().iter().map(|m| route_match(m, true)).collect())
        .unwrap_or_default();
    // Kruise turns a set weight into the strategy's `traffic` ("N%"; api/v1alpha1/conversion.go,
    // ConversionToV1beta1TrafficRoutingStrategy).
    let traffic_set = canary_weight.is_some();
    let canary_weight = canary_weight.unwrap_or(-1);
    Ok(CaseStep {
        traffic_set,
        obj: Arc::new(LuaData {
            data: Arc::new(data),
            canary_weight,
            stable_weight: 100i32.wrapping_sub(canary_weight),
            matches: Some(matches),
            canary_service: service.clone(),
            stable_service: service,
            request_header_modifier: strategy
                .and_then(|s| s.field("requestHeaderModifier"))
                .map(header_modifier),
        }),
        span: Some(tr.src.span),
    })
}
