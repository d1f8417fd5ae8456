use gator_core::job;

struct Address {
    email: String,
}

#[job]
fn send_email(to: Address) {
    let _ = to.email;
}

fn main() {}
