//! The dashboard in real headless Chromium (Debian's `chromium` and `chromium-driver`), driven
//! through chromedriver with fantoccini, against a real Redis holding real jobs that an
//! in-process worker ran: some processed, one dead with a known error, one waiting to retry,
//! scheduled ones, a paused queue, a cron entry, a limited queue with jobs running and parked.
//!
//! It checks what a person sees, presses Retry on a dead job and watches it run, shows a
//! sleeping durable job as suspended with its saved state, shows the transactional outbox's
//! relays on the overview once one reports (its id as text), searches by a piece of the args, and saves a screenshot of each main page to `docs/screenshots/`.
//!
//! Every test is `#[ignore]`: run them with `scripts/test-browser` (which installs the browser
//! if needed), one at a time (`--test-threads=1`: one Chromium at a time on two cores).
#![allow(clippy::unwrap_used)]

use fantoccini::{Client as Browser, ClientBuilder, Locator};
use gator_core::{Client, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use gator_web::{WebConfig, router};
use serde_json::json;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Whether `charge_card` fails: set while the scene is built, cleared before Retry is pressed.
static CARDS_DECLINED: AtomicBool = AtomicBool::new(true);
const DECLINED: &str = "card declined: insufficient funds";
const TOKEN: &str = "browser-test-token";
/// What `seed_history` writes as processed over the last 90 minutes.
const SEEDED_PROCESSED: u64 = 90 * 40;
const WAIT: Duration = Duration::from_secs(20);
/// How Chromium must run on this machine: headless, no sandbox, no GPU, and none of the
/// background connections the closed network refuses.
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1366,900",
];

#[job(queue = "mail")]
async fn send_email(to: String) {
    let _ = to;
}

#[job(queue = "billing", retries = 0)]
async fn charge_card(order: u64) -> Result<(), String> {
    if CARDS_DECLINED.load(Ordering::SeqCst) {
        Err(DECLINED.to_owned())
    } else {
        let _ = order;
        Ok(())
    }
}

#[job(queue = "sync", backoff = ["1h"])]
async fn sync_account(account: String) -> Result<(), String> {
    Err(format!("partner API timed out for {account}"))
}

#[job(queue = "reports")]
async fn build_report(name: String) {
    let _ = name;
    // Runs for the whole test, so Busy has something to show; the runtime ends it.
    tokio::time::sleep(Duration::from_secs(3600)).await;
}

/// A Redis holding the scene, a worker, and the dashboard served under `/gator`.
struct Scene {
    redis: RedisServer,
    client: Client,
    base: String,
    dead_jid: String,
}

impl Scene {
    async fn start(config: WebConfig) -> Scene {
        CARDS_DECLINED.store(true, Ordering::SeqCst);
        let redis = RedisServer::start();
        let client = client(&redis.url()).await;
        // Flow control first: `reports` runs two at a time, at most 30 a minute; `newsletters`
        // is paused.
        gator_core::Admin::new(client.clone())
            .set_queue_limit("reports", Some(2))
            .await
            .unwrap();
        gator_core::Admin::new(client.clone())
            .set_queue_rate("reports", None, Some("30/1m".parse().unwrap()))
            .await
            .unwrap();
        gator_core::Admin::new(client.clone())
            .pause_queue("newsletters")
            .await
            .unwrap();
        let windows = gator_core::flow::Windows::parse(
            &["05:00-07:00", "22:00-23:30"],
            Some("Europe/Berlin"),
        );
        gator_core::Admin::new(client.clone())
            .set_queue_windows("newsletters", Some(windows.unwrap()))
            .await
            .unwrap();
        for to in [
            "ada@example.com",
            "alan@example.com",
            "edsger@example.com",
            "barbara@example.com",
            "ken@example.com",
        ] {
            SendEmail::call(to.into())
                .through(&client)
                .dispatch()
                .await
                .unwrap();
        }
        let dead_jid = ChargeCard::call(1042)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
        SyncAccount::call("acme-corp".into())
            .through(&client)
            .dispatch()
            .await
            .unwrap();
        // A workflow in flight: its first step waits an hour to retry, its second for the first.
        let workflow = gator_core::Workflow::new()
            .then(SyncAccount::call("globex".into()))
            .then(SendEmail::call("cfo@example.com".into()));
        workflow.through(&client).dispatch().await.unwrap();
        for name in ["revenue", "churn", "cohorts"] {
            BuildReport::call(name.into())
                .through(&client)
                .dispatch()
                .await
                .unwrap();
        }
        for (to, hours) in [
            ("grace.hopper@navy.example", 1),
            ("margaret@example.com", 3),
        ] {
            SendEmail::call(to.into())
                .after(Duration::from_secs(hours * 3600))
                .through(&client)
                .dispatch()
                .await
                .unwrap();
        }
        for n in 0..4 {
            SendEmail::call(format!("reader{n}@example.com"))
                .queue("newsletters")
                .through(&client)
                .dispatch()
                .await
                .unwrap();
        }
        gator_core::Admin::new(client.clone())
            .add_periodic(
                "nightly-digest",
                "0 3 * * *",
                Some("Europe/Berlin"),
                SendEmail::call("team@example.com".into()),
            )
            .await
            .unwrap();
        // Started once every queue is known, since it works the known queues.
        let worker = TestWorker::start(&redis.url(), None, 8);
        std::mem::forget(worker); // runs until the test's runtime ends
        gator_core::Admin::new(client.clone())
            .add_periodic(
                "hourly-cleanup",
                "0 * * * *",
                None,
                SendEmail::call("cleanup@example.com".into()),
            )
            .await
            .unwrap();
        gator_core::Admin::new(client.clone())
            .pause_periodic("hourly-cleanup")
            .await
            .unwrap();
        wait_until("the scene to settle", WAIT, || async {
            let o = gator_core::Admin::new(client.clone())
                .overview()
                .await
                .unwrap();
            let settled = o.dead == 1 && o.retries == 2 && o.busy >= 2 && o.enqueued == 5;
            if !settled {
                eprintln!("{o:?}");
            }
            settled
        })
        .await;

        seed_history(&client).await;

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/gator", listener.local_addr().unwrap());
        let app = axum::Router::new().nest("/gator", router(client.clone(), config));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Scene {
            redis,
            client,
            base,
            dead_jid,
        }
    }
}

