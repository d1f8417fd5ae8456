use gator_core::job;

struct Address {
    email: String,
}

#[job]
fn send_email(subject: String, to: Address, retries: u32) {
    let _ = (subject, to.email, retries);
}

fn main() {}
