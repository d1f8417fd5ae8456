use gator_core::job;

#[job]
unsafe fn send_email(to: String) {
    let _ = to;
}

fn main() {}