/// Processed and failed counts for each of the last 90 minutes, written as a worker's
/// once-a-second flush writes them (`Upkeep::flush_stats`), so the chart has a past to draw.
/// Returns the processed total written.
async fn seed_history(client: &Client) -> u64 {
    use gator_core::store::{Counts, Upkeep};
    let now = client.redis_time().await.unwrap();
    let mut total = 0;
    for minute in 1..=90u64 {
        let processed = 40 + (minute * 37 % 23) * 3 + if minute % 30 < 8 { 60 } else { 0 };
        let failed = if minute % 17 == 3 { 9 } else { minute % 3 };
        let counts = Counts { processed, failed };
        Upkeep::new(client.connection(), client.keys())
            .flush_stats("mail", counts, now - minute * 60_000)
            .await
            .unwrap();
        total += processed;
    }
    total
}

/// chromedriver on a free port, in its own process group so that Chromium goes with it.
struct Driver {
    child: Child,
    browser: Option<Browser>,
    _profile: tempfile::TempDir,
}

impl Driver {
    async fn start() -> Driver {
        use std::os::unix::process::CommandExt;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("/usr/bin/chromedriver runs (scripts/ensure-browser installs it)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < WAIT,
                "chromedriver did not listen on {port}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| f.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "binary": "/usr/bin/chromium", "args": args }),
        );
        let browser = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a Chromium session");
        Driver {
            child,
            browser: Some(browser),
            _profile: profile,
        }
    }

    fn browser(&self) -> &Browser {
        self.browser.as_ref().unwrap()
    }

