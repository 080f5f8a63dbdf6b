//! Tests of the editor's case runs: the scheduler's lanes, reuse of unchanged cases, cancellation.

/// `runAll` waits for the run that is current: a request that superseded the one it made
/// (the startup run, a change on disk) is waited for too, not only the superseded one.
#[tokio::test]
async fn settled_waits_for_the_newest_request() {
    let scheduler = Arc::new(Scheduler::default());
    let id = ScriptId::File(PathBuf::from("/w/x/Route/trafficRouting.lua"));
    scheduler.settled(&id).await; // never requested: nothing to wait for
    let waiter = |scheduler: &Arc<Scheduler>| {
        let (scheduler, id) = (scheduler.clone(), id.clone());
        tokio::spawn(async move { scheduler.settled(&id).await })
    };
    let first = scheduler.request(&id);
    let second = scheduler.request(&id);
    let waiting = waiter(&scheduler);
    drop(first); // superseded: its end marks nothing
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(
        !waiting.is_finished(),
        "settled before the newest run ended"
    );
    drop(second);
    waiting.await.unwrap();
    let third = scheduler.request(&id);
    let waiting = waiter(&scheduler);
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!waiting.is_finished(), "a new request is waited for");
    drop(third);
    waiting.await.unwrap();
}
use std::sync::atomic::Ordering;

use super::*;
use crate::lsp::project::lua_target;
use crate::lsp::run_lanes::{RunSlots, Scheduler};
use kruise_lua_engine::steps::StepStatus;

pub(crate) const SCRIPT: &str =
    "local spec = obj.data.spec\nspec.weight = obj.canaryWeight\nreturn obj.data\n";
pub(crate) const CASE: &str = "rollout:\n  spec:\n    strategy:\n      canary:\n        trafficRoutings:\n        - service: web\n        steps:\n        - traffic: \"20%\"\n        - traffic: \"50%\"\noriginal:\n  apiVersion: x/v1\n  kind: Route\n  metadata:\n    name: r\n  spec:\n    weight: 0\nexpected:\n- apiVersion: x/v1\n  kind: Route\n  metadata:\n    name: r\n  spec:\n    weight: 20\n- apiVersion: x/v1\n  kind: Route\n  metadata:\n    name: r\n  spec:\n    weight: 60\n";

fn input(script: &str, case: &str) -> RunInput {
    RunInput {
        target: lua_target(std::path::Path::new("/t/x/Route/trafficRouting.lua")),
        source: script.into(),
        host_text: script.into(),
        embedded: None,
        cases_error: None,
        script_error: None,
        cases: vec![(PathBuf::from("/t/x/Route/testdata/c.yaml"), case.into())],
    }
}

#[test]
fn runs_steps_and_reports_failures() {
    let results = execute(
        input(SCRIPT, CASE),
        None,
        Mode::Harness,
        &RunOptions::default(),
        &|| false,
    )
    .unwrap();
    let case = &results.cases[0];
    assert_eq!(case.steps.len(), 2);
    assert_eq!(case.steps[0].status, StepStatus::Pass);
    assert_eq!(case.steps[1].status, StepStatus::Fail);
    assert_eq!(case.failing_steps(), vec![2]);
    assert_eq!(results.passed_count(), 0);
}

/// A script over the editor's size limit is not run: its cases say so, rather than passing
/// with no steps while `check` (which runs it) fails them.
#[test]
fn cases_of_a_script_too_large_to_run_say_so_and_do_not_pass() {
    let padding = format!("--{}\n", "x".repeat(1000)).repeat(MAX_ANALYSED_BYTES / 1000 + 1);
    let script = format!("{SCRIPT}{padding}");
    let results = execute(
        input(&script, CASE),
        None,
        Mode::Harness,
        &RunOptions::default(),
        &|| false,
    )
    .unwrap();
    let case = &results.cases[0];
    let error = case.case.as_ref().expect_err("a case of an unrun script");
    assert!(
        error.message.starts_with("not run: the script has"),
        "{}",
        error.message
    );
    assert!(case.steps.is_empty());
    assert_eq!(results.passed_count(), 0);
}

#[test]
fn unchanged_cases_are_reused_and_cancel_stops() {
    let first = execute(
        input(SCRIPT, CASE),
        None,
        Mode::Harness,
        &RunOptions::default(),
        &|| false,
    )
    .unwrap();
    // Reused: a cancelled check after reuse still yields nothing to run.
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let again = execute(
        input(SCRIPT, CASE),
        Some(&first),
        Mode::Harness,
        &RunOptions::default(),
        &|| {
            calls.fetch_add(1, Ordering::SeqCst);
            false
        },
    )
    .unwrap();
    assert_eq!(again.cases[0].steps, first.cases[0].steps);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "no step ran again");
    assert!(
        execute(
            input(SCRIPT, CASE),
            None,
            Mode::Harness,
            &RunOptions::default(),
            &|| true
        )
        .is_none()
    );
}

