//! The server the binary runs, public so an app that mounts the dashboard can run the same:
//! hyper's HTTP/1 server on tokio, with what `axum::serve` does not offer. The steps are in
//! [`serve`]'s docs.

mod limits;
mod per_client;
mod watch;

pub use limits::ServeLimits;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, Request};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use per_client::{PerClient, Refusals, Slot};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;
use watch::{Watch, Watched};

/// How long to wait after a failed `accept` (too many open files, say) before trying again,
/// so the loop does not spin on an error that lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` until `shutdown` completes:
///
/// 1. **Accept.** Past [`ServeLimits::max_connections`] open connections, or
///    [`ServeLimits::max_connections_per_client`] from one client (an IPv4 address, an IPv6
///    /64), a new one is closed at once: a client gets an answer it can retry, rather than a
///    hang in the kernel's backlog, idle connections cannot pile up by the thousand, and one
///    address cannot take them all.
/// 2. **Read the head.** The request line and headers must all arrive within
///    [`ServeLimits::header_timeout`] of the server starting to wait for them, or the
///    connection is closed: a slow-loris sender (a byte every few seconds) is cut off, and so
///    is a keep-alive connection idle that long between requests, since waiting for the next
///    request is waiting for its head. (hyper also bounds the head's size: 100 headers, some
///    400 KiB.)
/// 3. **Answer.** Each request carries axum's `ConnectInfo<SocketAddr>`, the peer address the
///    auth throttle counts failures against. Body size, body deadline and request timeout are
///    the router's ([`WebConfig`](crate::WebConfig)), so they hold however it is served. The
///    [`ServeLimits::max_pipelined_requests`]-th request answered in a row without the server
///    waiting for the client is answered with `Connection: close`, which ends the connection.
/// 4. **Write the answer.** Into a kernel send buffer of [`ServeLimits::send_buffer_bytes`].
///    A write that waits [`ServeLimits::write_timeout`] for the client to read, without a byte
///    going out, resets the connection: a client that asks and never reads gives its
///    connection, and the kernel's buffers, back.
/// 5. **Shut down.** Stop accepting, let each connection finish the request in flight and
///    close, and wait for them at most [`ServeLimits::shutdown_grace`].
///
/// ```no_run
/// # async fn demo(client: gator_core::Client) -> std::io::Result<()> {
/// let router = gator_web::router(client, gator_web::WebConfig::new());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:9090").await?;
/// let stop = async { let _ = tokio::signal::ctrl_c().await; };
/// gator_web::serve(listener, router, gator_web::ServeLimits::default(), stop).await
/// # }
/// ```
///
/// # Errors
///
/// Limits that do not validate ([`ServeLimits::validate`]), as `InvalidInput`. A failed
/// `accept` is logged and retried.
pub async fn serve<F>(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send,
{
    limits
        .validate()
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidInput, error))?;
    let mut gate = Gate::new(&limits);
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = accept(&listener) => match accepted {
                Some(accepted) => accepted,
                None => continue,
            },
            () = &mut shutdown => break,
        };
        // Step 1: else the stream is dropped, closed.
        let Some(held) = gate.admit(peer) else {
            continue;
        };
        size_send_buffer(&stream, limits.send_buffer_bytes);
        let watch = Watch::new();
        let socket = TokioIo::new(Watched::new(stream, watch.clone()));
        let service = service(
            router.clone(),
            peer,
            watch.clone(),
            limits.max_pipelined_requests,
        );
        let connection = graceful.watch(http.serve_connection(socket, service));
        tokio::spawn(run(connection, watch, limits.write_timeout, peer, held));
    }
    // Step 5.
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("gator-web stopped with requests still in flight");
    }
    Ok(())
}

/// Steps 2 to 4 for one connection, until it ends or a write waits for its client past
/// `write_timeout` (dropping the connection closes its socket); then what it held is given
/// back.
async fn run<C, E>(
    connection: C,
    watch: Arc<Watch>,
    write_timeout: Duration,
    peer: SocketAddr,
    held: Held,
) where
    C: Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    tokio::select! {
        ended = connection => if let Err(error) = ended {
            tracing::debug!(peer = %peer, error = %error, "connection ended with an error");
        },
        () = watch.stalled(write_timeout) => tracing::debug!(
            peer = %peer,
            "the client did not read its answer within the write timeout: connection closed"
        ),
    }
    drop(held);
}

/// Step 1: the connection caps, and the log of what they refuse.
struct Gate {
    permits: Arc<Semaphore>,
    max_connections: usize,
    per_client: Arc<PerClient>,
    max_per_client: usize,
    /// Whether the global cap was reached and said so: logged once, not once per refusal.
    at_cap: bool,
    refusals: Refusals,
}

/// What an open connection holds, given back when it ends.
type Held = (OwnedSemaphorePermit, Slot);

impl Gate {
    fn new(limits: &ServeLimits) -> Gate {
        Gate {
            permits: Arc::new(Semaphore::new(limits.max_connections)),
            max_connections: limits.max_connections,
            per_client: PerClient::new(limits.max_connections_per_client),
            max_per_client: limits.max_connections_per_client,
            at_cap: false,
            refusals: Refusals::default(),
        }
    }

    /// A place for a connection from `peer`, or `None` past either cap.
    fn admit(&mut self, peer: SocketAddr) -> Option<Held> {
        let Some(slot) = self.per_client.admit(peer) else {
            self.refusals.note(peer, self.max_per_client);
            return None;
        };
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            if !self.at_cap {
                tracing::warn!(
                    max_connections = self.max_connections,
                    "gator-web is at its connection cap: new connections are closed until one ends"
                );
            }
            self.at_cap = true;
            return None;
        };
        self.at_cap = false;
        Some((permit, slot))
    }
}

/// Step 4: a send buffer of `bytes`, not one the kernel grows for a client that does not read.
fn size_send_buffer(stream: &TcpStream, bytes: usize) {
    if let Err(error) = socket2::SockRef::from(stream).set_send_buffer_size(bytes) {
        tracing::debug!(error = %error, "could not size a connection's send buffer");
    }
}

/// The next connection; `None` after a failed `accept` (too many open files, say), once the
/// loop may try again.
async fn accept(listener: &TcpListener) -> Option<(TcpStream, SocketAddr)> {
    match listener.accept().await {
        Ok(accepted) => Some(accepted),
        Err(error) => {
            tracing::warn!(error = %error, "gator-web could not accept a connection");
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            None
        }
    }
}

/// Step 3: the router, for one connection from `peer`; the answer that reaches the pipeline
/// cap says `Connection: close`, and hyper ends the connection once it is written.
fn service(
    router: Router,
    peer: SocketAddr,
    watch: Arc<Watch>,
    max_pipelined: usize,
) -> TowerToHyperService<
    impl tower::Service<
        Request<Incoming>,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future = impl Send,
    > + Clone
    + Send,
> {
    TowerToHyperService::new(tower::service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        let last = watch.request(max_pipelined);
        let answer = router.clone().oneshot(request);
        async move {
            let mut response = answer.await?;
            if last {
                let close = HeaderValue::from_static("close");
                response.headers_mut().insert(CONNECTION, close);
            }
            Ok(response)
        }
    }))
}
