//! Item 2 of issue 29: reads without bounds. Whatever page is asked, a listing reads a bounded
//! number of entries from Redis, counted here by the bytes Redis sends (`INFO stats`), never by
//! a clock; a deep page is reached by cursor, and a page number past the bound is a clear 400.

use crate::common::{TOKEN, Web, bearer, json, status};
use gator_tests::RedisServer;

const QUEUES: usize = 20;
const PER_QUEUE: usize = 300;

/// 20 queues of 300 dead jobs each, every entry some 460 bytes, died one ms apart.
async fn fill(redis: &RedisServer) {
    let mut conn = redis.client().await;
    for q in 0..QUEUES {
        let mut pipe = redis::pipe();
        for i in 0..PER_QUEUE {
            let jid = format!("0193a5f0-0000-7000-8000-{q:04}{i:08}");
            let entry = serde_json::json!({
                "jid": jid, "job": "send_email", "args": ["p".repeat(300)],
                "queue": format!("q{q:02}"), "created_at": 1, "enqueued_at": 1,
                "error": "failed", "attempt": 1,
            });
            let score = 1_764_000_000_000u64 + (i * QUEUES + q) as u64;
            pipe.zadd(format!("gator:{{q{q:02}}}:dead"), entry.to_string(), score);
        }
        pipe.sadd("gator:queues", format!("q{q:02}"));
        pipe.query_async::<()>(&mut conn).await.unwrap();
    }
}

/// The bytes Redis has sent its clients so far.
fn sent(redis: &RedisServer) -> u64 {
    redis
        .cli(&["INFO", "stats"])
        .lines()
        .find_map(|line| line.strip_prefix("total_net_output_bytes:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_page_number_is_refused_without_reading_the_sets_and_u64_max_does_not_panic() {
    let web = Web::start(&["--auth-token", TOKEN]);
    fill(&web.redis).await;
    let everything = (QUEUES * PER_QUEUE * 460) as u64;
    for page in ["40000", "18446744073709551615"] {
        let before = sent(&web.redis);
        let answer = web.get(&format!("/api/sets/dead?page={page}"), &bearer());
        let read = sent(&web.redis) - before;
        assert_eq!(status(&answer), 400, "page {page}: {answer}");
        assert!(
            json(&answer)["error"].as_str().unwrap().contains("cursor"),
            "{answer}"
        );
        assert!(
            read < everything / 20,
            "page {page} read {read} bytes of Redis"
        );
    }
    // One queue pages by rank: any depth is a cheap empty page.
    let answer = web.get(
        "/api/sets/dead?queue=q03&page=18446744073709551615",
        &bearer(),
    );
    assert_eq!(status(&answer), 200, "{answer}");
    assert_eq!(json(&answer)["entries"], serde_json::json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_entry_is_reached_by_cursor_once_in_order_each_page_reading_a_bounded_amount() {
    let web = Web::start(&["--auth-token", TOKEN]);
    fill(&web.redis).await;
    let (mut cursor, mut seen, mut pages) = (None::<String>, Vec::new(), 0);
    // A page reads at most `per_page` entries of each queue: 20 × 25 × some 500 bytes (the
    // entry, its score and RESP's framing), a tenth of all there is.
    let bound = (QUEUES * 25 * 600) as u64;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/sets/dead?per_page=25&cursor={c}"),
            None => "/api/sets/dead?per_page=25".to_owned(),
        };
        let before = sent(&web.redis);
        let answer = web.get(&path, &bearer());
        let read = sent(&web.redis) - before;
        assert_eq!(status(&answer), 200, "{answer}");
        assert!(read < bound, "page {pages} read {read} bytes");
        let page = json(&answer);
        assert_eq!(page["bounds"]["read_per_queue"], 25, "{}", page["bounds"]);
        for entry in page["entries"].as_array().unwrap() {
            seen.push(entry["score_ms"].as_u64().unwrap());
        }
        pages += 1;
        assert!(pages <= QUEUES * PER_QUEUE / 25 + 1, "the pages never end");
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let expected: Vec<u64> = (0..(QUEUES * PER_QUEUE) as u64)
        .map(|n| 1_764_000_000_000 + n)
        .collect();
    assert_eq!(seen, expected, "each entry once, in order of death");
}
