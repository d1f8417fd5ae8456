use gator_core::job;

#[job]
struct SendEmail {
    to: String,
}

fn main() {}
