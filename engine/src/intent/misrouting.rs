//! Whether one probe went where the step asks: the split it asked for (the canary's share,
//! the stable backends kept as the original had them), the header changes the canary's requests
//! carry, and the texts a violation shows when it did not.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::Intent;
use crate::routing::{Backend, Distribution, Request, Routed, RoutingModel};

/// `None` when `now` is what the step asks for `request`, else (actual, expected) texts.
/// `by_convention`: the gateway sends `request` to the canary whatever the script writes
/// ([`RoutingModel::canary_by_convention`]), so that passes too.
pub(super) fn misrouting(
    model: &dyn RoutingModel,
    intent: &Intent,
    request: &Request,
    before: &Routed,
    now: &Routed,
    by_convention: bool,
) -> Option<(String, String)> {
    let Routed::To(original) = before else {
        return unserved(before, now);
    };
    let read = || RequestReading::of(model, intent, request, by_convention);
    judged(model, intent, original, now, read)
}

/// The verdict on a request nothing served before the step: the step must leave it so.
fn unserved(before: &Routed, now: &Routed) -> Option<(String, String)> {
    (now != before).then(|| (now.describe(), before.describe()))
}

/// All [`misrouting`] reads of a request besides where it goes: whether the step's matches
/// select it, whether the two readings of them differ on it, and whether the gateway sends it
/// to the canary by a convention of its own.
#[derive(Clone, Copy, PartialEq, Eq)]
struct RequestReading {
    selected: bool,
    readings_differ: bool,
    by_convention: bool,
}

impl RequestReading {
    fn of(
        model: &dyn RoutingModel,
        intent: &Intent,
        request: &Request,
        by_convention: bool,
    ) -> RequestReading {
        Self::selected(
            model,
            intent,
            request,
            intent.selects(request),
            by_convention,
        )
    }

    /// [`Self::of`] of a request whose `selected` is known.
    fn selected(
        model: &dyn RoutingModel,
        intent: &Intent,
        request: &Request,
        selected: bool,
        by_convention: bool,
    ) -> RequestReading {
        RequestReading {
            selected,
            readings_differ: intent.readings_differ(
                request,
                model.step_regex_may_search(),
                selected,
            ),
            by_convention,
        }
    }

    /// Whether a request read as `self` is asked at least what one read as `less` is: the
    /// same selection, and the two readings' difference and the gateway's convention each
    /// add to what is asked ([`judged`] tries the asked fractions in turn and passes at the
    /// first that holds), so a verdict that passes for `less` passes for `self` too.
    fn asks_at_least(self, less: RequestReading) -> bool {
        self.selected == less.selected
            && self.readings_differ >= less.readings_differ
            && self.by_convention >= less.by_convention
    }
}

/// [`misrouting`] for the probes of one step (one model and intent), judging each pair of
/// decisions once: a verdict reads nothing of the request but its [`RequestReading`] (and that
/// only when the request went to the stable service before the step), and the models hand out
/// one shared decision per route ([`Routed::To`]), so most probes of a step meet a pair an
/// earlier probe did. The decisions are known by address; each entry holds them, so no other
/// decision can stand at an address an entry names while the entry lives.
#[derive(Default)]
pub(super) struct Verdicts {
    judged: Vec<Judged>,
}

/// One verdict of [`Verdicts`]: the decisions before and after the step, how the request was
/// read (`None`: the verdict of the pair reads nothing of it), and the verdict
/// ([`misrouting`]'s).
type Judged = (
    Arc<Distribution>,
    Routed,
    Option<RequestReading>,
    Option<(String, String)>,
);

/// At most this many verdicts are kept per step (later pairs are judged each time): a step
/// routes its probes through a few routes, and a lookup walks the entries.
const VERDICTS_KEPT: usize = 64;

