//! JUnit XML report: `<testsuites>` → a `<testsuite>` per script → a `<testcase>` per step
//! (named `<case> step <i>`), or per case for case-level errors. Failures carry the differing
//! paths and the unified diff; steps whose result depends on key order (`--shuffle`) are
//! failures of type `nondeterministic`, and steps the intent check finds misrouting failures of
//! type `misrouted`. Warnings go to the testcase's `<system-err>` (so CI
//! shows them, and `--deny-warnings` failures are explained), prints to its `<system-out>`.
//! A CRD source that could not be used is an `<error type="crd-not-loaded">` testcase of a
//! first testsuite, `CRDs`; a step not checked against a CRD schema (no CRD for its kind) says
//! so in its `<system-err>`, as a step the intent check could not verify does.
//! Written with quick-xml so every value is escaped.

use std::borrow::Cow;
use std::io::{self, Write};

use kruise_lua_engine::steps::{StepOutcome, StepStatus};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use super::describe::{
    CaseReport, Report, ScriptReport, Summary, canonical_texts, case_error_location, describe_diff,
    diff_location, step_error_location, step_number,
};
use crate::project::paths;
use crate::project::verdict::Note;

pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut writer = Writer::new_with_indent(out, b' ', 2);
    writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let summary = Summary::of(report);
    let suites = BytesStart::new("testsuites").with_attributes([
        ("name", "kruise-lua"),
        ("tests", &tests(&summary).to_string()),
        ("failures", &failures(&summary).to_string()),
        ("errors", &(summary.errors + summary.crd_errors).to_string()),
        ("skipped", &summary.skipped_steps.to_string()),
    ]);
    writer.write_event(Event::Start(suites))?;
    write_crd_suite(&mut writer, &report.crd_errors)?;
    for script in &report.scripts {
        write_suite(&mut writer, script)?;
    }
    writer.write_event(Event::End(BytesEnd::new("testsuites")))?;
    writer.into_inner().write_all(b"\n")
}

/// Every step is a testcase, and so is every CRD source that could not be used.
fn tests(summary: &Summary) -> usize {
    summary.passed + summary.skipped_steps + failures(summary) + summary.errors + summary.crd_errors
}

/// The CRD sources that could not be used: a testsuite `CRDs` with an erroring testcase per
/// source (none when every CRD loaded).
fn write_crd_suite<W: Write>(writer: &mut Writer<W>, crd_errors: &[Note]) -> io::Result<()> {
    if crd_errors.is_empty() {
        return Ok(());
    }
    let count = crd_errors.len().to_string();
    let suite = BytesStart::new("testsuite").with_attributes([
        ("name", "CRDs"),
        ("tests", count.as_str()),
        ("failures", "0"),
        ("errors", count.as_str()),
        ("skipped", "0"),
    ]);
    writer.write_event(Event::Start(suite))?;
    for error in crd_errors {
        let element = Element {
            tag: "error",
            kind: "crd-not-loaded",
            message: first_line(&error.message),
            body: format!("{}: error: {}", error.location, error.message),
        };
        write_testcase(
            writer,
            &error.location.to_string(),
            "CRDs",
            &error.location.file,
            &[element],
            &[],
            &[],
        )?;
    }
    writer.write_event(Event::End(BytesEnd::new("testsuite")))
}

/// Steps reported as failures: those whose result differs, schema-invalid ones, and those that
/// got their expected result but misroute or depend on key order.
fn failures(summary: &Summary) -> usize {
    summary.failed + summary.invalid + summary.expected_but_failing
}

fn write_suite<W: Write>(writer: &mut Writer<W>, script: &ScriptReport) -> io::Result<()> {
    let single = std::slice::from_ref(script);
    let summary = Summary::of_scripts(single);
    let name = script.id();
    let suite = BytesStart::new("testsuite").with_attributes([
        ("name", clean(&name).as_ref()),
        ("tests", &tests(&summary).to_string()),
        ("failures", &failures(&summary).to_string()),
        ("errors", &summary.errors.to_string()),
        (
            "skipped",
            &(summary.skipped_steps + usize::from(script.skipped.is_some())).to_string(),
        ),
    ]);
    writer.write_event(Event::Start(suite))?;
    if let Some(reason) = &script.skipped {
        let testcase = BytesStart::new("testcase").with_attributes([
            ("name", clean(&name).as_ref()),
            ("classname", clean(&name).as_ref()),
        ]);
        writer.write_event(Event::Start(testcase))?;
        let skipped =
            BytesStart::new("skipped").with_attributes([("message", clean(reason).as_ref())]);
        writer.write_event(Event::Empty(skipped))?;
        writer.write_event(Event::End(BytesEnd::new("testcase")))?;
    }
    for case in &script.cases {
        write_case(writer, script, case)?;
    }
    writer.write_event(Event::End(BytesEnd::new("testsuite")))
}

