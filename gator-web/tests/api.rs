//! The HTTP API against a real redis-server, with real jobs run by an in-process worker:
//! enqueue by wire name, auth, CSRF, read-only, retry and delete from the sets, pause and
//! resume, JSON errors (404, 503 with Redis down), the mount prefix, and the binary's refusal
//! to listen on a public address without auth. Requests go straight to the router
//! (`tower::ServiceExt::oneshot`), except for the binary's.
#![allow(clippy::unwrap_used)]

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use base64::Engine;
use gator_core::job;
use gator_tests::{Notes, RedisServer, TestWorker, catalogued, client, wait_until};
use gator_web::{WebConfig, router};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tower::ServiceExt;

static SENT: Notes = Notes::new();
/// Whether `flaky` fails: it dies while this is set, and succeeds once it is cleared.
static FLAKY_FAILS: AtomicBool = AtomicBool::new(true);

#[job(queue = "web")]
async fn send_email(to: String) {
    SENT.push(format!("sent {to}"));
}

#[job(queue = "web", retries = 0)]
async fn flaky(tag: String) -> Result<(), String> {
    if FLAKY_FAILS.load(Ordering::SeqCst) {
        Err(format!("smtp said no to {tag}"))
    } else {
        SENT.push(format!("flaky {tag}"));
        Ok(())
    }
}

#[job(queue = "web", retries = 0)]
async fn doomed(tag: String) -> Result<(), String> {
    Err(format!("doomed {tag}"))
}

const TOKEN: &str = "t0ken-for-the-tests";
const WAIT: Duration = Duration::from_secs(15);

/// One request to the router; the answer's status, JSON body (`null` if not JSON) and headers.
async fn call(
    app: &Router,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (StatusCode, Value, HeaderMap) {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = match body {
        Some(json) => {
            request = request.header("content-type", "application/json");
            Body::from(json.to_string())
        }
        None => Body::empty(),
    };
    let response = app
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 10 << 20)
        .await
        .unwrap();
    let json = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, json, headers)
}

const BEARER: (&str, &str) = ("authorization", "Bearer t0ken-for-the-tests");

async fn get(app: &Router, path: &str) -> Value {
    let (status, body, _) = call(app, "GET", path, &[BEARER], None).await;
    assert_eq!(status, StatusCode::OK, "GET {path}: {body}");
    body
}

async fn post(app: &Router, path: &str, body: Value) -> (StatusCode, Value) {
    let (status, body, _) = call(app, "POST", path, &[BEARER], Some(body)).await;
    (status, body)
}

/// The CSRF token a page shows in its meta tag.
async fn csrf_of(app: &Router, headers: &[(&str, &str)]) -> String {
    let (status, page, _) = call(app, "GET", "/", headers, None).await;
    assert_eq!(status, StatusCode::OK);
    let page = page.as_str().unwrap().to_owned();
    let start = page.find("name=\"gator-csrf\" content=\"").unwrap() + 27;
    page[start..start + 64].to_owned()
}

fn basic(user: &str, password: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {encoded}")
}

async fn web(redis: &RedisServer, config: WebConfig) -> Router {
    router(client(&redis.url()).await, config)
}

