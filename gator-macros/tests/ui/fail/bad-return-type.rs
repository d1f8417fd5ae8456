use gator_core::job;

#[job]
fn count_emails(to: String) -> usize {
    to.len()
}

fn main() {}
