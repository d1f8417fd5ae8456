//! The server the binary runs, public so an app that mounts the dashboard can run the same:
//! hyper's HTTP/1 server on tokio, with what `axum::serve` does not offer. The steps are in
//! [`serve`]'s docs.

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// How long to wait after a failed `accept` (too many open files, say) before trying again,
/// so the loop does not spin on an error that lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// What [`serve`] allows a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// How long a request's head may take to arrive, and a keep-alive connection may sit idle;
    /// above zero. Default 10 s.
    pub header_timeout: Duration,
    /// The most connections open at once; at least 1 (with 0, every connection is closed).
    /// Default 512.
    pub max_connections: usize,
    /// How long a shutdown waits for the requests in flight. Default 10 s.
    pub shutdown_grace: Duration,
}

impl Default for ServeLimits {
    fn default() -> ServeLimits {
        ServeLimits {
            header_timeout: Duration::from_secs(10),
            max_connections: 512,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes:
///
/// 1. **Accept.** Past [`ServeLimits::max_connections`] open connections, a new one is closed
///    at once: a client gets an answer it can retry, rather than a hang in the kernel's
///    backlog, and idle connections cannot pile up by the thousand.
/// 2. **Read the head.** The request line and headers must all arrive within
///    [`ServeLimits::header_timeout`] of the server starting to wait for them, or the
///    connection is closed: a slow-loris sender (a byte every few seconds) is cut off, and so
///    is a keep-alive connection idle that long between requests, since waiting for the next
///    request is waiting for its head. (hyper also bounds the head's size: 100 headers, some
///    400 KiB.)
/// 3. **Answer.** Each request carries axum's `ConnectInfo<SocketAddr>`, the peer address the
///    auth throttle counts failures against. Body size, body deadline and request timeout are
///    the router's ([`WebConfig`](crate::WebConfig)), so they hold however it is served.
/// 4. **Shut down.** Stop accepting, let each connection finish the request in flight and
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
/// None yet: a failed `accept` is logged and retried; the `Result` leaves room for one.
pub async fn serve<F>(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send,
{
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let mut shutdown = std::pin::pin!(shutdown);
    // Log reaching the cap once, not once per refused connection.
    let mut at_cap = false;
    loop {
        let (stream, peer) = tokio::select! {
            accepted = accept(&listener) => match accepted {
                Some(accepted) => accepted,
                None => continue,
            },
            () = &mut shutdown => break,
        };
        // Step 1: a permit per connection, given back when the connection ends.
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            if !at_cap {
                tracing::warn!(
                    max_connections = limits.max_connections,
                    "gator-web is at its connection cap: new connections are closed until one ends"
                );
            }
            at_cap = true;
            continue; // the stream is dropped: closed
        };
        at_cap = false;
        let connection = http.serve_connection(TokioIo::new(stream), service(router.clone(), peer));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(peer = %peer, error = %error, "connection ended with an error");
            }
            drop(permit);
        });
    }
    // Step 4.
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("gator-web stopped with requests still in flight");
    }
    Ok(())
}

/// The next connection; `None` after a failed `accept` (too many open files, say), once the
/// loop may try again.
async fn accept(listener: &TcpListener) -> Option<(tokio::net::TcpStream, SocketAddr)> {
    match listener.accept().await {
        Ok(accepted) => Some(accepted),
        Err(error) => {
            tracing::warn!(error = %error, "gator-web could not accept a connection");
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            None
        }
    }
}

/// Step 3: the router, for one connection from `peer`.
fn service(
    router: Router,
    peer: SocketAddr,
) -> TowerToHyperService<
    impl tower::Service<
        Request<Incoming>,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future = impl Send,
    > + Clone
    + Send,
> {
    TowerToHyperService::new(router.map_request(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        request
    }))
}
