use gator_core::job;

#[job(queue = "mail queue")]
fn send_email(to: String) {
    let _ = to;
}

#[job(queue = "")]
fn send_sms(to: String) {
    let _ = to;
}

fn main() {}