impl Verdicts {
    /// [`misrouting`] of `request`, `before` and `now` under the step's `model` and `intent`;
    /// `by_convention` gives [`misrouting`]'s `by_convention`, asked only when the verdict
    /// depends on it.
    pub(super) fn of(
        &mut self,
        model: &dyn RoutingModel,
        intent: &Intent,
        request: &Request,
        before: &Routed,
        now: &Routed,
        by_convention: impl FnOnce() -> bool,
    ) -> Option<(String, String)> {
        let Routed::To(original) = before else {
            return unserved(before, now);
        };
        let mut by_convention = Some(by_convention);
        let pair = |(b, n, ..): &Judged| {
            Arc::ptr_eq(b, original)
                && match (n, now) {
                    (Routed::To(a), Routed::To(b)) => Arc::ptr_eq(a, b),
                    (Routed::NoRoute, Routed::NoRoute) => true,
                    _ => false,
                }
        };
        // Whether a pair's verdict reads the request depends on `original` alone: every entry
        // of a pair has a reading, or none has.
        let mut reading = match self.judged.iter().find(|e| pair(e)) {
            Some((.., None, verdict)) => return verdict.clone(),
            None => None,
            Some(_) => {
                // Most probes pass: a passing verdict of the pair for a reading that asks no
                // more than this request's settles it before the request is read in full
                // (the gateway's convention, its selection, the readings' difference: each
                // a match of conditions against it).
                let passes_below = |known: RequestReading| {
                    self.judged.iter().any(|e| {
                        pair(e)
                            && e.3.is_none()
                            && e.2.is_some_and(|passed| known.asks_at_least(passed))
                    })
                };
                let least = |selected, by_convention| RequestReading {
                    selected,
                    readings_differ: false,
                    by_convention,
                };
                if passes_below(least(true, false)) && passes_below(least(false, false)) {
                    return None;
                }
                let by_convention = by_convention.take().expect("asked once")();
                let selected = intent.selects(request);
                if passes_below(least(selected, by_convention)) {
                    return None;
                }
                let known =
                    RequestReading::selected(model, intent, request, selected, by_convention);
                if let Some((.., verdict)) =
                    self.judged.iter().find(|e| pair(e) && e.2 == Some(known))
                {
                    return verdict.clone();
                }
                Some(known)
            }
        };
        let verdict = judged(model, intent, original, now, || {
            *reading.get_or_insert_with(|| {
                let by_convention = by_convention.take().expect("asked once")();
                RequestReading::of(model, intent, request, by_convention)
            })
        });
        if self.judged.len() < VERDICTS_KEPT {
            self.judged
                .push((original.clone(), now.clone(), reading, verdict.clone()));
        }
        verdict
    }

    /// How many verdicts are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.judged.len()
    }
}

/// [`misrouting`] of a request the configuration before the step sent to `original`; `read`
/// reads the request, called only when the verdict depends on it (the request went to the
/// stable service before the step).
fn judged(
    model: &dyn RoutingModel,
    intent: &Intent,
    original: &Distribution,
    now: &Routed,
    read: impl FnOnce() -> RequestReading,
) -> Option<(String, String)> {
    let stable_backends: Vec<&Backend> = original
        .shares
        .iter()
        .map(|(b, _)| b)
        .filter(|b| intent.is_stable(model, b))
        .collect();
    let stable_share: f64 = original
        .shares
        .iter()
        .filter(|(b, _)| stable_backends.contains(&b))
        .map(|(_, s)| s)
        .sum();
    let untouched = || same(original, now);
    if stable_share <= 0.0 {
        return (!untouched()).then(|| (now.describe(), original.describe()));
    }
    let weight = |w: u32| Asked::Weight(f64::from(w) / 100.0);
    let unselected = match (intent.weight, intent.matches.is_empty()) {
        (Some(w), true) => AskedSet::of(&[weight(w)]),
        // Matches take precedence: the weight may or may not apply to the rest.
        (Some(w), false) => AskedSet::of(&[Asked::Weight(0.0), weight(w)]),
        (None, _) => AskedSet::of(&[Asked::Weight(0.0)]),
    };
    let RequestReading {
        selected,
        readings_differ,
        by_convention,
    } = read();
    let mut asked = if selected {
        AskedSet::of(&[Asked::Selected])
    } else {
        unselected
    };
    if readings_differ {
        if asked.as_slice() == [Asked::Selected] {
            asked.extend(unselected.as_slice());
        } else {
            asked.push(Asked::Selected);
        }
    }
    if by_convention && !asked.as_slice().contains(&Asked::Selected) {
        asked.push(Asked::Selected);
    }
    // Checked without building the asked distributions (most probes route as asked); they
    // are built, to be described, only when none of them passes.
    for fraction in asked.as_slice() {
        if *fraction == Asked::Weight(0.0) {
            if untouched() {
                return None;
            }
            continue;
        }
        let expected = expected_shares(model, intent, original, &stable_backends, now, *fraction);
        if split_as_asked(
            model,
            intent,
            original,
            &stable_backends,
            now,
            &expected,
            *fraction,
        ) {
            return None;
        }
    }
    let expected_texts: Vec<String> = asked
        .as_slice()
        .iter()
        .map(|fraction| {
            expected_distribution(model, intent, original, &stable_backends, now, *fraction)
                .describe()
        })
        .collect();
    let mut actual = now.describe();
    if let Routed::To(d) = now
        && let Some(missing) = missing_header_changes(model, intent, original, &stable_backends, d)
    {
        actual.push_str(&format!(" ({missing})"));
    }
    Some((actual, expected_texts.join(" or ")))
}

