//! Item 7 of issue 29: a connection cannot be held forever, idle or trickling, nor can a body
//! claimed huge or sent slowly; and every answer carries the safety headers. Item 1 of issue 45
//! (slow readers, pipelines, one address's share of the connections) is in `slow_readers`.

mod slow_readers;

use crate::common::{ANSWER_DEADLINE, TOKEN, Web, bearer, header, json, read_all, status};
use gator_tests::wait_until;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Whether the server closed `stream` (end of file or reset) within `deadline`; whatever it
/// answered before closing is ignored.
pub(crate) fn closed_within(stream: &mut TcpStream, deadline: Duration) -> bool {
    stream.set_read_timeout(Some(deadline)).unwrap();
    let mut buffer = [0; 4096];
    let end = Instant::now() + deadline;
    while Instant::now() < end {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn a_slow_loris_sender_is_cut_off_by_the_header_timeout() {
    let web = Web::start(&["--header-timeout", "1s"]);
    let mut stream = web.connect();
    // A byte every 200 ms: each one would reset a per-read timeout; the head's deadline holds.
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let head = format!(
        "GET /api/queues HTTP/1.1\r\nHost: {}\r\nX-Padding: {}",
        web.address,
        "a".repeat(100)
    );
    let started = Instant::now();
    let mut cut_off = false;
    for byte in head.bytes() {
        if stream.write_all(&[byte]).is_err() {
            cut_off = true;
            break;
        }
        let mut buffer = [0; 1024];
        match stream.read(&mut buffer) {
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            _ => {
                cut_off = true;
                break;
            }
        }
    }
    assert!(
        cut_off,
        "still connected after {:?} of trickling",
        started.elapsed()
    );
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
    let web = Web::start(&["--header-timeout", "1s"]);
    let mut stream = web.connect();
    write!(
        stream,
        "GET /api/queues HTTP/1.1\r\nHost: {}\r\n\r\n",
        web.address
    )
    .unwrap();
    let mut answer = [0; 4096];
    let n = stream.read(&mut answer).unwrap();
    assert!(
        answer[..n].starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer[..n])
    );
    assert!(
        closed_within(&mut stream, ANSWER_DEADLINE),
        "kept open while idle"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_are_closed_at_once_and_served_again_once_one_ends() {
    // Each from an address of its own, two allowed per address: only the global cap refuses.
    let web = Web::start(&[
        "--max-connections",
        "3",
        "--max-connections-per-client",
        "2",
        "--header-timeout",
        "60s",
    ]);
    let mut idle = Vec::new();
    for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4"] {
        idle.push(web.connect_from(source, None).await);
    }
    let mut fourth = web.connect_from("127.0.0.5", None).await;
    let _ = write!(
        fourth,
        "GET /api/queues HTTP/1.1\r\nHost: {}\r\n\r\n",
        web.address
    );
    let answer = read_all(&mut fourth);
    assert_eq!(answer, "", "the fourth connection was served: {answer}");
    assert!(
        !closed_within(&mut idle[0], Duration::from_millis(100)),
        "the first three stay"
    );
    idle.pop();
    wait_until(
        "a connection to be served again",
        ANSWER_DEADLINE,
        || async { status(&web.get("/api/queues", "")) == 200 },
    )
    .await;
}

/// `POST /api/queues/web/jobs` headers with the bearer token and this framing header.
fn enqueue_head(web: &Web, framing: &str) -> String {
    format!(
        "POST /api/queues/web/jobs HTTP/1.1\r\nHost: {}\r\n{}Content-Type: application/json\r\n{framing}\r\n",
        web.address,
        bearer()
    )
}

#[test]
fn a_claimed_one_gigabyte_body_is_answered_413_at_once_without_waiting_for_it() {
    // Deadlines far past ANSWER_DEADLINE: only an answer that does not wait for the body passes.
    let web = Web::start(&[
        "--auth-token",
        TOKEN,
        "--body-timeout",
        "5m",
        "--request-timeout",
        "10m",
    ]);
    let answer = web.send(&enqueue_head(&web, "Content-Length: 1000000000\r\n"));
    assert_eq!(status(&answer), 413, "{answer}");
    assert_eq!(json(&answer)["code"], "payload_too_large", "{answer}");
}

#[test]
fn a_chunked_body_past_the_limit_is_cut_off_with_413() {
    let web = Web::start(&["--auth-token", TOKEN, "--max-body-bytes", "1000"]);
    let chunk = format!(
        r#"{{"force": true, "job": "send_email", "args": ["{}"]}}"#,
        "x".repeat(4000)
    );
    let request = format!(
        "{}{:x}\r\n{chunk}\r\n0\r\n\r\n",
        enqueue_head(&web, "Transfer-Encoding: chunked\r\nConnection: close\r\n"),
        chunk.len()
    );
    let answer = web.send(&request);
    assert_eq!(status(&answer), 413, "{answer}");
    assert_eq!(json(&answer)["code"], "payload_too_large", "{answer}");
}

/// Sends the head of an enqueue that claims a body of 1,000 bytes, then a byte of it every
/// 200 ms; the answer, once it is complete, the server closes, or `deadline` passes.
fn trickle_a_body(web: &Web, deadline: Duration) -> String {
    let mut stream = web.connect();
    stream
        .write_all(enqueue_head(web, "Content-Length: 1000\r\n").as_bytes())
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut answer = Vec::new();
    let end = Instant::now() + deadline;
    while Instant::now() < end && !answer.ends_with(b"}") {
        let _ = stream.write_all(b" ");
        let mut buffer = [0; 4096];
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buffer[..n]),
            Err(_) => {}
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn a_body_sent_slowly_is_cut_off_by_the_body_timeout() {
    let web = Web::start(&["--auth-token", TOKEN, "--body-timeout", "1s"]);
    // A byte every 200 ms would take 200 s; the answer must come long before.
    let answer = trickle_a_body(&web, ANSWER_DEADLINE);
    assert_eq!(status(&answer), 408, "{answer}");
    assert_eq!(json(&answer)["code"], "request_timeout", "{answer}");
}

#[test]
fn a_body_sent_slowly_under_the_default_timeouts_is_answered_408_at_the_body_timeout_not_503() {
    // The defaults, as an operator runs it: the body's deadline (10 s) must come first.
    let web = Web::start(&["--auth-token", TOKEN]);
    let answer = trickle_a_body(&web, Duration::from_secs(45));
    assert_eq!(status(&answer), 408, "{answer}");
    assert_eq!(json(&answer)["code"], "request_timeout", "{answer}");
}

#[test]
fn a_request_past_the_request_timeout_is_answered_503_timeout() {
    let web = Web::start(&[
        "--auth-token",
        TOKEN,
        "--body-timeout",
        "500ms",
        "--request-timeout",
        "1s",
    ]);
    assert_eq!(status(&web.get("/api/overview", &bearer())), 200);
    // Redis frozen: the read would wait for the client's own 5 s response timeout.
    web.redis.pause();
    let answer = web.get("/api/overview", &bearer());
    web.redis.resume();
    assert_eq!(status(&answer), 503, "{answer}");
    assert_eq!(json(&answer)["code"], "timeout", "{answer}");
}

#[test]
fn every_answer_says_nosniff_and_no_referrer_and_api_answers_are_not_stored() {
    let web = Web::start(&["--auth-token", TOKEN, "--max-body-bytes", "10"]);
    let answers = [
        ("a read", web.get("/api/queues", &bearer())),
        ("a page", web.get("/", &bearer())),
        ("a 401", web.get("/api/queues", "")),
        ("a 404", web.get("/api/nothing-here", &bearer())),
        (
            "a 413",
            web.send(&enqueue_head(
                &web,
                "Content-Length: 11\r\nConnection: close\r\n",
            )),
        ),
    ];
    for (what, answer) in &answers {
        assert_eq!(
            header(answer, "x-content-type-options").as_deref(),
            Some("nosniff"),
            "{what}: {answer}"
        );
        assert_eq!(
            header(answer, "referrer-policy").as_deref(),
            Some("no-referrer"),
            "{what}"
        );
        if what != &"a page" {
            assert_eq!(
                header(answer, "cache-control").as_deref(),
                Some("no-store"),
                "{what}"
            );
        }
    }
    let asset = web.get("/assets/style.css", &bearer());
    assert_eq!(
        header(&asset, "cache-control").as_deref(),
        Some("no-cache"),
        "{asset}"
    );
}
