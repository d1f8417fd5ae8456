use gator_core::job;

#[job]
async fn count_emails(to: String) -> Result<usize, std::io::Error> {
    Ok(to.len())
}

fn main() {}