/// What a step asks for one request, in the order they are tried: at most three (the step's
/// matches select it, no weight, the step's weight), held without allocating.
#[derive(Clone, Copy)]
struct AskedSet {
    items: [Asked; 3],
    len: usize,
}

impl AskedSet {
    fn of(items: &[Asked]) -> AskedSet {
        let mut set = AskedSet {
            items: [Asked::Selected; 3],
            len: 0,
        };
        set.extend(items);
        set
    }

    fn push(&mut self, asked: Asked) {
        self.items[self.len] = asked;
        self.len += 1;
    }

    fn extend(&mut self, items: &[Asked]) {
        for asked in items {
            self.push(*asked);
        }
    }

    fn as_slice(&self) -> &[Asked] {
        &self.items[..self.len]
    }
}

fn same(a: &Distribution, b: &Routed) -> bool {
    let Routed::To(b) = b else { return false };
    a.header_changes == b.header_changes
        && a.shares.len() == b.shares.len()
        && a.shares
            .iter()
            .zip(&b.shares)
            .all(|((x, s), (y, t))| x == y && (s - t).abs() < 1e-9)
}

pub(super) fn is_canary(
    model: &dyn RoutingModel,
    intent: &Intent,
    stable_backends: &[&Backend],
    backend: &Backend,
) -> bool {
    intent.is_canary_service(model, backend)
        && (intent.canary_service != intent.stable_service || !stable_backends.contains(&backend))
}

/// What a step asks for one request.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Asked {
    /// The step's matches select it: all of it to the canary.
    Selected,
    /// This fraction of the stable share goes to the canary; other backends keep theirs.
    Weight(f64),
}

/// The canary backend the step's distributions name: as the step's configuration names it
/// when it has one, else one made from the step's canary service.
fn expected_canary<'a>(
    model: &dyn RoutingModel,
    intent: &Intent,
    stable_backends: &[&Backend],
    now: &'a Routed,
) -> Cow<'a, Backend> {
    let named = match now {
        Routed::To(d) => d
            .shares
            .iter()
            .map(|(b, _)| b)
            .find(|b| is_canary(model, intent, stable_backends, b)),
        Routed::NoRoute => None,
    };
    match named {
        Some(backend) => Cow::Borrowed(backend),
        None => {
            let mut backend = Backend::service(&intent.canary_service);
            // Named like the stable backend it stands beside (`web:8080` → `web-canary:8080`),
            // so that one backend does not read as two (`web-canary:8080` and `web-canary`).
            backend.port = stable_backends.first().and_then(|b| b.port.clone());
            if intent.canary_service == intent.stable_service {
                // Kruise's own Istio script names the canary subset `canary` (upstream
                // lua_configuration/networking.istio.io/VirtualService/trafficRouting.lua).
                backend.subset = Some("canary".into());
            }
            Cow::Owned(backend)
        }
    }
}