async fn status_of(app: &Router, jid: &str) -> String {
    let (_, job, _) = call(app, "GET", &format!("/api/jobs/{jid}"), &[BEARER], None).await;
    job["status"]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_enqueued_by_wire_name_runs_and_its_jid_is_returned() {
    let redis = RedisServer::start();
    let app = web(&redis, WebConfig::new().auth_token(TOKEN)).await;
    let worker = TestWorker::start(&redis.url(), Some("web"), 2);
    catalogued(&client(&redis.url()).await, "send_email").await;

    let (status, answer) = post(
        &app,
        "/api/queues/web/jobs",
        json!({"job": "send_email", "args": ["ada@example.com"]}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let jid = answer["jid"].as_str().unwrap().to_owned();
    wait_until("the enqueued job to be done", WAIT, || async {
        status_of(&app, &jid).await == "done"
    })
    .await;
    assert!(
        SENT.tagged("sent")
            .contains(&"sent ada@example.com".to_owned())
    );

    // Later: `in` is counted on Redis's clock, `at` is epoch ms or RFC 3339.
    let (status, later) = post(
        &app,
        "/api/queues/web/jobs",
        json!({"job": "send_email", "args": ["bob@example.com"], "in": "1h"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{later}");
    let (status, _) = post(
        &app,
        "/api/queues/web/jobs",
        json!({"job": "send_email", "args": ["cy@example.com"], "at": "2030-06-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let scheduled = get(&app, "/api/sets/scheduled").await;
    assert_eq!(scheduled["total"], 2, "{scheduled}");
    let job = get(
        &app,
        &format!("/api/jobs/{}", later["jid"].as_str().unwrap()),
    )
    .await;
    assert_eq!(job["place"], "scheduled");
    assert_eq!(job["payload"]["args"], json!(["bob@example.com"]));
    worker.stop().await;
}

#[tokio::test]
async fn enqueue_refuses_a_bad_queue_a_bad_shape_and_unknown_fields_with_json_400s() {
    let redis = RedisServer::start();
    let app = web(&redis, WebConfig::new().auth_token(TOKEN)).await;
    let bad = [
        (
            "/api/queues/no%20spaces/jobs",
            json!({"job": "send_email", "args": []}),
        ),
        (
            "/api/queues/a%7Bb%7D/jobs",
            json!({"job": "send_email", "args": []}),
        ),
        (
            "/api/queues/web/jobs",
            json!({"job": "send_email", "args": {"to": "x"}}),
        ),
        (
            "/api/queues/web/jobs",
            json!({"job": "send_email", "args": [], "priority": 1}),
        ),
        ("/api/queues/web/jobs", json!({"args": []})),
        ("/api/queues/web/jobs", json!({"job": "", "args": []})),
        (
            "/api/queues/web/jobs",
            json!({"job": "send_email", "at": "tomorrow"}),
        ),
        (
            "/api/queues/web/jobs",
            json!({"job": "send_email", "in": "soon"}),
        ),
        (
            "/api/queues/web/jobs",
            json!({"job": "send_email", "at": "2999-01-01T00:00:00Z"}),
        ),
        (
            "/api/queues/web/jobs",
            json!({"job": "send_email", "at": 1, "in": "1s"}),
        ),
        ("/api/queues/web/jobs", json!(["send_email"])),
    ];
    for (path, body) in bad {
        let (status, answer) = post(&app, path, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {body}: {answer}");
        assert_eq!(answer["code"], "bad_request", "{answer}");
        assert!(answer["error"].as_str().unwrap().len() > 5, "{answer}");
    }
    let (status, answer, _) = call(
        &app,
        "POST",
        "/api/queues/web/jobs",
        &[BEARER, ("content-type", "application/json")],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(
        get(&app, "/api/overview").await["enqueued"],
        0,
        "nothing was stored"
    );
}

#[tokio::test]
async fn reads_need_the_token_or_basic_auth_and_a_token_login_sets_a_cookie() {
    let redis = RedisServer::start();
    let app = web(
        &redis,
        WebConfig::new()
            .auth_token(TOKEN)
            .basic_auth("ops", "pa55-word-for-the-tests"),
    )
    .await;

    let (status, answer, headers) = call(&app, "GET", "/api/overview", &[], None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(answer["code"], "unauthorized");
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Basic")
    );
    let wrong = [
        ("authorization", "Bearer nope".to_owned()),
        ("authorization", basic("ops", "wrong")),
        ("cookie", "gator_session=00".to_owned()),
    ];
    for (name, value) in &wrong {
        let (status, _, _) = call(&app, "GET", "/api/overview", &[(name, value)], None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}: {value}");
    }
    let (status, overview, _) = call(&app, "GET", "/api/overview", &[BEARER], None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(overview["redis"]["mode"].as_str().is_some());
    let basic = basic("ops", "pa55-word-for-the-tests");
    let (status, _, _) = call(
        &app,
        "GET",
        "/api/queues",
        &[("authorization", &basic)],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = call(&app, "GET", "/", &[], None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "pages too");

    // A browser logs in once with ?token=, and the cookie carries it from then on.
    let (status, _, headers) = call(
        &app,
        "GET",
        "/dead?token=t0ken-for-the-tests&queue=web",
        &[],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers["location"], "dead?queue=web",
        "the token leaves the URL"
    );
    let cookie = headers["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let (status, _, _) = call(&app, "GET", "/api/overview", &[("cookie", &cookie)], None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = call(&app, "GET", "/dead?token=wrong", &[], None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_post_needs_the_csrf_header_unless_it_carries_the_bearer_token() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    SendEmail::call("x".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let app = router(
        client,
        WebConfig::new()
            .auth_token(TOKEN)
            .basic_auth("ops", "pa55-word-for-the-tests"),
    );
    let basic = basic("ops", "pa55-word-for-the-tests");
    let csrf = csrf_of(&app, &[("authorization", &basic)]).await;

    let (status, answer, _) = call(
        &app,
        "POST",
        "/api/queues/web/pause",
        &[("authorization", &basic)],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(answer["code"], "csrf");
    let (status, _, _) = call(
        &app,
        "POST",
        "/api/queues/web/pause",
        &[
            ("authorization", &basic),
            ("x-gator-csrf", "0".repeat(64).as_str()),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a wrong token");
    for cross in [
        ("origin", "https://evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let (status, answer, _) = call(
            &app,
            "POST",
            "/api/queues/web/pause",
            &[
                ("authorization", &basic),
                ("x-gator-csrf", &csrf),
                ("host", "localhost"),
                cross,
            ],
            None,
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{cross:?}");
        assert_eq!(answer["code"], "cross_site");
    }
    let (status, answer, _) = call(
        &app,
        "POST",
        "/api/queues/web/pause",
        &[
            ("authorization", &basic),
            ("x-gator-csrf", &csrf),
            ("host", "localhost:9090"),
            ("origin", "http://localhost:9090"),
            ("sec-fetch-site", "same-origin"),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    // Behind a proxy that rewrites Host, the forwarded host is the one the browser asked for.
    let (status, answer, _) = call(
        &app,
        "POST",
        "/api/queues/web/resume",
        &[
            ("authorization", &basic),
            ("x-gator-csrf", &csrf),
            ("host", "10.0.0.5:9090"),
            ("x-forwarded-host", "gator.example.com"),
            ("origin", "https://gator.example.com"),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (status, answer) = post(&app, "/api/queues/web/resume", json!({})).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "bearer needs no CSRF header: {answer}"
    );
}

#[tokio::test]
async fn read_only_mode_refuses_every_post_and_the_pages_hide_the_buttons() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = SendEmail::call("x".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let app = router(client, WebConfig::new().auth_token(TOKEN).read_only(true));
    for path in [
        "/api/queues/web/pause",
        "/api/queues/web/clear",
        "/api/queues/web/jobs",
        "/api/sets/dead/delete",
        "/api/replies",
    ] {
        let (status, answer) = post(&app, path, json!({"all": true})).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(answer["code"], "read_only");
    }
    let (status, answer) = post(&app, &format!("/api/jobs/{jid}/cancel"), json!({})).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("read_only"))
    );
    assert_eq!(
        get(&app, "/api/queues").await[0]["size"],
        1,
        "nothing changed"
    );
    let (_, page, _) = call(&app, "GET", "/queues", &[BEARER], None).await;
    let page = page.as_str().unwrap();
    assert!(page.contains(r#"<meta name="gator-read-only" content="true">"#));
    assert!(page.contains(r#"class="read-only""#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_from_the_dead_set_moves_the_job_back_and_it_runs() {
    let redis = RedisServer::start();
    let app = web(&redis, WebConfig::new().auth_token(TOKEN)).await;
    let worker = TestWorker::start(&redis.url(), Some("web"), 2);
    catalogued(&client(&redis.url()).await, "send_email").await;
    let (_, answer) = post(
        &app,
        "/api/queues/web/jobs",
        json!({"job": "flaky", "args": ["t1"]}),
    )
    .await;
    let jid = answer["jid"].as_str().unwrap().to_owned();
    wait_until("the job to die", WAIT, || async {
        status_of(&app, &jid).await == "dead"
    })
    .await;

    let dead = get(&app, "/api/sets/dead").await;
    assert_eq!(dead["total"], 1);
    assert_eq!(dead["entries"][0]["jid"], jid.as_str());
    assert_eq!(dead["entries"][0]["error"], "smtp said no to t1");
    let filtered = get(&app, "/api/sets/dead?error=SAID%20NO").await;
    assert_eq!(filtered["entries"][0]["jid"], jid.as_str(), "{filtered}");
    assert!(
        get(&app, "/api/sets/dead?error=elsewhere").await["entries"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let job = get(&app, &format!("/api/jobs/{jid}")).await;
    assert_eq!(
        (job["place"].as_str(), job["status"]["error"].as_str()),
        (Some("dead"), Some("smtp said no to t1"))
    );

    FLAKY_FAILS.store(false, Ordering::SeqCst);
    let (status, answer) = post(&app, &format!("/api/sets/dead/jobs/{jid}/retry"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    wait_until("the retried job to be done", WAIT, || async {
        status_of(&app, &jid).await == "done"
    })
    .await;
    assert_eq!(get(&app, "/api/sets/dead").await["total"], 0);
    assert!(SENT.tagged("flaky").contains(&"flaky t1".to_owned()));
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_takes_one_job_the_selected_ones_or_all_and_search_finds_by_args() {
    let redis = RedisServer::start();
    let app = web(&redis, WebConfig::new().auth_token(TOKEN)).await;
    let worker = TestWorker::start(&redis.url(), Some("web"), 2);
    catalogued(&client(&redis.url()).await, "send_email").await;
    let mut jids = Vec::new();
    for tag in ["a", "b", "c", "d", "needle-7"] {
        let (_, answer) = post(
            &app,
            "/api/queues/web/jobs",
            json!({"job": "doomed", "args": [tag]}),
        )
        .await;
        jids.push(answer["jid"].as_str().unwrap().to_owned());
    }
    wait_until("five dead jobs", WAIT, || async {
        get(&app, "/api/sets/dead").await["total"] == 5
    })
    .await;
    worker.stop().await;

    let found = get(&app, "/api/search?q=needle&field=args").await;
    assert_eq!(found["hits"].as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found["hits"][0]["jid"], jids[4].as_str());
    assert_eq!(found["hits"][0]["place"], "dead");
    assert!(found["scanned"].as_u64().unwrap() >= 5);
    let (status, answer, _) =
        call(&app, "GET", "/api/search?q=x&field=nope", &[BEARER], None).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("bad_request"))
    );

    let (status, _) = post(
        &app,
        &format!("/api/sets/dead/jobs/{}/delete", jids[0]),
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, answer) = post(
        &app,
        &format!("/api/sets/dead/jobs/{}/delete", jids[0]),
        json!({}),
    )
    .await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    let (status, answer) = post(
        &app,
        "/api/sets/dead/delete",
        json!({"jids": [jids[1], jids[2], "no-such-jid"], "queue": "web"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        answer,
        json!({"done": 2, "missing": ["no-such-jid"], "remaining": [], "next_cursor": null, "max_per_request": 1000})
    );
    assert_eq!(get(&app, "/api/sets/dead").await["total"], 2);
    let (status, _) = post(
        &app,
        "/api/sets/dead/delete",
        json!({"jids": [], "all": false}),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a selection is jids or all"
    );
    let (_, answer) = post(&app, "/api/sets/dead/delete", json!({"all": true})).await;
    assert_eq!(
        (&answer["done"], &answer["next_cursor"]),
        (&json!(2), &json!(null))
    );
    assert_eq!(get(&app, "/api/overview").await["dead"], 0);
}

#[tokio::test]
async fn pause_and_resume_show_on_the_queue_and_clear_empties_it() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    for n in 0..3 {
        SendEmail::call(n.to_string())
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let app = router(client, WebConfig::new().auth_token(TOKEN));
    let (status, _) = post(&app, "/api/queues/web/pause", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let queue = get(&app, "/api/queues/web").await;
    assert_eq!(
        (
            queue["info"]["paused"].as_bool(),
            queue["info"]["size"].as_u64()
        ),
        (Some(true), Some(3))
    );
    assert_eq!(queue["flow"]["paused"], true);
    post(&app, "/api/queues/web/resume", json!({})).await;
    assert_eq!(get(&app, "/api/queues").await[0]["paused"], false);
    let (_, cleared) = post(&app, "/api/queues/web/clear", json!({})).await;
    assert_eq!(cleared["deleted"], 3);
    let (status, answer) = post(&app, "/api/queues/nobody/pause", json!({})).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
}

#[tokio::test]
async fn an_unknown_jid_or_route_is_a_json_404() {
    let redis = RedisServer::start();
    let app = web(&redis, WebConfig::new().auth_token(TOKEN)).await;
    for (method, path) in [
        ("GET", "/api/jobs/0193a5f0-0000-7000-8000-000000000001"),
        (
            "POST",
            "/api/sets/dead/jobs/0193a5f0-0000-7000-8000-000000000001/retry",
        ),
        (
            "POST",
            "/api/jobs/0193a5f0-0000-7000-8000-000000000001/cancel",
        ),
        ("POST", "/api/cron/nothing/run"),
        ("GET", "/api/no/such/thing"),
        ("GET", "/nowhere"),
        ("GET", "/assets/nothing.js"),
    ] {
        let (status, answer, _) = call(&app, method, path, &[BEARER], Some(json!({}))).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {answer}");
        assert_eq!(answer["code"], "not_found", "{method} {path}");
    }
    let (status, answer, _) = call(&app, "GET", "/api/queues/web/pause", &[BEARER], None).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed"))
    );
    let (status, answer, _) = call(&app, "GET", "/api/sets/graveyard", &[BEARER], None).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("bad_request"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_down_the_api_answers_503_json_and_recovers() {
    let mut redis = RedisServer::start_single();
    let app = web(&redis, WebConfig::new().auth_token(TOKEN)).await;
    get(&app, "/api/overview").await;
    redis.stop();
    let (status, answer, _) = call(&app, "GET", "/api/overview", &[BEARER], None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert_eq!(answer["code"], "redis_unavailable");
    let (status, answer) = post(
        &app,
        "/api/queues/web/jobs",
        json!({"job": "send_email", "args": []}),
    )
    .await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("redis_unavailable"))
    );
    // The pages themselves need no Redis: they load, and say "redis down" as they poll.
    let (status, _, _) = call(&app, "GET", "/queues", &[BEARER], None).await;
    assert_eq!(status, StatusCode::OK);
    redis.restart();
    wait_until("the API to answer again", WAIT, || async {
        call(&app, "GET", "/api/overview", &[BEARER], None).await.0 == StatusCode::OK
    })
    .await;
}

#[tokio::test]
async fn cron_entries_show_and_pause_resume_and_run_now() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    gator_core::Admin::new(client.clone())
        .add_periodic(
            "daily-mail",
            "0 9 * * *",
            Some("Europe/Berlin"),
            SendEmail::call("ops@example.com".into()),
        )
        .await
        .unwrap();
    let app = router(client, WebConfig::new().auth_token(TOKEN));
    let cron = get(&app, "/api/cron").await;
    let entry = &cron["entries"][0];
    assert_eq!(
        (entry["name"].as_str(), entry["job"].as_str()),
        (Some("daily-mail"), Some("send_email"))
    );
    assert!(entry["next_ms"].as_u64().unwrap() > cron["now_ms"].as_u64().unwrap());
    post(&app, "/api/cron/daily-mail/pause", json!({})).await;
    assert_eq!(get(&app, "/api/cron").await["entries"][0]["paused"], true);
    post(&app, "/api/cron/daily-mail/resume", json!({})).await;
    assert_eq!(get(&app, "/api/cron").await["entries"][0]["paused"], false);
    let (status, run) = post(&app, "/api/cron/daily-mail/run", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{run}");
    let job = get(&app, &format!("/api/jobs/{}", run["jid"].as_str().unwrap())).await;
    assert_eq!(job["place"], "queued");
}

#[tokio::test]
async fn mounted_under_a_prefix_every_page_resolves_its_links_below_it() {
    let redis = RedisServer::start();
    let app = Router::new().nest(
        "/gator",
        web(&redis, WebConfig::new().auth_token(TOKEN)).await,
    );
    for path in [
        "/gator",
        "/gator/queues",
        "/gator/dead",
        "/gator/job?jid=x",
        "/gator/search",
    ] {
        let (status, page, headers) = call(&app, "GET", path, &[BEARER], None).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(
            headers["content-security-policy"]
                .to_str()
                .unwrap()
                .contains("script-src 'self'")
        );
        let page = page.as_str().unwrap();
        let base = if path == "/gator" { "gator/" } else { "./" };
        assert!(page.contains(&format!(r#"<base href="{base}">"#)), "{path}");
        assert!(
            page.contains(r#"src="assets/gator.js""#),
            "relative asset links"
        );
        assert!(
            page.contains(r#"<a class="brand" href="../gator">"#),
            "{path}"
        );
    }
    let (status, css, _) = call(&app, "GET", "/gator/assets/style.css", &[BEARER], None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(css.as_str().unwrap().contains(".read-only .act"));
    assert_eq!(get(&app, "/gator/api/queues").await, json!([]));
    // A login comes back to the page it was made on, by a relative URL; the cookie has no
    // Path, so the browser scopes it to the mount point as it sees it.
    let login = "/gator/queues?token=t0ken-for-the-tests";
    let (_, _, headers) = call(&app, "GET", login, &[], None).await;
    assert!(!headers["set-cookie"].to_str().unwrap().contains("Path="));
    assert_eq!(headers["location"], "queues");
    let (_, _, headers) = call(&app, "GET", "/gator?token=t0ken-for-the-tests", &[], None).await;
    assert_eq!(headers["location"], "gator");
    // Standalone, the overview is the root.
    let alone = web(&redis, WebConfig::new()).await;
    let (_, page, _) = call(&alone, "GET", "/dead", &[], None).await;
    assert!(
        page.as_str()
            .unwrap()
            .contains(r#"<a class="brand" href="./">"#)
    );
}

#[test]
fn the_binary_refuses_a_public_address_without_auth() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gator-web"))
        .args(["--bind", "0.0.0.0:0", "--redis-url", "redis://127.0.0.1:1"])
        .env_remove("GATOR_WEB_TOKEN")
        .env_remove("GATOR_WEB_BASIC_AUTH")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0:0 without authentication"),
        "{stderr}"
    );
    assert!(stderr.contains("--auth-token"), "{stderr}");
}

/// The binary, started with `args` on a free port; its address once it listens.
fn spawn_web(args: &[&str]) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gator-web"))
        .args(["--bind", "127.0.0.1:0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .trim()
        .strip_prefix("gator-web listening on http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    (child, address)
}

/// `GET path` over a plain TCP connection, with more header lines; the whole answer.
fn ask(address: &str, path: &str, headers: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

fn stop(mut child: std::process::Child) -> String {
    use std::io::Read;
    let _ = child.kill();
    let _ = child.wait();
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    stderr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_the_api_with_its_token() {
    let redis = RedisServer::start_single();
    let (child, address) = spawn_web(&["--redis-url", &redis.url(), "--auth-token", TOKEN]);
    let denied = ask(&address, "/api/overview", "");
    let allowed = ask(
        &address,
        "/api/overview",
        &format!("Authorization: Bearer {TOKEN}\r\n"),
    );
    stop(child);
    assert!(denied.starts_with("HTTP/1.1 401"), "{denied}");
    assert!(allowed.starts_with("HTTP/1.1 200"), "{allowed}");
    assert!(allowed.contains("\"processed\""), "{allowed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_reaches_redis_over_mutual_tls_with_its_flags() {
    let redis = gator_tests::TlsRedis::start(true);
    let (ca, cert, key) = (
        redis.certs.ca(),
        redis.certs.client_cert(),
        redis.certs.client_key(),
    );
    let (child, address) = spawn_web(&[
        "--redis-url",
        &redis.url("localhost"),
        "--redis-ca-cert",
        ca.to_str().unwrap(),
        "--redis-client-cert",
        cert.to_str().unwrap(),
        "--redis-client-key",
        key.to_str().unwrap(),
        "--auth-token",
        TOKEN,
    ]);
    let answer = ask(
        &address,
        "/api/overview",
        &format!("Authorization: Bearer {TOKEN}\r\n"),
    );
    let log = stop(child);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"version\""), "{answer}");
    assert!(
        !log.contains(gator_tests::TLS_PASSWORD),
        "the password leaked: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_answers_json_and_cancel_and_reply_act() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let later = SendEmail::call("later".into())
        .after(Duration::from_secs(3600))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let app = router(client, WebConfig::new().auth_token(TOKEN));
    let worker = TestWorker::start(&redis.url(), Some("web"), 1);
    catalogued(&gator_tests::client(&redis.url()).await, "send_email").await;
    wait_until("the worker to show in processes", WAIT, || async {
        get(&app, "/api/processes").await.as_array().unwrap().len() == 1
    })
    .await;
    let process = &get(&app, "/api/processes").await[0];
    assert_eq!(process["pid"], std::process::id());
    assert_eq!(process["concurrency"], 1);
    for span in ["hour", "day", "week"] {
        let history = get(&app, &format!("/api/history?span={span}&queue=web")).await;
        assert!(!history.as_array().unwrap().is_empty(), "{span}");
    }
    let (status, answer, _) = call(&app, "GET", "/api/history?span=year", &[BEARER], None).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("bad_request"))
    );
    assert_eq!(get(&app, "/api/flows").await, json!([]));
    assert_eq!(get(&app, "/api/limits").await["queues"], json!([]));
    assert_eq!(get(&app, "/api/cron").await["entries"], json!([]));
    let found = get(&app, "/api/search?q=later&places=scheduled&queue=web").await;
    assert_eq!(found["hits"][0]["jid"], later.as_str());

    // Cancel a waiting job: removed, and its page says cancelled; a second cancel conflicts.
    let (status, answer) = post(&app, &format!("/api/jobs/{later}/cancel"), json!({})).await;
    assert_eq!(
        (status, answer["cancelled"].as_str()),
        (StatusCode::OK, Some("removed"))
    );
    assert_eq!(status_of(&app, &later).await, "cancelled");
    let (status, answer) = post(&app, &format!("/api/jobs/{later}/cancel"), json!({})).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::CONFLICT, Some("conflict"))
    );

    // A reply nobody waits for yet is kept; the same key again is a duplicate.
    let reply = json!({"key": "approve:order-42", "value": {"approved": true}});
    let (status, answer) = post(&app, "/api/replies", reply.clone()).await;
    assert_eq!(
        (status, answer["delivery"].as_str()),
        (StatusCode::OK, Some("kept"))
    );
    let (_, answer) = post(&app, "/api/replies", reply).await;
    assert_eq!(answer["delivery"], "duplicate");
    let (status, answer) = post(&app, "/api/replies", json!({"key": "", "value": 1})).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("bad_request"))
    );
    worker.stop().await;
}

/// A filtered set page says how many entries match, not how many the set holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filtered_set_page_counts_its_matches() {
    let redis = RedisServer::start();
    let app = web(&redis, WebConfig::new().auth_token(TOKEN)).await;
    redis.cli(&["SADD", "gator:queues", "web"]);
    for (n, error) in [
        "smtp said no",
        "disk full",
        "smtp said no",
        "disk full",
        "timeout",
    ]
    .iter()
    .enumerate()
    {
        let payload = json!({
            "jid": format!("d{n}"), "job": "flaky", "args": [n], "queue": "web",
            "created_at": 1, "enqueued_at": 1, "attempt": 3, "error": error, "failed_at": 1
        });
        redis.cli(&[
            "ZADD",
            "gator:{web}:dead",
            &n.to_string(),
            &payload.to_string(),
        ]);
    }
    let all = get(&app, "/api/sets/dead").await;
    assert_eq!(
        (all["total"].as_u64(), all["set_size"].as_u64()),
        (Some(5), Some(5))
    );
    let smtp = get(&app, "/api/sets/dead?error=smtp&per_page=1").await;
    assert_eq!(smtp["total"], 2, "{smtp}");
    assert_eq!(smtp["total_exact"], true, "{smtp}");
    assert_eq!(smtp["set_size"], 5, "{smtp}");
    assert_eq!(
        smtp["entries"].as_array().unwrap().len(),
        1,
        "a page of one"
    );
    let by_job = get(&app, "/api/sets/dead?job=flaky&queue=web").await;
    assert_eq!(by_job["total"], 5, "{by_job}");
    let none = get(&app, "/api/sets/dead?job=doomed").await;
    assert_eq!(none["total"], 0, "{none}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_by_name_follows_the_job_catalogue_and_refuses_a_name_no_worker_runs() {
    let redis = RedisServer::start();
    let app = web(&redis, WebConfig::new().auth_token(TOKEN)).await;
    let worker = TestWorker::start(&redis.url(), Some("elsewhere"), 1);
    catalogued(&client(&redis.url()).await, "send_email").await;

    let catalogue = get(&app, "/api/catalogue").await;
    let mail = catalogue["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["definition"]["job"] == "send_email")
        .cloned()
        .unwrap_or_default();
    assert_eq!(mail["definition"]["queue"], "web", "{catalogue}");
    assert_eq!(mail["definition"]["params"][0]["type"], "String");
    assert_eq!(mail["runners"].as_array().map(Vec::len), Some(1));

    // A misspelt name is refused with the names there are; nothing is stored.
    let (status, refused) = post(
        &app,
        "/api/jobs",
        json!({"job": "send_emial", "args": ["a"]}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["code"], "unknown_job");
    assert!(
        refused["error"].as_str().unwrap().contains("send_email"),
        "{refused}"
    );
    // Arguments that do not fit are refused too.
    let (status, wrong) = post(
        &app,
        "/api/jobs",
        json!({"job": "send_email", "args": [1, 2]}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{wrong}");
    assert!(
        wrong["error"]
            .as_str()
            .unwrap()
            .contains("takes 1 argument"),
        "{wrong}"
    );
    let (status, _, _) = call(&app, "GET", "/api/queues/web", &[BEARER], None).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "nothing was sent to the queue"
    );

    // Without a queue, the catalogue's; forced, an unknown name is stored.
    let (status, sent) = post(
        &app,
        "/api/jobs",
        json!({"job": "send_email", "args": ["a"]}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{sent}");
    let (status, forced) = post(
        &app,
        "/api/jobs",
        json!({"job": "send_emial", "args": [], "queue": "web", "force": true}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{forced}");
    assert_eq!(get(&app, "/api/queues/web").await["info"]["size"], 2);
    worker.stop().await;
}
