use gator_core::job;

#[job]
const fn send_email(id: u64) {
    let _ = id;
}

fn main() {}
