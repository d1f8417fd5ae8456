//! Every shape of job fn that `#[job]` accepts, in a crate that denies `missing_docs`: the
//! generated items must be documented and type-check.
#![deny(missing_docs)]

use gator_core::{Job, job};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::{Duration, SystemTime};

/// An argument that is a serde struct.
#[derive(Debug, Serialize, Deserialize)]
pub struct Order {
    /// The order number.
    pub id: u64,
    /// What was ordered.
    pub items: Vec<String>,
}

/// A job's own error type (no anyhow).
#[derive(Debug)]
pub struct MailError(String);

impl fmt::Display for MailError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Async, several parameters, a custom error, a queue.
#[job(queue = "mail")]
pub async fn send_email(to: String, n: u32, order: Order) -> Result<(), MailError> {
    if to.is_empty() {
        return Err(MailError(format!(
            "no address for order {} ({n})",
            order.id
        )));
    }
    Ok(())
}

/// Sync, no parameters, no return type.
#[job]
pub fn nightly_cleanup() {}

/// Sync, one `mut` parameter, a `std::io::Result`.
#[job(name = "images.resize", queue = "cpu-heavy_1.0")]
pub fn resize_image(mut width: u32) -> std::io::Result<()> {
    width += 1;
    let _ = width;
    Ok(())
}

/// Async, one parameter, returns `()`, private, digits in the name.
#[job]
async fn process_v2(ids: Vec<u64>) -> () {
    let _ = ids;
}

/// Async, no parameters, a `Result` type alias by path.
#[job]
pub(crate) async fn ping() -> fmt::Result {
    Ok(())
}

/// Parameters named like the generated fns' own (`time`, `delay`, `items`, `args`).
#[job]
pub fn clash(time: u64, delay: u64, items: Vec<u8>, args: String) {
    let _ = (time, delay, items, args);
}

/// A parameter named like the fn, and a raw identifier as the fn name.
#[job]
pub fn r#move(r#move: String) -> Result<(), String> {
    Err(r#move)
}

/// A parameter named like the fn.
#[job]
pub async fn email(email: String) {
    let _ = email;
}

// Type-checks dispatching every job; never called, as that needs Redis.
#[allow(dead_code)]
async fn dispatch_all() -> gator_core::Result<()> {
    let order = Order {
        id: 1,
        items: vec!["tea".into()],
    };
    let _jid: String = SendEmail::dispatch("ada@example.com".into(), 1, order).await?;
    let at = SystemTime::now() + Duration::from_secs(60);
    let order = Order {
        id: 2,
        items: vec![],
    };
    SendEmail::dispatch_at(at, "bob@example.com".into(), 2, order).await?;
    let order = Order {
        id: 3,
        items: vec![],
    };
    SendEmail::dispatch_in(Duration::from_secs(5), "cy@example.com".into(), 3, order).await?;
    let orders = (4..8).map(|id| ("d@example.com".to_owned(), 4, Order { id, items: vec![] }));
    let _jids: Vec<String> = SendEmail::dispatch_many(orders).await?;

    NightlyCleanup::dispatch().await?;
    NightlyCleanup::dispatch_in(Duration::from_secs(1)).await?;
    NightlyCleanup::dispatch_many([(), ()]).await?;
    ResizeImage::dispatch_many(vec![320, 640]).await?;
    ProcessV2::dispatch_at(SystemTime::now(), vec![1, 2]).await?;
    ProcessV2::call(vec![3])
        .queue("elsewhere")
        .dispatch()
        .await?;
    Ping::dispatch().await?;
    Move::dispatch("x".into()).await?;
    Email::dispatch_many(["a@example.com".to_owned()]).await?;
    Clash::dispatch_at(SystemTime::now(), 1, 2, vec![3], "4".into()).await?;
    Clash::dispatch_in(Duration::ZERO, 1, 2, vec![3], "4".into()).await?;
    Clash::dispatch_many([(1, 2, vec![3], "4".to_owned())]).await?;
    gator_core::dispatch_many((0..3).map(ResizeImage::call)).await?;
    Ok(())
}

fn main() {
    assert_eq!(<SendEmail as Job>::NAME, "send_email");
    assert_eq!(<SendEmail as Job>::QUEUE, "mail");
    assert_eq!(<NightlyCleanup as Job>::NAME, "nightly_cleanup");
    assert_eq!(<NightlyCleanup as Job>::QUEUE, "default");
    assert_eq!(<ResizeImage as Job>::NAME, "images.resize");
    assert_eq!(<ResizeImage as Job>::QUEUE, "cpu-heavy_1.0");
    assert_eq!(<ProcessV2 as Job>::NAME, "process_v2");
    assert_eq!(<Ping as Job>::QUEUE, "default");
    assert_eq!(<Move as Job>::NAME, "move");
    assert_eq!(<Email as Job>::NAME, "email");

    let order = Order {
        id: 9,
        items: vec![],
    };
    let pending = SendEmail::call("ada@example.com".into(), 7, order);
    assert_eq!(pending.queue_name(), "mail");
    assert_eq!(pending.args().1, 7);
    assert_eq!(ResizeImage::call(320).queue("other").queue_name(), "other");
    let _: &[(); 0] = NightlyCleanup::call().args();

    // The fns stay callable directly.
    nightly_cleanup();
    resize_image(1).unwrap();
    drop(process_v2(vec![]));
    drop(ping());
    clash(1, 2, vec![], String::new());
}
