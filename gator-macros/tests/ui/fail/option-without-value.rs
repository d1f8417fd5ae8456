use gator_core::job;

#[job(queue)]
fn send_email(to: String) {
    let _ = to;
}

#[job(name("mail.send"))]
fn send_sms(to: String) {
    let _ = to;
}

fn main() {}
