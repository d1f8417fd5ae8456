use gator_core::job;

#[job]
fn send_email<T: serde::Serialize>(to: T) {
    let _ = to;
}

fn main() {}
