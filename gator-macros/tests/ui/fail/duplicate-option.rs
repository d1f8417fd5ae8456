use gator_core::job;

#[job(queue = "mail", queue = "high")]
fn send_email(to: String) {
    let _ = to;
}

fn main() {}
