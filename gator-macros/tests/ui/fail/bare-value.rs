use gator_core::job;

// A value is returned as `Ok(value)`: a bare value says nothing about failure.
#[job]
async fn count_emails(to: String) -> usize {
    to.len()
}

fn main() {}
