//! Item 6 of issue 29: a token cannot be guessed at speed, a weak one is refused, and the login
//! cookie is a session, not the secret.

use crate::common::{TOKEN, Web, bare, bearer, header, json, status};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use gator_tests::RedisServer;
use gator_web::{ConfigError, WebConfig, router, try_router};
use std::net::SocketAddr;
use tower::ServiceExt;

/// Fifty wrong tokens from one address; their statuses, in order.
fn guess(web: &Web, times: usize) -> Vec<u16> {
    (0..times)
        .map(|i| {
            let wrong = format!("Authorization: Bearer wrong-guess-{i:04}-of-the-token\r\n");
            status(&web.get("/api/overview", &wrong))
        })
        .collect()
}

/// `GET /api/overview` with the right token from 127.0.0.2, another client address.
async fn from_another_address(web: &Web) -> String {
    let mut stream = web.connect_from("127.0.0.2", None).await;
    let request = format!(
        "GET /api/overview HTTP/1.1\r\nHost: {}\r\n{}Connection: close\r\n\r\n",
        web.address,
        bearer()
    );
    std::io::Write::write_all(&mut stream, request.as_bytes()).unwrap();
    crate::common::read_all(&mut stream)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guessing_gets_a_burst_of_tries_then_429_with_retry_after_unchecked_per_address() {
    let web = Web::start(&["--auth-token", TOKEN]);
    let statuses = guess(&web, 50);
    let count = |code| statuses.iter().filter(|s| **s == code).count();
    assert_eq!((count(401), count(429)), (10, 40), "{statuses:?}");
    let answer = web.get("/api/overview", &bearer());
    assert_eq!(
        status(&answer),
        429,
        "the right token is not even checked: {answer}"
    );
    assert_eq!(json(&answer)["code"], "throttled");
    let wait: u64 = header(&answer, "retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    let other = from_another_address(&web).await;
    assert_eq!(
        status(&other),
        200,
        "another address has its own bucket: {other}"
    );
}

#[test]
fn a_cross_site_guess_is_answered_as_any_guess_counted_throttled_and_logged() {
    let web = Web::start(&[
        "--auth-token",
        TOKEN,
        "--basic-auth",
        "ops:a-password-of-20-ch",
    ]);
    let cross = "Sec-Fetch-Site: cross-site\r\n";
    // From another site, the right password is refused exactly as a wrong one (which counts).
    let basic = |encoded: &str| format!("Authorization: Basic {encoded}\r\n{cross}");
    let right = web.get("/api/overview", &basic("b3BzOmEtcGFzc3dvcmQtb2YtMjAtY2g="));
    let wrong = web.get(
        "/api/overview",
        &basic("b3BzOmEtd3JvbmctcGFzc3dvcmQtZ3Vlc3M="),
    );
    assert_eq!(
        (status(&right), json(&right)),
        (status(&wrong), json(&wrong))
    );
    assert_eq!(json(&wrong)["code"], "cross_site", "{wrong}");
    // A bearer token is no browser's: it is judged as it would be without the header.
    let started = std::time::Instant::now();
    let statuses: Vec<u16> = (0..300)
        .map(|i| {
            let guess = format!("Authorization: Bearer wrong-guess-{i:04}-of-the-token\r\n");
            status(&web.get("/api/overview", &format!("{guess}{cross}")))
        })
        .collect();
    // The burst is 10 (the wrong password was one), then one more every 6 s that passed.
    let refills = started.elapsed().as_secs() / 6;
    let count = |code| statuses.iter().filter(|s| **s == code).count();
    assert!(statuses[..9].iter().all(|s| *s == 401), "{statuses:?}");
    assert_eq!(statuses[9], 429, "{statuses:?}");
    assert_eq!(count(401) + count(429), 300, "{statuses:?}");
    assert!(count(401) <= 9 + refills as usize, "{statuses:?}");
    let answer = web.get("/api/overview", &format!("{}{cross}", bearer()));
    assert_eq!(
        status(&answer),
        429,
        "the address waits, right token or not: {answer}"
    );
    let log = web.stop();
    let logged = log
        .lines()
        .filter(|l| l.contains("failed dashboard login") && l.contains("127.0.0.1"))
        .count();
    assert_eq!(logged, 1, "{log}");
}

#[test]
fn failed_logins_are_logged_once_then_summed_up_not_line_by_line() {
    let web = Web::start(&["--auth-token", TOKEN]);
    guess(&web, 50);
    let log = web.stop();
    let lines = log
        .lines()
        .filter(|l| l.contains("failed dashboard login"))
        .count();
    assert_eq!(lines, 1, "{log}");
    assert!(
        log.contains("127.0.0.1"),
        "the first names its address: {log}"
    );
}

#[tokio::test]
async fn mounted_without_connect_info_every_client_shares_one_bucket() {
    let redis = RedisServer::start();
    let app = router(
        gator_tests::client(&redis.url()).await,
        WebConfig::new().auth_token(TOKEN),
    );
    let ask = |token: &str, peer: Option<SocketAddr>| {
        let mut request = Request::get("/api/queues")
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        if let Some(peer) = peer {
            request.extensions_mut().insert(ConnectInfo(peer));
        }
        let app = app.clone();
        async move { app.oneshot(request).await.unwrap().status() }
    };
    for _ in 0..10 {
        assert_eq!(
            ask("a-wrong-token-guessed", None).await,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(
        ask(TOKEN, None).await,
        StatusCode::TOO_MANY_REQUESTS,
        "everyone waits"
    );
    let peer = "10.1.2.3:4567".parse().ok();
    assert_eq!(
        ask(TOKEN, peer).await,
        StatusCode::OK,
        "a known peer has its own bucket"
    );
}

/// Starts the binary with `args` (and a Redis it never reaches); asserts it exits 2 before
/// serving, and returns what it said on stderr.
fn refused_at_start(args: &[&str]) -> String {
    let out = bare()
        .args([
            "--bind",
            "127.0.0.1:0",
            "--redis-url",
            "redis://127.0.0.1:1",
        ])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    stderr
}

#[test]
fn a_token_or_password_shorter_than_16_characters_or_blank_is_refused_at_start_with_exit_2() {
    let weak: [&[&str]; 4] = [
        &["--auth-token", "fifteen-chars-x"],
        &["--auth-token", "                    "],
        &["--auth-token", ""],
        &["--basic-auth", "ops:fifteen-chars-x"],
    ];
    for args in weak {
        let stderr = refused_at_start(args);
        assert!(
            stderr.contains("too weak") && stderr.contains("16"),
            "{stderr}"
        );
    }
}

#[test]
fn a_token_or_password_of_few_or_repetitive_characters_is_refused_at_start_with_exit_2() {
    let weak: [(&[&str], &str); 4] = [
        (
            &["--auth-token", "aaaaaaaaaaaaaaaa"],
            "fewer than 6 different characters",
        ),
        (
            &["--auth-token", "abcdefghijklmnopqrst"],
            "runs or sequences",
        ),
        (&["--auth-token", "x7#kQ2x7#kQ2x7#kQ2"], "piece repeated"),
        (&["--basic-auth", "ops:passwordpassword"], "piece repeated"),
    ];
    for (args, why) in weak {
        let stderr = refused_at_start(args);
        assert!(
            stderr.contains("too weak") && stderr.contains(why),
            "{args:?}: {stderr}"
        );
    }
}

#[tokio::test]
async fn the_router_refuses_a_repetitive_secret_for_embedders_too() {
    let redis = RedisServer::start();
    let client = gator_tests::client(&redis.url()).await;
    let refused = try_router(client, WebConfig::new().auth_token("a".repeat(16))).err();
    assert!(
        matches!(refused, Some(ConfigError::WeakSecret { .. })),
        "{refused:?}"
    );
    let reason = refused.unwrap().to_string();
    assert!(reason.contains("different characters"), "{reason}");
}

#[tokio::test]
async fn the_router_refuses_a_weak_secret_for_embedders_too() {
    let redis = RedisServer::start();
    let client = gator_tests::client(&redis.url()).await;
    let weak = WebConfig::new().auth_token("short");
    assert!(matches!(
        try_router(client.clone(), weak.clone()),
        Err(ConfigError::WeakSecret { .. })
    ));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| router(client, weak)));
    assert!(panicked.is_err());
}

#[test]
fn the_login_cookie_is_a_session_not_the_token_and_a_new_token_ends_it() {
    let web = Web::start(&["--auth-token", TOKEN, "--session-ttl", "1h"]);
    let login = web.get(
        &format!("/dead?token={TOKEN}&queue=web"),
        "X-Forwarded-Proto: https\r\n",
    );
    assert_eq!(status(&login), 303, "{login}");
    assert_eq!(header(&login, "location").unwrap(), "dead?queue=web");
    let set = header(&login, "set-cookie").unwrap();
    for part in [
        "gator_session=",
        "HttpOnly",
        "SameSite=Strict",
        "Max-Age=3600",
        "Secure",
    ] {
        assert!(set.contains(part), "{part}: {set}");
    }
    let cookie = set.split(';').next().unwrap().to_owned();
    let hex: String = TOKEN.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(
        !cookie.contains(TOKEN) && !cookie.contains(&hex),
        "the token leaked: {cookie}"
    );
    let with_cookie = format!("Cookie: {cookie}\r\n");
    assert_eq!(status(&web.get("/api/overview", &with_cookie)), 200);
    let plain = web.get(&format!("/?token={TOKEN}"), "");
    assert!(
        !header(&plain, "set-cookie").unwrap().contains("Secure"),
        "{plain}"
    );
    drop(web);
    // The token changed: the old session is no more; --secure-cookies marks it Secure itself.
    let web = Web::start(&[
        "--auth-token",
        "another-token-for-the-tests",
        "--secure-cookies",
    ]);
    let answer = web.get("/api/overview", &with_cookie);
    assert_eq!(status(&answer), 401, "{answer}");
    let login = web.get("/?token=another-token-for-the-tests", "");
    assert!(
        header(&login, "set-cookie").unwrap().contains("Secure"),
        "{login}"
    );
}

#[test]
fn the_login_redirect_never_leaves_the_dashboard() {
    let web = Web::start(&["--auth-token", TOKEN]);
    for path in [
        "/https:evil.example",
        "//evil.example",
        "/https:%2F%2Fevil.example",
        "/%2F%2Fevil.example",
        "/\\evil.example",
        "/dead/..//evil.example",
    ] {
        let answer = web.get(&format!("{path}?token={TOKEN}"), "");
        if let Some(location) = header(&answer, "location") {
            let off_site = location.contains(':')
                || location.starts_with('/')
                || location.contains('\\')
                || location.contains("//");
            assert!(!off_site, "{path} sends the browser to {location:?}");
        }
    }
    let answer = web.get(&format!("/queues?token={TOKEN}&q=a"), "");
    assert_eq!(
        header(&answer, "location").unwrap(),
        "queues?q=a",
        "{answer}"
    );
}

#[test]
fn insecure_no_auth_logs_a_warning_at_start() {
    let web = Web::start(&["--insecure-no-auth"]);
    let log = web.stop();
    let warning = log
        .lines()
        .find(|l| l.contains("WARN") && l.contains("--insecure-no-auth"));
    assert!(warning.is_some(), "{log}");
}