#[test]
fn cases_on_disk_are_read_once_and_huge_ones_never() {
    let dir = std::env::temp_dir().join(format!("kl-gather-{}", std::process::id()));
    let kind = dir.join("example.io/Route");
    std::fs::create_dir_all(kind.join("testdata")).unwrap();
    std::fs::write(kind.join("trafficRouting.lua"), SCRIPT).unwrap();
    std::fs::write(kind.join("testdata/a.yaml"), CASE).unwrap();
    // Sparse: 200 MB on paper, nothing on disk.
    let huge = std::fs::File::create(kind.join("testdata/huge.yaml")).unwrap();
    huge.set_len(200_000_000).unwrap();
    let docs = Documents::default();
    let target = lua_target(&kind.join("trafficRouting.lua"));
    let run = |previous: Option<&ScriptResults>| {
        let input = gather(&target, &docs, previous).unwrap();
        execute(
            input,
            previous,
            Mode::Harness,
            &RunOptions::default(),
            &|| false,
        )
        .unwrap()
    };
    let first = run(None);
    let huge_result = first
        .cases
        .iter()
        .find(|c| c.path.ends_with("huge.yaml"))
        .unwrap();
    assert!(huge_result.text.is_empty(), "the huge case is not held");
    let message = &huge_result.case.as_ref().unwrap_err().message;
    assert!(
        message.contains("too large") && message.contains("200000000"),
        "{message}"
    );
    // A file whose stamp did not change is not read again: the text known from the last
    // run is used (here doctored, to tell the two apart).
    let mut known = first.clone();
    let a = known
        .cases
        .iter_mut()
        .find(|c| c.path.ends_with("a.yaml"))
        .unwrap();
    a.text = format!("{CASE}# known\n");
    let input = gather(&target, &docs, Some(&known)).unwrap();
    let (_, a) = input
        .cases
        .iter()
        .find(|(p, _)| p.ends_with("a.yaml"))
        .unwrap();
    assert!(a.text.as_ref().unwrap().ends_with("# known\n"));
    // Once it changes on disk, it is read.
    std::fs::write(
        kind.join("testdata/a.yaml"),
        format!("{CASE}# edited, longer\n"),
    )
    .unwrap();
    let input = gather(&target, &docs, Some(&known)).unwrap();
    let (_, a) = input
        .cases
        .iter()
        .find(|(p, _)| p.ends_with("a.yaml"))
        .unwrap();
    assert!(a.text.as_ref().unwrap().ends_with("# edited, longer\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `run_all` (a cold start's run of the workspace) skips what was asked for while it walked
/// the workspace: asking again would cancel the opened file's run, already under way.
#[test]
fn requests_since_a_moment_are_told_apart() {
    let scheduler = Scheduler::default();
    let opened = ScriptId::File("/opened.lua".into());
    let other = ScriptId::File("/other.lua".into());
    let _earlier = scheduler.request(&other);
    let before = scheduler.requests_now();
    assert!(!scheduler.requested_since(&opened, &before));
    let _run = scheduler.request(&opened);
    assert!(scheduler.requested_since(&opened, &before));
    assert!(!scheduler.requested_since(&other, &before));
}

#[test]
fn isolated_requests_run_at_once_and_bursts_wait() {
    let scheduler = Scheduler::default();
    let id = ScriptId::File("/a.lua".into());
    let debounce = std::time::Duration::from_secs(60);
    assert!(scheduler.delay_for(&id, debounce).is_zero());
    assert_eq!(scheduler.delay_for(&id, debounce), debounce);
    assert!(
        scheduler
            .delay_for(&id, std::time::Duration::ZERO)
            .is_zero()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_runs_leave_a_slot_for_foreground_ones() {
    let slots = RunSlots::new(2);
    let first = slots.acquire(false).await;
    // A second background run waits, a foreground one does not.
    let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), slots.acquire(false));
    assert!(waiting.await.is_err(), "background lane is full");
    let foreground =
        tokio::time::timeout(std::time::Duration::from_secs(5), slots.acquire(true)).await;
    assert!(foreground.is_ok());
    drop(foreground);
    drop(first);
    let again = tokio::time::timeout(std::time::Duration::from_secs(5), slots.acquire(false));
    assert!(again.await.is_ok());
}

/// A cold start: the file the user opened runs alone, the workspace's runs wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_runs_wait_while_a_foreground_run_is_under_way() {
    let slots = Arc::new(RunSlots::new(4));
    let foreground = slots.acquire(true).await;
    let waiting = tokio::spawn({
        let slots = slots.clone();
        async move { slots.acquire(false).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(
        !waiting.is_finished(),
        "a background run started beside a foreground one"
    );
    // A second foreground run does not wait.
    let second = tokio::time::timeout(std::time::Duration::from_secs(5), slots.acquire(true));
    let second = second
        .await
        .expect("a second foreground run starts at once");
    drop(foreground);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "it waits for every foreground run");
    drop(second);
    let started = tokio::time::timeout(std::time::Duration::from_secs(5), waiting).await;
    assert!(
        started.is_ok(),
        "the background run starts once the foreground ones ended"
    );
}

#[test]
fn schema_findings_follow_the_schemas_given_and_api_versions_come_from_original() {
    let crd = |maximum: u32| {
        crate::project::crd_sources::test_crd(
            "x",
            "Route",
            &format!("{{weight: {{type: integer, maximum: {maximum}}}}}"),
        )
    };
    let set = |maximum: u32| {
        let mut set = SchemaSet::new();
        set.add_text("route.yaml", &crd(maximum)).unwrap();
        Some(Arc::new(set))
    };
    let mut results = execute(
        input(SCRIPT, CASE),
        None,
        Mode::Harness,
        &RunOptions::default(),
        &|| false,
    )
    .unwrap();
    assert_eq!(results.api_versions(), vec!["x/v1".to_string()]);
    assert!(results.cases[0].schema.is_empty(), "not validated yet");
    results.validate_schemas(set(100), &[]);
    assert!(results.cases[0].schema.is_empty());
    // A stricter CRD (the file changed): the same outcomes are validated again.
    results.validate_schemas(set(10), &[]);
    let steps: Vec<usize> = results.cases[0].schema.iter().map(|f| f.step).collect();
    assert!(steps.contains(&0) && steps.contains(&1), "{steps:?}");
    assert!(results.schemas.is_some());
    results.validate_schemas(None, &[]);
    assert!(results.cases[0].schema.is_empty() && results.schemas.is_none());
}

#[test]
fn newer_requests_supersede() {
    let scheduler = Scheduler::default();
    let id = ScriptId::File("/a.lua".into());
    let first = scheduler.request(&id);
    assert!(!first.superseded());
    let second = scheduler.request(&id);
    assert!(first.superseded());
    assert!(!second.superseded());
    assert!(Arc::ptr_eq(&first.lock(), &second.lock()));
}

/// Files on disk are read as `check` reads them: a case file that is not UTF-8 is a case
/// error saying so (on the bad byte's line), and a script file that is not UTF-8 runs none of
/// its cases and carries `check`'s "fail to read script" (defect: both passed in the editor,
/// read as a repaired copy).
#[test]
fn files_that_are_not_utf8_are_refused_as_check_refuses_them() {
    let dir = crate::test_scratch::folder("kruise-lua-lsp-runs", "not-utf8");
    let kind = dir.join("example.io/Route");
    std::fs::create_dir_all(kind.join("testdata")).unwrap();
    std::fs::write(kind.join("trafficRouting.lua"), SCRIPT).unwrap();
    let mut bad_case = b"# ok\n# caf\xe9\n".to_vec();
    bad_case.extend_from_slice(CASE.as_bytes());
    std::fs::write(kind.join("testdata/bad.yaml"), &bad_case).unwrap();
    std::fs::write(kind.join("testdata/good.yaml"), CASE).unwrap();
    let docs = Documents::default();
    let target = lua_target(&kind.join("trafficRouting.lua"));
    let run = || {
        let input = gather(&target, &docs, None).unwrap();
        execute(input, None, Mode::Harness, &RunOptions::default(), &|| {
            false
        })
        .unwrap()
    };
    let results = run();
    assert!(results.script_error.is_none());
    let bad = results
        .cases
        .iter()
        .find(|c| c.path.ends_with("bad.yaml"))
        .unwrap();
    let error = bad.case.as_ref().unwrap_err();
    assert_eq!(
        error.message,
        "byte 6 is not valid UTF-8 (kruise-lua reads UTF-8 text only)"
    );
    let at = error.span.unwrap().start;
    assert_eq!((at.line, at.offset), (2, "# ok\n".len()));
    assert!(!bad.passed());

    let mut bad_script = b"-- caf\xe9\n".to_vec();
    bad_script.extend_from_slice(SCRIPT.as_bytes());
    std::fs::write(kind.join("trafficRouting.lua"), &bad_script).unwrap();
    std::fs::remove_file(kind.join("testdata/bad.yaml")).unwrap();
    let results = run();
    let error = results
        .script_error
        .as_ref()
        .expect("the script is refused");
    assert_eq!(error.line, 1);
    assert!(
        error.message.starts_with("fail to read script ")
            && error
                .message
                .ends_with("line 1: byte 7 is not valid UTF-8 (kruise-lua reads UTF-8 text only)"),
        "{}",
        error.message
    );
    assert_eq!(results.passed_count(), 0, "no case of it passes");
    assert!(results.cases[0].steps.is_empty(), "nothing of it ran");
}
