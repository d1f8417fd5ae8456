//! Item 1 of issue 45: clients that send requests and never read the answers. 520 of them
//! from one address, each pipelining 1,200 `GET /` with a 2 KB receive buffer, took every one
//! of the 512 connections, and held them. Now a write that makes no progress ends its
//! connection after `--write-timeout`, a pipeline is cut after `--max-pipelined-requests`
//! answers, and one address holds at most `--max-connections-per-client` connections.

use super::closed_within;
use crate::common::{ANSWER_DEADLINE, TOKEN, Web, bearer, header, json, read_all, status};
use gator_tests::wait_until;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

/// `count` requests for `path`, back to back, as a pipelining client sends them in one write.
fn pipeline(web: &Web, path: &str, count: usize) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", web.address).repeat(count)
}

/// Whether the server refused `stream` (closed or reset it) rather than answering on it.
fn refused(stream: &mut TcpStream) -> bool {
    let mut buffer = [0; 1024];
    match stream.read(&mut buffer) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_readers_from_one_address_hold_only_their_share_and_another_address_is_served() {
    // Timeouts and pipeline cap far away: only the per-address cap can keep a connection for
    // 127.0.0.1.
    let web = Web::start(&[
        "--max-connections",
        "16",
        "--max-connections-per-client",
        "4",
        "--header-timeout",
        "60s",
        "--write-timeout",
        "60s",
        "--max-pipelined-requests",
        "1000",
    ]);
    let requests = pipeline(&web, "/", 50);
    let mut attackers = Vec::new();
    for _ in 0..20 {
        let mut stream = web.connect_from("127.0.0.2", Some(2048)).await;
        // Refused at once, the write may fail: what counts is what the server does.
        let _ = stream.write_all(requests.as_bytes());
        attackers.push(stream);
    }
    // The server takes connections in order: once it refused the last, it saw them all.
    assert!(refused(attackers.last_mut().unwrap()), "the 20th was kept");
    let mut other = web.connect_from("127.0.0.1", None).await;
    let request = format!(
        "GET /api/queues HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        web.address
    );
    let _ = other.write_all(request.as_bytes());
    let answer = read_all(&mut other);
    assert_eq!(status(&answer), 200, "127.0.0.1 is locked out: {answer:?}");
    let held = attackers.iter_mut().map(refused).filter(|r| !r).count();
    assert_eq!(held, 4, "connections 127.0.0.2 holds");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_its_answers_is_closed_after_the_write_timeout() {
    // One connection in all, no pipeline cap: only the write timeout can give it back.
    let web = Web::start(&[
        "--max-connections",
        "1",
        "--write-timeout",
        "1s",
        "--header-timeout",
        "60s",
        "--max-pipelined-requests",
        "100000",
    ]);
    let mut stalled = web.connect_from("127.0.0.2", Some(2048)).await;
    // 1,000 answers of 6.7 KB: far more than the kernel's buffers hold for a 2 KB reader.
    stalled
        .write_all(pipeline(&web, "/assets/style.css", 1000).as_bytes())
        .unwrap();
    wait_until(
        "the stalled connection to be closed and its slot served again",
        ANSWER_DEADLINE,
        || async { status(&web.get("/api/queues", "")) == 200 },
    )
    .await;
    assert!(
        closed_within(&mut stalled, ANSWER_DEADLINE),
        "the stalled client sees its connection end"
    );
}

#[test]
fn a_slow_answer_is_not_cut_by_the_write_timeout_only_by_the_request_timeout() {
    // The handler waits on a frozen Redis for longer than the write timeout: nothing is being
    // written meanwhile, so the connection stays and gets the request timeout's 503.
    let web = Web::start(&[
        "--auth-token",
        TOKEN,
        "--write-timeout",
        "1s",
        "--body-timeout",
        "2s",
        "--request-timeout",
        "3s",
    ]);
    web.redis.pause();
    let answer = web.get("/api/overview", &bearer());
    web.redis.resume();
    assert_eq!(status(&answer), 503, "{answer:?}");
    assert_eq!(json(&answer)["code"], "timeout", "{answer}");
}

/// Reads one answer of a keep-alive connection: its head and its `Content-Length` of body.
fn read_answer(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut buffer = [0; 4096];
    loop {
        let text = String::from_utf8_lossy(&answer).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = header(&text, "content-length").map_or(0, |l| l.parse().unwrap());
            if body.len() >= length {
                return format!("{head}\r\n\r\n{body}");
            }
        }
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return text,
            Ok(n) => answer.extend_from_slice(&buffer[..n]),
        }
    }
}

#[test]
fn a_pipeline_past_the_cap_is_answered_up_to_it_then_closed_and_a_client_that_waits_is_not() {
    let web = Web::start(&["--max-pipelined-requests", "5"]);
    let mut stream = web.connect();
    stream
        .write_all(pipeline(&web, "/api/queues", 50).as_bytes())
        .unwrap();
    let answers = read_all(&mut stream);
    let each: Vec<String> = answers
        .split("HTTP/1.1 ")
        .skip(1)
        .map(|a| format!("HTTP/1.1 {a}"))
        .collect();
    assert_eq!(each.len(), 5, "answers to 50 pipelined requests: {answers}");
    assert!(each.iter().all(|a| status(a) == 200), "{answers}");
    let last = each.last().unwrap();
    assert_eq!(
        header(last, "connection").as_deref(),
        Some("close"),
        "{last}"
    );
    // One that waits for each answer before it asks again is never cut.
    let mut stream = web.connect();
    let request = format!("GET /api/queues HTTP/1.1\r\nHost: {}\r\n\r\n", web.address);
    for i in 0..20 {
        stream.write_all(request.as_bytes()).unwrap();
        let answer = read_answer(&mut stream);
        assert_eq!(status(&answer), 200, "request {i}: {answer}");
        assert_eq!(header(&answer, "connection"), None, "request {i}: {answer}");
    }
}
