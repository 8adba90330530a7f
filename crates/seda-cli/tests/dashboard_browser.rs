//! The live dashboard in a real browser (headless Chromium over WebDriver): it loads without a
//! console error, shows every stage of the e-mail service, its numbers move under load, and
//! when one stage becomes the bottleneck mid-run the page marks it. Saves a screenshot as
//! `target/dashboard-browser.png`.
//!
//! Skipped, with the reason printed, where `chromium` or `chromedriver` is missing (Debian's
//! `chromium` and `chromium-driver`, which `.ci/run` installs); a failure where
//! `SEDA_REQUIRE_PEERS=1`, as in CI.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use seda_lab::peers;
use serde_json::{Value, json};

/// How soon the page must mark the stage that became the bottleneck (issue 18).
const MARK_WITHIN: Duration = Duration::from_secs(5);
/// The stage cards the page marks as where backpressure starts.
const MARKED: &str = "#stages .stage.bottleneck";

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

fn get_json(addr: &str, path: &str) -> Value {
    let r = common::get(addr, path);
    serde_json::from_str(r.split("\r\n\r\n").nth(1).unwrap_or_default()).expect("JSON")
}

/// chromedriver's log endpoint (not in the W3C protocol, so not in fantoccini's API).
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.into()))
    }
}

