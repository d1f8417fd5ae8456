use gator_core::job;

#[job(queue = high)]
fn send_email(to: String) {
    let _ = to;
}

#[job(queue = 3)]
fn send_sms(to: String) {
    let _ = to;
}

fn main() {}
