use gator_core::job;
use std::rc::Rc;

#[job]
async fn send_email(to: String) {
    let shared = Rc::new(to);
    tokio::task::yield_now().await;
    let _ = shared;
}

fn main() {}