/// Console messages at level SEVERE since the last call.
async fn console_errors(c: &Client) -> Vec<String> {
    let log = c.issue_cmd(BrowserLog).await.expect("browser log");
    log.as_array()
        .map(|entries| {
            entries
                .iter()
                .filter(|e| e["level"] == "SEVERE")
                .map(|e| e["message"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

async fn text_of(c: &Client, css: &str) -> String {
    match c.find(Locator::Css(css)).await {
        Ok(e) => e.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// `seda load --workload mail` against `addr` as a child process: `users` closed users over
/// the corpus's 20 accounts, `think_ms` between requests, only `only`'s request type if given.
fn mail_load(addr: &str, users: u32, think_ms: u32, only: Option<&str>) -> Killed {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_seda"));
    let url = format!("http://{addr}/");
    let think = format!("{think_ms}ms");
    let users = users.to_string();
    cmd.args([
        "load",
        &url,
        "--workload",
        "mail",
        "--mail-users",
        "20",
        "-c",
        &users,
        "--think",
        &think,
        "--duration",
        "600s",
    ]);
    if let Some(kind) = only {
        cmd.args(["--mail-only", kind]);
    }
    Killed(
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("seda load"),
    )
}

/// The names (`data-stage`) of the stage cards `css` selects on the page.
async fn stage_cards(c: &Client, css: &str) -> Vec<String> {
    let mut names = Vec::new();
    for e in c.find_all(Locator::Css(css)).await.unwrap_or_default() {
        if let Ok(Some(name)) = e.attr("data-stage").await {
            names.push(name);
        }
    }
    names
}

#[tokio::test(flavor = "current_thread")]
async fn the_dashboard_shows_the_mail_service_live_and_marks_its_bottleneck() {
    let (Some(chromium), Some(driver)) = (peers::CHROMIUM.find(), peers::CHROMEDRIVER.find())
    else {
        let peer = match peers::CHROMIUM.find() {
            None => &peers::CHROMIUM,
            Some(_) => &peers::CHROMEDRIVER,
        };
        let what = "seda-cli test dashboard_browser";
        return peers::skip(what, peer, "not installed");
    };
    let dir = std::env::temp_dir().join(format!("seda-dashboard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("mail.db");
    let out = Command::new(env!("CARGO_BIN_EXE_seda"))
        .args([
            "mail",
            "corpus",
            "--users",
            "20",
            "--max-folder",
            "200",
            "--db",
        ])
        .arg(&db)
        .output()
        .expect("corpus");
    assert!(out.status.success());
    // One thread and a short queue per request type, on a fifth of an emulated core (a
    // search holds it for about 60 ms), so that a crowd on one type makes that stage the
    // bottleneck.
    let server = common::start_with_admin(&[
        "serve".as_ref(),
        "mail".as_ref(),
        "--addr".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--admin".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--threads".as_ref(),
        "1".as_ref(),
        "--threshold".as_ref(),
        "8".as_ref(),
        "--cores".as_ref(),
        "0.2".as_ref(),
        "--db".as_ref(),
        db.as_os_str(),
    ]);
    let _server = Killed(server.child);
    let (addr, admin) = (server.addr, server.admin.expect("admin"));
    let stages: Vec<String> = get_json(&admin, "/_seda/stats")["runtime"]["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter_map(|s| s["name"].as_str().map(str::to_string))
        .collect();
    assert!(stages.len() >= 8, "{stages:?}");

    let port = free_port();
    let _driver = Killed(
        Command::new(driver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver"),
    );
    let profile = dir.join("chromium-profile");
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1400,1600",
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    caps.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL" }));
    let webdriver = format!("http://127.0.0.1:{port}");
    let mut client = None;
    let start = Instant::now();
    while client.is_none() && start.elapsed() < Duration::from_secs(60) {
        match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps.clone())
            .connect(&webdriver)
            .await
        {
            Ok(c) => client = Some(c),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    let c = client.expect("a WebDriver session");

    let _users = mail_load(&addr, 4, 100, None);
    c.goto(&format!("http://{admin}/")).await.expect("goto");
    // Every stage gets its card once the first sample arrives.
    let mut shown = Vec::new();
    for _ in 0..100 {
        shown = stage_cards(&c, "#stages .stage").await;
        if stages.iter().all(|s| shown.contains(s)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for s in &stages {
        assert!(shown.contains(s), "{s} is not on the page: {shown:?}");
    }
    // Its numbers move while the users work.
    let rates = "#stages .stage[data-stage=\"mail.list_folders\"] tr.rates";
    let before = text_of(&c, rates).await;
    let mut after = before.clone();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = text_of(&c, rates).await;
        if after != before && !after.is_empty() {
            break;
        }
    }
    assert_ne!(before, after, "the rates did not change under load");
    assert!(
        !stage_cards(&c, MARKED)
            .await
            .iter()
            .any(|s| s == "mail.search"),
        "search was the bottleneck before the crowd came"
    );

    // Mid-run, a crowd of searches: search's one thread cannot keep up. The clock starts when
    // the server's own counters show the search stage pressed (turning work away, or its queue
    // half full), not when the crowd's load generator is spawned: the crowd's logins are refused
    // for a while (`mail.login` is, rightly, where backpressure starts then), and search is no
    // bottleneck until enough of the crowd has logged in.
    let search = || {
        let stats = get_json(&admin, "/_seda/stats");
        let stage = stats["runtime"]["stages"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["name"] == "mail.search"))
            .cloned()
            .unwrap_or_default();
        let n = |p: &str| stage.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        (
            n("/queue_len"),
            n("/threshold"),
            n("/totals/counters/rejected_total"),
        )
    };
    let (_, _, rejected_before) = search();
    let _crowd = mail_load(&addr, 32, 0, Some("search"));
    let spawned = Instant::now();
    let is_pressed = |(queue, threshold, rejected): (u64, u64, u64)| {
        rejected > rejected_before || (threshold > 0 && 2 * queue >= threshold)
    };
    while !is_pressed(search()) && spawned.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pressed_at = Instant::now();
    println!(
        "the search stage was pressed {:.1} s after the crowd's load generator started",
        pressed_at.duration_since(spawned).as_secs_f64()
    );
    let mut search_marked = None;
    while pressed_at.elapsed() < MARK_WITHIN * 4 {
        if stage_cards(&c, MARKED)
            .await
            .iter()
            .any(|s| s == "mail.search")
        {
            search_marked = Some(pressed_at.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let png = c.screenshot().await.expect("screenshot");
    let shot = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/dashboard-browser.png");
    std::fs::write(&shot, png).expect("save the screenshot");
    println!("screenshot: {}", shot.display());
    let errors = console_errors(&c).await;
    c.close().await.expect("close");
    let _ = std::fs::remove_dir_all(&dir);
    let after = search_marked.expect("mail.search was never marked as the bottleneck");
    println!(
        "mail.search marked {:.1} s after the stage was pressed",
        after.as_secs_f64()
    );
    assert!(after <= MARK_WITHIN, "marked after {after:?}");
    assert!(errors.is_empty(), "console errors: {errors:?}");
}