fn write_case<W: Write>(
    writer: &mut Writer<W>,
    script: &ScriptReport,
    case: &CaseReport,
) -> io::Result<()> {
    let short = paths::relative(&case.path, &script.case_base).to_string();
    let classname = script.id();
    let warnings: Vec<String> = case
        .outcome
        .warnings
        .iter()
        .map(|warning| {
            format!(
                "{}: warning: {}",
                super::describe::case_warning_location(case, warning),
                warning.message
            )
        })
        .collect();
    if let Some(error) = &case.outcome.case_error {
        let location = case_error_location(case, error);
        let body = format!("{location}: {}", error.message);
        let element = Element {
            tag: "error",
            kind: "case",
            message: first_line(&error.message),
            body,
        };
        return write_testcase(
            writer,
            &short,
            &classname,
            &case.path,
            &[element],
            &[],
            &warnings,
        );
    }
    for (position, step) in case.outcome.steps.iter().enumerate() {
        let mut elements = Vec::new();
        match step.status {
            StepStatus::Pass => {
                if let Some(reason) = super::describe::skip_reason(step) {
                    elements.push(Element {
                        tag: "skipped",
                        kind: "controller",
                        message: reason.to_string(),
                        body: String::new(),
                    });
                }
            }
            StepStatus::Fail => elements.push(failure(case, step)),
            StepStatus::Error => {
                let location = step_error_location(script, case, step);
                let (kind, message) = match &step.error {
                    Some(error) => (
                        error.kind.as_str(),
                        super::describe::error_message(script, error),
                    ),
                    None => ("error", String::new()),
                };
                elements.push(Element {
                    tag: "error",
                    kind,
                    message: first_line(&message),
                    body: format!("{location}: {kind} error: {message}"),
                });
            }
        }
        if let Some(finding) = case.order_finding(step.index) {
            let message = finding.message();
            elements.push(Element {
                tag: "failure",
                kind: "nondeterministic",
                message: first_line(&message),
                body: message,
            });
        }
        if let Some(finding) = case.intent_finding(step.index) {
            let message = finding.message(script.place());
            elements.push(Element {
                tag: "failure",
                kind: "misrouted",
                message: first_line(&message),
                body: finding.lines(script.place()).join("\n"),
            });
        }
        let schema_errors: Vec<String> = case
            .schema_errors(step.index)
            .map(|found| format!("{}: {}", found.location, found.message()))
            .collect();
        if let Some(first) = case.schema_errors(step.index).next() {
            elements.push(Element {
                tag: "failure",
                kind: "invalid",
                message: first_line(&format!(
                    "the API server would reject it: {}",
                    first.message()
                )),
                body: schema_errors.join("\n"),
            });
        }
        let mut step_warnings = if position == 0 {
            warnings.clone()
        } else {
            Vec::new()
        };
        step_warnings.extend(
            super::describe::step_warnings(script, step)
                .iter()
                .map(|warning| format!("warning: {warning}")),
        );
        step_warnings.extend(
            case.schema_warnings(step.index)
                .map(|found| format!("{}: warning: {}", found.location, found.message())),
        );
        // Not a failure, but CI must see that the step's routing was not verified.
        step_warnings.extend(
            case.step_notes(step.index)
                .into_iter()
                .map(|note| format!("note: {}", note.message)),
        );
        let prints: Vec<String> = step
            .prints
            .iter()
            .map(|print| format!("print: {print}"))
            .collect();
        let name = format!("{short} step {}", step_number(step.index));
        write_testcase(
            writer,
            &name,
            &classname,
            &case.path,
            &elements,
            &prints,
            &step_warnings,
        )?;
    }
    Ok(())
}

/// A `<failure>` or `<error>` child of a testcase.
struct Element {
    tag: &'static str,
    kind: &'static str,
    message: String,
    body: String,
}

fn failure(case: &CaseReport, step: &StepOutcome) -> Element {
    let mut body = String::new();
    for diff in &step.diff {
        body.push_str(&format!(
            "{}: {}\n",
            diff_location(case, step, diff),
            describe_diff(diff)
        ));
    }
    if step.diff.is_empty() {
        body.push_str(&canonical_texts(step));
        body.push('\n');
    }
    body.push_str(&step.unified_diff);
    let message = match step.diff.first() {
        Some(diff) if step.diff.len() == 1 => describe_diff(diff),
        Some(diff) => format!(
            "{} (and {} more differences)",
            describe_diff(diff),
            step.diff.len() - 1
        ),
        None => "result differs from expected".to_string(),
    };
    Element {
        tag: "failure",
        kind: "fail",
        message: first_line(&message),
        body,
    }
}

