//! What one connection is doing, as its socket sees it: whether a write of an answer is
//! waiting for the client to read (and since when), and how many requests it has had answered
//! since a read last had to wait for the client to send more. [`Watched`] records both as
//! hyper reads and writes; [`Watch::stalled`] and [`Watch::request`] act on them.
//!
//! Only the socket knows: a handler still working on its answer writes nothing, so it never
//! looks stalled (the request timeout bounds it), and a pipelining client is told apart from a
//! keep-alive one by whether the server ever waits for its next request.
//!
//! A connection that ends while a write waits for its client (the watchdog's doing, or the
//! header timeout's) is reset rather than closed: the kernel drops the answers the client did
//! not read at once, instead of keeping them for minutes in a closed socket that probes a
//! shut window.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// One connection's progress, shared by its socket ([`Watched`]), its service and its
/// watchdog.
#[derive(Debug)]
pub(super) struct Watch {
    started: Instant,
    /// When a write started to wait for the client, as milliseconds since `started` plus one;
    /// 0 while no write waits.
    blocked_since: AtomicU64,
    /// Requests received since a read last had to wait for the client.
    in_a_row: AtomicUsize,
}

impl Watch {
    pub(super) fn new() -> Arc<Watch> {
        Arc::new(Watch {
            started: Instant::now(),
            blocked_since: AtomicU64::new(0),
            in_a_row: AtomicUsize::new(0),
        })
    }

    /// One more request: whether it is the `cap`-th in a row, whose answer must end the
    /// connection.
    pub(super) fn request(&self, cap: usize) -> bool {
        self.in_a_row.fetch_add(1, Relaxed) + 1 >= cap
    }

    /// Completes once a write has waited `timeout` for the client without a byte going out.
    /// Wakes once per `timeout` while nothing waits, then at the waiting write's deadline.
    pub(super) async fn stalled(&self, timeout: Duration) {
        loop {
            let since = self.blocked_since.load(Relaxed);
            if since == 0 {
                tokio::time::sleep(timeout).await;
                continue;
            }
            let deadline = self.started + Duration::from_millis(since - 1) + timeout;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    }

    /// A write was polled: it waits for the client (`pending`), or bytes went out.
    fn wrote(&self, pending: bool) {
        if !pending {
            self.blocked_since.store(0, Relaxed);
            return;
        }
        self.waits();
    }

    /// A write, flush or shutdown waits for the client. A flush or shutdown that goes through
    /// is no progress: a socket shut for writing may still hold what its client did not read.
    fn waits(&self) {
        let elapsed = self.started.elapsed().as_millis();
        let now = u64::try_from(elapsed).unwrap_or(u64::MAX - 1) + 1;
        // Only the first wait sets it: a write polled again is still the same wait.
        let _ = self
            .blocked_since
            .compare_exchange(0, now, Relaxed, Relaxed);
    }
}

/// A socket that can be closed with a reset.
pub(super) trait Reset {
    /// Makes closing the socket reset it (`SO_LINGER` 0): what it still holds to send is
    /// dropped. Best effort.
    fn reset_on_close(&self);
}

impl Reset for TcpStream {
    fn reset_on_close(&self) {
        let _ = self.set_zero_linger();
    }
}

/// A socket that tells its [`Watch`] what its reads and writes did.
#[derive(Debug)]
pub(super) struct Watched<T: Reset> {
    io: T,
    watch: Arc<Watch>,
}

impl<T: Reset> Watched<T> {
    pub(super) fn new(io: T, watch: Arc<Watch>) -> Watched<T> {
        Watched { io, watch }
    }
}

impl<T: Reset> Drop for Watched<T> {
    fn drop(&mut self) {
        if self.watch.blocked_since.load(Relaxed) != 0 {
            self.io.reset_on_close();
        }
    }
}

impl<T: AsyncRead + Reset + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if polled.is_pending() {
            // The server waits for the client: whatever it sent before was not a pipeline.
            self.watch.in_a_row.store(0, Relaxed);
        }
        polled
    }
}

impl<T: AsyncWrite + Reset + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch.wrote(polled.is_pending());
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.watch.wrote(polled.is_pending());
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        if polled.is_pending() {
            self.watch.waits();
        }
        polled
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_shutdown(cx);
        if polled.is_pending() {
            self.watch.waits();
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    impl Reset for DuplexStream {
        fn reset_on_close(&self) {}
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_the_client_does_not_take_is_stalled_after_the_timeout_not_before() {
        let (ours, mut theirs) = tokio::io::duplex(16);
        let watch = Watch::new();
        let mut socket = Watched::new(ours, watch.clone());
        let timeout = Duration::from_secs(5);
        // Sixteen bytes fit; the rest waits for a reader.
        let write = tokio::spawn(async move { socket.write_all(&[0; 64]).await });
        tokio::task::yield_now().await;
        let started = Instant::now();
        tokio::time::sleep(Duration::from_secs(3)).await;
        // The client reads some: progress, the wait starts again.
        let mut some = [0; 16];
        theirs.read_exact(&mut some).await.unwrap();
        tokio::task::yield_now().await;
        watch.stalled(timeout).await;
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_secs(8) && waited < Duration::from_secs(9),
            "{waited:?}"
        );
        write.abort();
    }

    #[tokio::test]
    async fn the_cap_th_request_in_a_row_ends_the_connection_and_a_wait_starts_the_count_again() {
        let (ours, _theirs) = tokio::io::duplex(16);
        let watch = Watch::new();
        let mut socket = Watched::new(ours, watch.clone());
        assert!(!watch.request(3) && !watch.request(3));
        // Nothing to read: the server waits for the client, so the count starts again.
        let read = tokio::time::timeout(Duration::ZERO, socket.read(&mut [0; 8])).await;
        assert!(read.is_err(), "the read waited");
        assert!(!watch.request(3) && !watch.request(3));
        assert!(watch.request(3));
    }
}
