use gator_core::job;

#[job]
fn send_email(to: impl Into<String>) {
    let _ = to.into();
}

fn main() {}