fn write_testcase<W: Write>(
    writer: &mut Writer<W>,
    name: &str,
    classname: &str,
    file: &str,
    elements: &[Element],
    output: &[String],
    warnings: &[String],
) -> io::Result<()> {
    let testcase = BytesStart::new("testcase").with_attributes([
        ("name", clean(name).as_ref()),
        ("classname", clean(classname).as_ref()),
        ("file", clean(file).as_ref()),
    ]);
    if elements.is_empty() && output.is_empty() && warnings.is_empty() {
        return writer.write_event(Event::Empty(testcase));
    }
    writer.write_event(Event::Start(testcase))?;
    for element in elements {
        let start = BytesStart::new(element.tag).with_attributes([
            ("message", clean(&element.message).as_ref()),
            ("type", element.kind),
        ]);
        writer.write_event(Event::Start(start))?;
        writer.write_event(Event::Text(BytesText::new(&clean(&element.body))))?;
        writer.write_event(Event::End(BytesEnd::new(element.tag)))?;
    }
    if !output.is_empty() {
        writer.write_event(Event::Start(BytesStart::new("system-out")))?;
        writer.write_event(Event::Text(BytesText::new(&clean(&output.join("\n")))))?;
        writer.write_event(Event::End(BytesEnd::new("system-out")))?;
    }
    if !warnings.is_empty() {
        writer.write_event(Event::Start(BytesStart::new("system-err")))?;
        writer.write_event(Event::Text(BytesText::new(&clean(&warnings.join("\n")))))?;
        writer.write_event(Event::End(BytesEnd::new("system-err")))?;
    }
    writer.write_event(Event::End(BytesEnd::new("testcase")))
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").to_string()
}

/// Replaces characters XML 1.0 cannot carry even escaped (most C0 controls, U+FFFE/FFFF)
/// with a visible `\u{…}` form; quick-xml escapes the rest.
fn clean(text: &str) -> Cow<'_, str> {
    let allowed = |c: char| {
        matches!(c, '\t' | '\n' | '\r')
            || ('\u{20}'..='\u{D7FF}').contains(&c)
            || ('\u{E000}'..='\u{FFFD}').contains(&c)
            || c >= '\u{10000}'
    };
    if text.chars().all(allowed) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if allowed(c) {
                    c.to_string()
                } else {
                    format!("\\u{{{:x}}}", c as u32)
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::fixtures;
    use super::*;
    use quick_xml::Reader;

    fn render(report: &Report) -> String {
        let mut out = Vec::new();
        write(report, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Parses the whole document, returning (element name, attributes) of every start tag
    /// and all text, unescaped.
    /// An element's name and attributes.
    type Element = (String, Vec<(String, String)>);

    fn parse(xml: &str) -> (Vec<Element>, String) {
        let mut reader = Reader::from_str(xml);
        let mut elements = Vec::new();
        let mut text = String::new();
        let mut depth = 0i32;
        loop {
            match reader.read_event().expect("well-formed XML") {
                Event::Start(start) | Event::Empty(start) => {
                    let name = start.name().as_ref().to_string();
                    let attrs = start
                        .attributes()
                        .map(|attr| {
                            let attr = attr.unwrap();
                            let key = attr.key.as_ref().to_string();
                            (
                                key,
                                attr.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                    .unwrap()
                                    .into_owned(),
                            )
                        })
                        .collect();
                    elements.push((name, attrs));
                    depth += 1;
                }
                Event::Text(t) => text.push_str(&t.xml10_content()),
                Event::GeneralRef(r) => {
                    if let Some(c) = r.resolve_char_ref().unwrap() {
                        text.push(c);
                        continue;
                    }
                    let name = r.as_ref().to_string();
                    text.push_str(match name.as_str() {
                        "lt" => "<",
                        "gt" => ">",
                        "amp" => "&",
                        "quot" => "\"",
                        "apos" => "'",
                        _ => "?",
                    });
                }
                Event::Eof => break,
                _ => {}
            }
        }
        assert!(depth > 0);
        (elements, text)
    }

    #[test]
    fn report_is_well_formed_and_counts_match() {
        let xml = render(&fixtures::report());
        let (elements, text) = parse(&xml);
        let suites = &elements
            .iter()
            .find(|(name, _)| name == "testsuites")
            .unwrap()
            .1;
        let attr = |attrs: &Vec<(String, String)>, key: &str| {
            attrs
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(attr(suites, "tests"), "6");
        assert_eq!(attr(suites, "failures"), "1");
        assert_eq!(attr(suites, "errors"), "3");
        let testcases: Vec<String> = elements
            .iter()
            .filter(|(name, _)| name == "testcase")
            .map(|(_, attrs)| attr(attrs, "name"))
            .collect();
        assert_eq!(
            testcases,
            [
                "testdata/pass.yaml step 1",
                "testdata/fail.yaml step 1",
                "testdata/fail.yaml step 2",
                "testdata/error.yaml step 1",
                "testdata/error.yaml step 2",
                "testdata/broken.yaml"
            ]
        );
        let failure = elements.iter().find(|(name, _)| name == "failure").unwrap();
        assert_eq!(
            attr(&failure.1, "message"),
            "spec.weight: expected 20, actual 30 (and 1 more differences)"
        );
        // Escaped on the way out, intact on the way back in.
        assert!(text.contains("+  host: a<&>\"b"), "{text}");
        assert!(!xml.contains("a<&>"), "raw markup must be escaped");
    }

    #[test]
    fn control_characters_are_made_visible() {
        assert_eq!(clean("a\u{1}b\u{fffe}"), "a\\u{1}b\\u{fffe}");
        assert_eq!(clean("tab\tok"), "tab\tok");
    }
}
