//! A TCP proxy in front of a test's Redis that can go silent: [`SilentProxy::silence`] stops
//! forwarding on every connection open at that moment, in both directions, without closing
//! any of them, as a NAT or load balancer does when it drops idle flows, or as a failover
//! leaves a half-open socket. Connections opened afterwards are forwarded normally, so a
//! client that replaces a silent connection gets through.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A proxy from a free loopback port to a Redis port; stops its threads on drop.
#[derive(Debug)]
pub struct SilentProxy {
    port: u16,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    /// Connections accepted so far; each remembers its number.
    accepted: AtomicU64,
    /// Connections numbered below this are silent.
    silent_below: AtomicU64,
    /// While set, every connection, open or new, is silent: a network partition.
    cut: AtomicBool,
    stopping: AtomicBool,
    /// Every socket, so drop can close them all.
    sockets: Mutex<Vec<TcpStream>>,
}

impl SilentProxy {
    /// Starts forwarding a free loopback port to `127.0.0.1:target`.
    ///
    /// # Panics
    /// If no loopback port can be bound.
    pub fn start(target: u16) -> SilentProxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binding the proxy");
        let port = listener.local_addr().expect("the proxy's address").port();
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let shared = Arc::new(Shared::default());
        let accepting = shared.clone();
        std::thread::spawn(move || accept_loop(&listener, target, &accepting));
        SilentProxy { port, shared }
    }

    /// `redis://127.0.0.1:PORT/` through the proxy.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Every connection open now stops forwarding, and stays open.
    pub fn silence(&self) {
        let accepted = self.shared.accepted.load(Ordering::SeqCst);
        self.shared.silent_below.store(accepted, Ordering::SeqCst);
    }

    /// Cuts the proxied side off, as a network partition does: until [`SilentProxy::heal`],
    /// every connection, open or opened meanwhile, forwards nothing and stays open.
    pub fn cut(&self) {
        self.shared.cut.store(true, Ordering::SeqCst);
    }

    /// Ends a [`SilentProxy::cut`]: the connections forward again what waited in them, as
    /// TCP connections do once a partition heals (those [`SilentProxy::silence`]d stay silent).
    pub fn heal(&self) {
        self.shared.cut.store(false, Ordering::SeqCst);
    }

    /// How many connections the proxy has accepted.
    pub fn connections(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for SilentProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        for socket in self.shared.sockets.lock().unwrap().drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: &TcpListener, target: u16, shared: &Arc<Shared>) {
    while !shared.stopping.load(Ordering::SeqCst) {
        let client = match listener.accept() {
            Ok((client, _)) => client,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(_) => return,
        };
        let Ok(server) = TcpStream::connect((Ipv4Addr::LOCALHOST, target)) else {
            continue; // Redis is down: the client sees its connection close
        };
        let number = shared.accepted.fetch_add(1, Ordering::SeqCst);
        for socket in [&client, &server] {
            socket.set_nonblocking(false).expect("a blocking socket");
            socket
                .set_read_timeout(Some(Duration::from_millis(20)))
                .expect("a read timeout");
            if let Ok(copy) = socket.try_clone() {
                shared.sockets.lock().unwrap().push(copy);
            }
        }
        for (from, to) in [(&client, &server), (&server, &client)] {
            let (Ok(from), Ok(to)) = (from.try_clone(), to.try_clone()) else {
                continue;
            };
            let shared = shared.clone();
            std::thread::spawn(move || forward(from, to, number, &shared));
        }
    }
}

/// Copies `from` to `to` until either closes, or holds both open and silent once `number`
/// is silenced.
fn forward(mut from: TcpStream, mut to: TcpStream, number: u64, shared: &Shared) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        if number < shared.silent_below.load(Ordering::SeqCst) || shared.cut.load(Ordering::SeqCst)
        {
            // Silent: read nothing, write nothing, close nothing. The kernel's buffers fill
            // and the peer sees neither data nor a reset.
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        match from.read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}
