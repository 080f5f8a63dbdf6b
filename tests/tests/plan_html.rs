//! The HTML plan opened in headless Chromium (Debian's `chromium`): a screenshot is taken, the
//! rendered page has a traffic chart for every step that has a traffic table, the page logs
//! nothing to the console and requests nothing from the network.
//!
//! Chromium runs with its background networking off and every host name mapped to nothing and
//! every connection sent to a closed local port, so nothing leaves the machine even if the
//! page asked. The net log it writes tells the page's requests (initiated by the page's
//! origin) from the browser's own (initiator "not an origin").

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{run, scratch};

const CHROMIUM: &str = "/usr/bin/chromium";

/// Runs headless Chromium on `page` with `extra` arguments, offline.
fn chromium(profile: &Path, page: &Path, extra: &[&str]) -> Output {
    assert!(
        Path::new(CHROMIUM).exists(),
        "this test needs Debian's chromium package (apt-get install chromium)"
    );
    let url = format!("file://{}", page.display());
    Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-default-apps",
            "--disable-domain-reliability",
            "--no-pings",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("run chromium")
}

/// The URLs of requests the page itself started (not the browser's own), from a net log.
fn page_requests(net_log: &Path) -> Vec<String> {
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(net_log).unwrap()).unwrap();
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].clone();
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["type"] == start_job)
        .filter(|event| event["params"]["initiator"] != "not an origin")
        .filter_map(|event| event["params"]["url"].as_str().map(str::to_owned))
        .collect()
}

fn write_plan(dir: &Path) -> std::path::PathBuf {
    let result = run(&[
        "plan",
        "--tree",
        "../../lua_configuration",
        "--rollout",
        "plan/rollout-istio.yaml",
        "--resource",
        "plan/istio.yaml",
        "--format",
        "html",
    ]);
    assert_eq!(result.code, 0, "{result:?}");
    let page = dir.join("plan.html");
    std::fs::write(&page, &result.stdout).unwrap();
    page
}

#[test]
fn the_html_plan_renders_offline_with_a_chart_per_step() {
    let dir = scratch("plan-html");
    let page = write_plan(&dir);

    let screenshot = dir.join("plan.png");
    let net_log = dir.join("netlog.json");
    let shot = chromium(
        &dir.join("profile-shot"),
        &page,
        &[
            &format!("--screenshot={}", screenshot.display()),
            "--window-size=1280,2400",
            &format!("--log-net-log={}", net_log.display()),
        ],
    );
    assert!(shot.status.success(), "{shot:?}");
    let png = std::fs::read(&screenshot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    assert!(
        png.len() > 10_000,
        "a blank screenshot? {} bytes",
        png.len()
    );
    let stderr = String::from_utf8_lossy(&shot.stderr);
    assert!(!stderr.contains(":CONSOLE"), "console output: {stderr}");
    assert_eq!(page_requests(&net_log), Vec::<String>::new());

    let dumped = chromium(&dir.join("profile-dom"), &page, &["--dump-dom"]);
    assert!(dumped.status.success(), "{dumped:?}");
    let stderr = String::from_utf8_lossy(&dumped.stderr);
    assert!(!stderr.contains(":CONSOLE"), "console output: {stderr}");
    let dom = String::from_utf8(dumped.stdout).unwrap();
    // Every stage with a traffic table has its chart, one bar row per request class.
    let sections: Vec<&str> = dom.split("<section").skip(1).collect();
    assert_eq!(sections.len(), 12, "{dom}");
    let tables: Vec<&&str> = sections
        .iter()
        .filter(|s| s.contains("data-traffic=\"table\""))
        .collect();
    assert_eq!(tables.len(), 3, "VirtualService steps 1, 2 and 4: {dom}");
    for section in tables {
        assert_eq!(
            section.matches("<svg class=\"chart\"").count(),
            1,
            "{section}"
        );
        assert!(section.contains("<rect"), "{section}");
    }
    assert!(dom.contains("data-stage=\"step 3\" data-traffic=\"nothing_asked\""));
}

/// The checks above can fail: a page that logs and fetches is caught.
#[test]
fn a_page_that_logs_or_fetches_is_caught() {
    let dir = scratch("plan-html-bad");
    let page = dir.join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><img src=\"http://example.invalid/x.png\"><script>console.error('boom')</script></body></html>",
    )
    .unwrap();
    let net_log = dir.join("netlog.json");
    let shot = chromium(
        &dir.join("profile"),
        &page,
        &[
            &format!("--screenshot={}", dir.join("bad.png").display()),
            &format!("--log-net-log={}", net_log.display()),
        ],
    );
    assert!(String::from_utf8_lossy(&shot.stderr).contains(":CONSOLE"));
    assert_eq!(page_requests(&net_log), ["http://example.invalid/x.png"]);
}