/// The shares the step asks for a request (see [`Asked`]), without copying their backends:
/// what [`Distribution::from_weights`] makes of the weights, the same numbers in the same
/// order (all-zero weights give none).
fn expected_shares<'a>(
    model: &dyn RoutingModel,
    intent: &Intent,
    original: &'a Distribution,
    stable_backends: &[&Backend],
    now: &'a Routed,
    fraction: Asked,
) -> Vec<(Cow<'a, Backend>, f64)> {
    let canary = expected_canary(model, intent, stable_backends, now);
    let Asked::Weight(fraction) = fraction else {
        // A request the step's matches select goes to the canary alone: Kruise's Gateway API
        // provider gives the canary rule the canary as its only backend
        // (openkruise/rollouts `pkg/trafficrouting/network/gateway/gateway.go`,
        // `buildCanaryHeaderHttpRoutes`: `BackendRefs` is the canary backend alone), and
        // Kruise's Istio script does the same (the route's other destinations are not copied).
        return vec![(canary, 1.0)];
    };
    // Each weight's backend: `Some(i)`, `original.shares[i]`'s; `None`, the canary.
    let mut weights: Vec<(Option<usize>, f64)> = Vec::with_capacity(original.shares.len() + 1);
    let mut canary_share = 0.0;
    for (i, (backend, share)) in original.shares.iter().enumerate() {
        if stable_backends.contains(&backend) {
            weights.push((Some(i), share * (1.0 - fraction)));
            canary_share += share * fraction;
        } else {
            weights.push((Some(i), *share));
        }
    }
    weights.push((None, canary_share));
    let backend_of = |at: Option<usize>| -> &Backend {
        match at {
            Some(i) => &original.shares[i].0,
            None => &canary,
        }
    };
    // `Distribution::from_weights`: each positive weight over the total, summed per
    // backend in the order given, backends in order.
    let total: f64 = weights.iter().map(|(_, w)| w.max(0.0)).sum();
    let mut merged: Vec<(Option<usize>, f64)> = Vec::with_capacity(weights.len());
    if total > 0.0 {
        for (at, weight) in &weights {
            if *weight > 0.0 {
                let backend = backend_of(*at);
                match merged.iter_mut().find(|(b, _)| backend_of(*b) == backend) {
                    Some((_, sum)) => *sum += weight / total,
                    None => merged.push((*at, weight / total)),
                }
            }
        }
        merged.sort_by(|(a, _), (b, _)| backend_of(*a).cmp(backend_of(*b)));
    }
    let mut canary = Some(canary);
    merged
        .into_iter()
        .map(|(at, share)| match at {
            Some(i) => (Cow::Borrowed(&original.shares[i].0), share),
            None => (canary.take().expect("one canary entry"), share),
        })
        .collect()
}

/// The distribution the step asks for a request (see [`Asked`]).
fn expected_distribution(
    model: &dyn RoutingModel,
    intent: &Intent,
    original: &Distribution,
    stable_backends: &[&Backend],
    now: &Routed,
    fraction: Asked,
) -> Distribution {
    Distribution {
        shares: expected_shares(model, intent, original, stable_backends, now, fraction)
            .into_iter()
            .map(|(backend, share)| (backend.into_owned(), share))
            .collect(),
        ..Distribution::default()
    }
}

