//! Reading a worker's Prometheus endpoint (`--metrics-bind`) as a scraper does.

use std::io::{Read, Write};
use std::time::Duration;

/// `GET /metrics` from 127.0.0.1:`port`, as Prometheus scrapes it: the whole response
/// (headers and body), or `None` while nothing answers there.
pub fn scrape(port: u16) -> Option<String> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut body = String::new();
    stream.read_to_string(&mut body).ok()?;
    Some(body)
}
