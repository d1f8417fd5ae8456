//! `single-floor`: how much of an awaited single dispatch is Gator's own cost. It interleaves
//! rounds of three loops of one-at-a-time pushes against the same Redis, so the machine's
//! noise hits all three alike:
//! - Gator's `dispatch` (payload encoding, the shared multiplexed connection);
//! - a bare tokio `TcpStream` writing `RPUSH` and reading the reply, on the same runtime: the
//!   floor for any async client;
//! - a blocking `std` socket doing the same on its own thread, as redis-benchmark's one
//!   client does.

use crate::measure::report;
use anyhow::{Context, bail};
use gator_core::Client;
use redis::{ConnectionAddr, ConnectionInfo};
use std::io::{Read, Write};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Rounds; each runs every loop once, `n / ROUNDS` pushes each.
const ROUNDS: usize = 6;
const ORDERS: [[u8; 3]; 6] = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
];
const RAW_KEY: &str = "gator-bench:floor";

/// Per-push times in µs of the three loops.
#[derive(Default)]
struct Samples {
    gator: Vec<f64>,
    tokio_socket: Vec<f64>,
    blocking_socket: Vec<f64>,
}

/// Runs `n` pushes of each kind in [`ROUNDS`] interleaved rounds and reports their rates and
/// percentiles.
pub async fn single_floor<F, Fut>(
    client: &Client,
    queue: &str,
    n: usize,
    dispatch: F,
) -> anyhow::Result<()>
where
    F: Fn(i64) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let addr = tcp_addr(client.connection_info())?;
    let per_round = (n / ROUNDS).max(1);
    let mut samples = Samples::default();
    let mut tokio_socket = tokio::net::TcpStream::connect(&addr).await?;
    tokio_socket.set_nodelay(true)?;
    let blocking = std::net::TcpStream::connect(&addr)?;
    blocking.set_nodelay(true)?;
    let mut blocking_socket = Some(blocking);
    // Each round runs the three loops in another of their six orders, so each loop follows
    // each other loop equally often: what ran just before shifts the figures on a VM.
    let orders = ORDERS.iter().cycle().take(ROUNDS).flatten();
    for &kind in orders {
        match kind {
            0 => {
                for i in 0..per_round {
                    let started = Instant::now();
                    dispatch(i as i64).await?;
                    samples.gator.push(micros(started));
                }
            }
            1 => {
                for i in 0..per_round {
                    let started = Instant::now();
                    push(&mut tokio_socket, i).await?;
                    samples.tokio_socket.push(micros(started));
                }
            }
            _ => {
                let mut socket = blocking_socket.take().context("the blocking socket")?;
                let (socket, times) = tokio::task::spawn_blocking(move || {
                    let times = (0..per_round)
                        .map(|i| {
                            let started = Instant::now();
                            push_blocking(&mut socket, i).map(|()| micros(started))
                        })
                        .collect::<std::io::Result<Vec<f64>>>();
                    (socket, times)
                })
                .await?;
                blocking_socket = Some(socket);
                samples.blocking_socket.extend(times?);
            }
        }
    }
    redis::cmd("DEL")
        .arg(RAW_KEY)
        .arg(client.keys().queue(queue))
        .exec_async(&mut client.connection())
        .await?;

    let floor = rate(&samples.blocking_socket);
    let lines = [
        ("gator dispatch", &mut samples.gator),
        ("tokio socket", &mut samples.tokio_socket),
        ("blocking socket", &mut samples.blocking_socket),
    ]
    .map(|(name, times)| {
        times.sort_by(f64::total_cmp);
        format!(
            "{name:>16}: {:>7.0}/s ({:>3.0} % of the blocking socket), µs p10 {:.0} p50 {:.0} p90 {:.0} p99 {:.0}",
            rate(times),
            100.0 * rate(times) / floor,
            times[times.len() / 10],
            times[times.len() / 2],
            times[times.len() * 9 / 10],
            times[times.len() * 99 / 100],
        )
    });
    report(
        format!(
            r#"{{"phase":"single-floor","n":{},"gator_rate":{:.1},"tokio_socket_rate":{:.1},"blocking_socket_rate":{:.1}}}"#,
            samples.gator.len(),
            rate(&samples.gator),
            rate(&samples.tokio_socket),
            floor
        ),
        lines.join("\n"),
    );
    Ok(())
}

fn tcp_addr(info: &ConnectionInfo) -> anyhow::Result<String> {
    if info.redis_settings().password().is_some() {
        bail!("single-floor's bare sockets do not authenticate: use a Redis without a password");
    }
    match info.addr() {
        ConnectionAddr::Tcp(host, port) => Ok(format!("{host}:{port}")),
        other => bail!("single-floor needs a TCP address, not {other:?}"),
    }
}

async fn push(socket: &mut tokio::net::TcpStream, i: usize) -> anyhow::Result<()> {
    socket.write_all(&rpush(i)).await?;
    let mut reply = [0u8; 64];
    let mut read = 0;
    // An integer reply, `:<n>\r\n`.
    while !reply[..read].ends_with(b"\r\n") {
        let got = socket.read(&mut reply[read..]).await?;
        if got == 0 {
            bail!("redis closed the connection");
        }
        read += got;
    }
    Ok(())
}

fn push_blocking(socket: &mut std::net::TcpStream, i: usize) -> std::io::Result<()> {
    socket.write_all(&rpush(i))?;
    let mut reply = [0u8; 64];
    let mut read = 0;
    while !reply[..read].ends_with(b"\r\n") {
        let got = socket.read(&mut reply[read..])?;
        if got == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        read += got;
    }
    Ok(())
}

fn rpush(i: usize) -> Vec<u8> {
    redis::cmd("RPUSH").arg(RAW_KEY).arg(i).get_packed_command()
}

fn micros(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e6
}

/// Pushes per second from per-push times in µs.
fn rate(times: &[f64]) -> f64 {
    times.len() as f64 * 1e6 / times.iter().sum::<f64>()
}