/// How far a weighted share may be from the asked one. Kruise's weight is a whole percent
/// (`TrafficRoutingStrategy.Traffic`, "5%"), and every modelled gateway holds integer weights
/// that can total 100 (relative weights: Istio `HTTPRouteDestination.weight`, Traefik
/// `WRRService.Weight`, Kuma, SMI, Gloo, Emissary, Contour, APISIX, ALB; a fixed total of 100
/// by default for the canary-weight annotations: ingress-nginx `balancer.lua`
/// `route_to_alternative_balancer`). So when every share of the asked split is a whole percent
/// the gateway can express it exactly, and nothing but it passes (a stable weight 100 left
/// beside a canary 5 is 4.76 %, not 5 %). When a share is not a whole percent (the route also
/// serves other backends: web 90, legacy 10 at 5 % is web 85.5 %), weights that total 100 come
/// within one point of each share, and so must the configuration.
fn weight_tolerance(expected: &[(Cow<'_, Backend>, f64)]) -> f64 {
    let whole_percents = expected.iter().all(|(_, share)| {
        let percent = share * 100.0;
        (percent - percent.round()).abs() < 1e-6
    });
    if whole_percents { 1e-6 } else { 0.01 + 1e-9 }
}

fn split_as_asked(
    model: &dyn RoutingModel,
    intent: &Intent,
    original: &Distribution,
    stable_backends: &[&Backend],
    now: &Routed,
    expected: &[(Cow<'_, Backend>, f64)],
    fraction: Asked,
) -> bool {
    let Routed::To(now) = now else { return false };
    let tolerance = if matches!(fraction, Asked::Selected | Asked::Weight(1.0)) {
        1e-9
    } else {
        weight_tolerance(expected)
    };
    let want = || expected.iter().map(|(b, s)| (&**b, *s));
    let got = || now.shares.iter().map(|(b, s)| (b, *s));
    let canary_of = |shares: &mut dyn Iterator<Item = (&Backend, f64)>| -> f64 {
        shares
            .filter(|(b, _)| is_canary(model, intent, stable_backends, b))
            .map(|(_, s)| s)
            .sum()
    };
    let stable_of = |shares: &mut dyn Iterator<Item = (&Backend, f64)>| -> f64 {
        shares
            .filter(|(b, _)| {
                stable_backends.contains(b) && !is_canary(model, intent, stable_backends, b)
            })
            .map(|(_, s)| s)
            .sum()
    };
    let (want_canary, got_canary) = (canary_of(&mut want()), canary_of(&mut got()));
    if (want_canary - got_canary).abs() > tolerance
        || (want_canary > 0.0) != (got_canary > 0.0)
        || (stable_of(&mut want()) - stable_of(&mut got())).abs() > tolerance
    {
        return false;
    }
    // Backends that are neither stable nor canary keep their share.
    fn others<'b>(
        shares: impl Iterator<Item = (&'b Backend, f64)>,
        other: impl Fn(&Backend) -> bool,
    ) -> BTreeMap<&'b Backend, f64> {
        shares.filter(|(b, _)| other(b)).collect()
    }
    let other = |b: &Backend| {
        !stable_backends.contains(&b) && !is_canary(model, intent, stable_backends, b)
    };
    // Most splits have no such backend: nothing to collect then.
    if !want().any(|(b, _)| other(b)) && !got().any(|(b, _)| other(b)) {
        return missing_header_changes(model, intent, original, stable_backends, now).is_none();
    }
    let (want, got) = (others(want(), other), others(got(), other));
    if want.len() != got.len()
        || want
            .iter()
            .any(|(b, s)| got.get(b).is_none_or(|t| (s - t).abs() > tolerance))
    {
        return false;
    }
    missing_header_changes(model, intent, original, stable_backends, now).is_none()
}

/// Whether canary-bound requests carry the step's header modifier and stable-bound ones keep
/// their original header operations; `Some(what is wrong)` when not.
fn missing_header_changes(
    model: &dyn RoutingModel,
    intent: &Intent,
    original: &Distribution,
    stable_backends: &[&Backend],
    now: &Distribution,
) -> Option<String> {
    let mut wanted: BTreeMap<String, Option<String>> = BTreeMap::new();
    if let Some(modifier) = &intent.header_modifier {
        for (name, value) in modifier
            .set
            .iter()
            .flatten()
            .chain(modifier.add.iter().flatten())
        {
            wanted.insert(name.to_ascii_lowercase(), Some(value.clone()));
        }
        for name in modifier.remove.iter().flatten() {
            wanted.insert(name.to_ascii_lowercase(), None);
        }
    }
    let empty = BTreeMap::new();
    for (backend, share) in &now.shares {
        if *share <= 0.0 {
            continue;
        }
        let changes = now.header_changes.get(backend).unwrap_or(&empty);
        if is_canary(model, intent, stable_backends, backend) {
            let missing: Vec<String> = wanted
                .iter()
                .filter(|(name, value)| changes.get(*name) != Some(*value))
                .map(|(name, value)| match value {
                    Some(value) => format!("{name}: {value}"),
                    None => format!("remove {name}"),
                })
                .collect();
            if !missing.is_empty() {
                return Some(format!(
                    "{} lacks the header changes {}",
                    backend.describe(),
                    missing.join(", ")
                ));
            }
        } else if stable_backends.contains(&backend) {
            let before = original.header_changes.get(backend).unwrap_or(&empty);
            if changes != before {
                return Some(format!(
                    "stable-bound {} has header changes the step does not ask for",
                    backend.describe()
                ));
            }
        }
    }
    None
}