    async fn stop(mut self) {
        if let Some(browser) = self.browser.take() {
            let _ = browser.close().await;
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole group: chromedriver and the Chromium it started.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
}

/// Waits until the text of the first element matching `css` satisfies `ok`; returns it.
async fn wait_text(browser: &Browser, css: &str, ok: impl Fn(&str) -> bool) -> String {
    let started = Instant::now();
    let mut last = String::new();
    loop {
        if let Ok(element) = browser.find(Locator::Css(css)).await
            && let Ok(text) = element.text().await
        {
            if ok(&text) {
                return text;
            }
            last = text;
        }
        assert!(
            started.elapsed() < WAIT,
            "timed out waiting on {css:?}; last text {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn wait_gone(browser: &Browser, css: &str) {
    let started = Instant::now();
    while browser.find(Locator::Css(css)).await.is_ok() {
        assert!(started.elapsed() < WAIT, "{css:?} is still on the page");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn screenshot(browser: &Browser, name: &str) {
    let png = browser.screenshot().await.unwrap();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/screenshots");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(format!("{dir}/{name}.png"), png).unwrap();
}

/// Logs in the way a person does: the token once in the URL, a cookie from then on.
async fn log_in(browser: &Browser, scene: &Scene) {
    browser
        .goto(&format!("{}?token={TOKEN}", scene.base))
        .await
        .unwrap();
    let url = browser.current_url().await.unwrap();
    assert!(
        !url.as_str().contains("token="),
        "the token left the URL: {url}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium: scripts/test-browser"]
async fn every_page_shows_what_redis_holds() {
    let scene = Scene::start(WebConfig::new().auth_token(TOKEN)).await;
    let driver = Driver::start().await;
    let b = driver.browser();
    log_in(b, &scene).await;
    let page = |path: &str| format!("{}/{path}", scene.base);

    // Overview: the totals a person reads first.
    wait_text(b, "[data-stat=dead]", |t| t == "1").await;
    wait_text(b, "[data-stat=retries]", |t| t == "2").await;
    wait_text(b, "[data-stat=scheduled]", |t| t == "2").await;
    wait_text(b, "[data-stat=busy]", |t| t == "2").await;
    let processed: u64 = wait_text(b, "[data-stat=processed]", |t| t != "–")
        .await
        .replace(',', "")
        .parse()
        .unwrap();
    assert!(processed >= SEEDED_PROCESSED, "processed {processed}");
    wait_text(b, "#redis", |t| {
        (t.contains("Redis 7") || t.contains("Valkey "))
            && (t.contains("standalone") || t.contains("cluster"))
    })
    .await;
    b.find(Locator::Css("#chart svg polyline.processed"))
        .await
        .unwrap();
    b.find(Locator::Css(".tabs button[data-span=hour]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(b, "#chart-note", |t| t == "per minute").await;
    screenshot(b, "overview").await;

    // Queues: the paused one says so, with its four waiting jobs and a Resume button.
    b.goto(&page("queues")).await.unwrap();
    let row = wait_text(b, "tr[data-queue=newsletters]", |t| t.contains("paused")).await;
    assert!(row.contains("newsletters 4"), "{row}");
    b.find(Locator::Css(
        "tr[data-queue=newsletters] button[data-action=resume]",
    ))
    .await
    .unwrap();
    wait_text(b, "tr[data-queue=reports]", |t| t.contains("2 / 2")).await;
    screenshot(b, "queues").await;

    // Busy: the worker process and the two reports running.
    b.goto(&page("busy")).await.unwrap();
    let pid = std::process::id().to_string();
    wait_text(b, "#processes", |t| t.contains(&pid) && t.contains("25 %")).await;
    let running = wait_text(b, "#running", |t| t.matches("build_report").count() == 2).await;
    assert!(running.contains("reports"), "{running}");
    screenshot(b, "busy").await;

    // Scheduled and Retries.
    b.goto(&page("scheduled")).await.unwrap();
    wait_text(b, "#entries", |t| {
        t.contains("grace.hopper@navy.example") && t.contains("margaret@example.com")
    })
    .await;
    b.goto(&page("retries")).await.unwrap();
    wait_text(b, "#entries", |t| {
        t.contains("partner API timed out for acme-corp") && t.contains("globex")
    })
    .await;

    // Dead: the job and its error, and on its own page the error again with its args.
    b.goto(&page("dead")).await.unwrap();
    let dead_row = format!("tr[data-jid=\"{}\"]", scene.dead_jid);
    let row = wait_text(b, &dead_row, |t| t.contains(DECLINED)).await;
    assert!(row.contains("charge_card") && row.contains("1042"), "{row}");
    wait_text(b, "#summary", |t| t.starts_with("1 job ·")).await;
    screenshot(b, "dead").await;
    b.goto(&page(&format!("job?jid={}", scene.dead_jid)))
        .await
        .unwrap();
    wait_text(b, "#error", |t| t == DECLINED).await;
    wait_text(b, "#status", |t| {
        t.contains("dead") && t.contains("charge_card") && t.contains("billing")
    })
    .await;
    wait_text(b, "#args", |t| t.contains("1042")).await;
    wait_text(b, "#timeline", |t| {
        t.contains("created") && t.contains("dead")
    })
    .await;
    screenshot(b, "job").await;

    // Workflows and cron.
    b.goto(&page("flows")).await.unwrap();
    let flows = wait_text(b, "#flows", |t| t.contains("workflow")).await;
    assert!(
        flows.contains("0 done, 0 failed, 1 waiting of 2"),
        "{flows}"
    );
    b.find(Locator::Css("#flows a"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(b, "#workflow", |t| {
        t.contains("sync_account") && t.contains("retrying") && t.contains("waiting")
    })
    .await;
    // A queue's own page: its numbers and flow controls.
    b.goto(&page("queue?name=reports")).await.unwrap();
    wait_text(b, "#numbers", |t| t.contains("Busy\n2")).await;
    wait_text(b, "#flow", |t| {
        t.contains("2 of 2 units in use") && t.contains("30/1m")
    })
    .await;
    b.goto(&page("cron")).await.unwrap();
    let cron = wait_text(b, "tr[data-cron=nightly-digest]", |t| {
        t.contains("0 3 * * * Europe/Berlin")
    })
    .await;
    assert!(
        cron.contains("send_email") && cron.contains("active") && cron.contains("in "),
        "{cron}"
    );
    wait_text(b, "tr[data-cron=hourly-cleanup]", |t| {
        t.contains("paused") && t.contains("Resume")
    })
    .await;
    screenshot(b, "cron").await;

    // Jobs: the catalogue the worker published, and an enqueue by name through it.
    b.goto(&page("jobs")).await.unwrap();
    let report = wait_text(b, "tr[data-job=build_report]", |t| t.contains("reports")).await;
    assert!(report.contains("name: String"), "{report}");
    b.find(Locator::Css("select[name=job]"))
        .await
        .unwrap()
        .select_by_value("send_email")
        .await
        .unwrap();
    b.find(Locator::Css("input[name=args]"))
        .await
        .unwrap()
        .send_keys(r#"["ada@example.com"]"#)
        .await
        .unwrap();
    b.find(Locator::Css("#enqueue button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(b, "#flash", |t| t.contains("Enqueued send_email")).await;
    screenshot(b, "jobs").await;

    // Limits: the units in use of the limited queue, its limiter, its parked job.
    b.goto(&page("limits")).await.unwrap();
    let limits = wait_text(b, "section[data-queue=reports]", |t| {
        t.contains("2 of 2 units in use")
    })
    .await;
    assert!(limits.contains("30/1m"), "{limits}");
    wait_text(b, "section[data-queue=newsletters]", |t| {
        t.contains("paused") && t.contains("05:00-07:00")
    })
    .await;
    screenshot(b, "limits").await;

    // Search by a piece of the args finds the scheduled email, and the cost is shown.
    b.goto(&page("search")).await.unwrap();
    b.find(Locator::Css("input[name=q]"))
        .await
        .unwrap()
        .send_keys("hopper")
        .await
        .unwrap();
    b.find(Locator::Css("select[name=field]"))
        .await
        .unwrap()
        .select_by_value("args")
        .await
        .unwrap();
    b.find(Locator::Css("#search button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let hits = wait_text(b, "#hits", |t| t.contains("grace.hopper@navy.example")).await;
    assert!(
        hits.contains("scheduled") && !hits.contains("margaret"),
        "{hits}"
    );
    wait_text(b, "#cost", |t| {
        t.contains("1 found") && t.contains("entries read")
    })
    .await;
    screenshot(b, "search").await;

    // The navigation's Overview link leads back to the mount point.
    b.find(Locator::Css("header nav a"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(b, "[data-stat=dead]", |t| t == "1").await;
    let url = b.current_url().await.unwrap();
    assert_eq!(url.path(), "/gator", "{url}");

    driver.stop().await;
    drop(scene);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium: scripts/test-browser"]
async fn pressing_retry_on_a_dead_job_takes_it_off_the_dead_page_and_it_runs() {
    let scene = Scene::start(WebConfig::new().auth_token(TOKEN)).await;
    let driver = Driver::start().await;
    let b = driver.browser();
    log_in(b, &scene).await;
    b.goto(&format!("{}/dead", scene.base)).await.unwrap();
    let row = format!("tr[data-jid=\"{}\"]", scene.dead_jid);
    wait_text(b, &row, |t| t.contains(DECLINED)).await;

    CARDS_DECLINED.store(false, Ordering::SeqCst);
    b.find(Locator::Css(&format!("{row} button[data-action=retry]")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_gone(b, &row).await;
    wait_text(b, "#flash", |t| t.contains("Retry")).await;
    wait_text(b, "#entries", |t| t.contains("Dead is empty")).await;
    wait_until("the retried job to be done", WAIT, || async {
        scene.client.status(&scene.dead_jid).await.unwrap().name() == "done"
    })
    .await;
    b.goto(&format!("{}/job?jid={}", scene.base, scene.dead_jid))
        .await
        .unwrap();
    wait_text(b, "#status", |t| t.contains("done")).await;
    driver.stop().await;
    drop(scene.redis);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium: scripts/test-browser"]
async fn read_only_pages_show_no_button_that_changes_anything() {
    let scene = Scene::start(WebConfig::new().auth_token(TOKEN).read_only(true)).await;
    let driver = Driver::start().await;
    let b = driver.browser();
    log_in(b, &scene).await;
    for (path, ready) in [
        ("dead", "#entries"),
        ("queues", "tr[data-queue=newsletters]"),
        ("cron", "tr[data-cron=nightly-digest]"),
    ] {
        b.goto(&format!("{}/{path}", scene.base)).await.unwrap();
        wait_text(b, ready, |t| !t.is_empty()).await;
        let buttons = b
            .find_all(Locator::Css("button[data-action]"))
            .await
            .unwrap();
        assert!(
            buttons.is_empty(),
            "{path} shows {} action buttons",
            buttons.len()
        );
    }
    wait_text(b, "footer", |t| t.contains("read-only")).await;
    driver.stop().await;
}

/// Saves a checkpoint and a step whose result is markup, then sleeps an hour.
#[job(queue = "imports")]
async fn import_sheet(ctx: gator_core::Context, sheet: String) -> Result<(), gator_core::JobError> {
    ctx.checkpoint(&json!({"sheet": sheet, "row": 1200}))
        .await?;
    ctx.step("fetch", || async {
        Ok::<_, gator_core::JobError>("<img src=x onerror=alert(1)>".to_owned())
    })
    .await?;
    ctx.sleep(Duration::from_secs(3600)).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium: scripts/test-browser"]
async fn a_sleeping_durable_job_reads_suspended_with_its_saved_state_as_text() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = ImportSheet::call("q3".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = TestWorker::start(&redis.url(), Some("imports"), 2);
    wait_until("the import to sleep", WAIT, || async {
        matches!(
            client.status(&jid).await.unwrap(),
            gator_core::JobStatus::Suspended { .. }
        )
    })
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/gator", listener.local_addr().unwrap());
    let config = WebConfig::new().auth_token(TOKEN);
    let app = axum::Router::new().nest("/gator", router(client.clone(), config));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let driver = Driver::start().await;
    let b = driver.browser();
    b.goto(&format!("{base}?token={TOKEN}")).await.unwrap();

    // In the scheduled set, it reads suspended, with why.
    b.goto(&format!("{base}/scheduled")).await.unwrap();
    wait_text(b, "#entries", |t| {
        t.contains("import_sheet") && t.contains("suspended: sleep 1")
    })
    .await;
    // Its page: when it wakes, why, and what it saved, markup shown as text.
    b.goto(&format!("{base}/job?jid={jid}")).await.unwrap();
    wait_text(b, "#status", |t| {
        t.contains("suspended") && t.contains("Wakes") && t.contains("sleep 1")
    })
    .await;
    wait_text(b, "#durable-checkpoint", |t| t.contains("\"row\": 1200")).await;
    let steps = wait_text(b, "#durable-steps", |t| t.contains("fetch")).await;
    assert!(steps.contains("<img src=x onerror=alert(1)>"), "{steps}");
    assert!(b.find(Locator::Css("#durable-steps img")).await.is_err());
    wait_text(b, "#durable-facts", |t| {
        t.contains("Sleeps slept") && t.contains('1')
    })
    .await;
    screenshot(b, "job-durable").await;
    driver.stop().await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium: scripts/test-browser"]
async fn the_overview_shows_each_outbox_relay_once_one_reports_its_id_as_text() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/gator", listener.local_addr().unwrap());
    let config = WebConfig::new().auth_token(TOKEN);
    let app = axum::Router::new().nest("/gator", router(client.clone(), config));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let driver = Driver::start().await;
    let b = driver.browser();
    b.goto(&format!("{base}?token={TOKEN}")).await.unwrap();
    wait_text(b, "[data-stat=processed]", |t| t != "–").await;
    let panel = b.find(Locator::Css("#outbox-panel")).await.unwrap();
    assert!(!panel.is_displayed().await.unwrap(), "no relay, no panel");

    let report = gator_core::outbox::Report {
        relay: "vm:7:<img src=x onerror=alert(1)>".into(),
        waiting: 1234,
        dead: 2,
        lag_ms: 4_500,
        rows_per_second: 812.5,
        relayed: 90_000,
        ..Default::default()
    };
    gator_core::outbox::publish(&client, report).await.unwrap();
    let shown = wait_text(b, "#outbox", |t| t.contains("1,234")).await;
    for expected in ["<img src=x onerror=alert(1)>", "4.5 s", "812.5", "90,000"] {
        assert!(shown.contains(expected), "{expected:?} not in {shown:?}");
    }
    assert!(b.find(Locator::Css("#outbox img")).await.is_err());
    driver.stop().await;
}
