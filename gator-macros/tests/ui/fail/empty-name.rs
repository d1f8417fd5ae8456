use gator_core::job;

#[job(name = "")]
fn send_email(to: String) {
    let _ = to;
}

fn main() {}
