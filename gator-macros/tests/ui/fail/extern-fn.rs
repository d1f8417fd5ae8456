use gator_core::job;

#[job]
extern "C" fn send_email(id: u64) {
    let _ = id;
}

fn main() {}
