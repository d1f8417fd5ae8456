//! A small set of [`DirectConnection`]s that awaited single commands borrow one at a time.
//!
//! It is bounded on purpose: once every direct connection is busy the caller is told so and
//! takes the multiplexed connection instead, where many concurrent commands share one socket
//! and one write. So a serial caller gets the shortest path, and a burst still pipelines.

use super::DirectConnection;
use redis::{ConnectionInfo, RedisResult};
use std::ops::{Deref, DerefMut};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Direct connections to one Redis, at most `max` open at once.
#[derive(Debug)]
pub struct DirectPool {
    info: ConnectionInfo,
    connect_timeout: Duration,
    response_timeout: Duration,
    max: usize,
    idle: Mutex<Vec<DirectConnection>>,
    /// Connections open, idle or lent.
    open: AtomicUsize,
}

impl DirectPool {
    /// A pool of up to `max` connections as `info` says, none opened until asked for; `None`
    /// when direct connections cannot reach that address (TLS), so callers know once.
    pub fn new(
        info: ConnectionInfo,
        max: usize,
        connect_timeout: Duration,
        response_timeout: Duration,
    ) -> Option<DirectPool> {
        super::supports(info.addr()).then(|| DirectPool {
            info,
            connect_timeout,
            response_timeout,
            max,
            idle: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
        })
    }

    /// An idle connection that Redis has not closed, or a new one while fewer than `max` are
    /// open; `Ok(None)` when all `max` are lent out. A connection Redis closed while it sat
    /// idle (a restart, an idle timeout) is dropped here rather than failing a request.
    pub async fn get(&self) -> RedisResult<Option<PooledConnection<'_>>> {
        while let Some(conn) = self.lock_idle().pop() {
            if conn.closed_while_idle() {
                self.open.fetch_sub(1, Ordering::SeqCst);
                continue;
            }
            return Ok(Some(self.lend(conn)));
        }
        let reserved = self
            .open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |open| {
                (open < self.max).then_some(open + 1)
            })
            .is_ok();
        if !reserved {
            return Ok(None);
        }
        match DirectConnection::connect(&self.info, self.connect_timeout, self.response_timeout)
            .await
        {
            Ok(conn) => Ok(Some(self.lend(conn))),
            Err(e) => {
                self.open.fetch_sub(1, Ordering::SeqCst);
                Err(e)
            }
        }
    }

    fn lend(&self, conn: DirectConnection) -> PooledConnection<'_> {
        PooledConnection {
            pool: self,
            conn: Some(conn),
        }
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<DirectConnection>> {
        // A poisoned lock only means a panic during a push or pop; the list is still whole.
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A connection lent by a [`DirectPool`]: back to the pool when dropped, unless a request on
/// it did not finish, in which case it is closed.
#[derive(Debug)]
pub struct PooledConnection<'a> {
    pool: &'a DirectPool,
    conn: Option<DirectConnection>,
}

impl Deref for PooledConnection<'_> {
    type Target = DirectConnection;

    fn deref(&self) -> &DirectConnection {
        // Only `drop` takes the connection out.
        self.conn.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for PooledConnection<'_> {
    fn deref_mut(&mut self) -> &mut DirectConnection {
        self.conn.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for PooledConnection<'_> {
    fn drop(&mut self) {
        match self.conn.take() {
            Some(conn) if !conn.is_broken() => self.pool.lock_idle().push(conn),
            _ => {
                self.pool.open.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}
