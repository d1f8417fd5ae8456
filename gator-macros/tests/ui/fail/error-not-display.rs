use gator_core::job;

#[derive(Debug)]
struct MailError;

#[job]
fn send_email(to: String) -> Result<(), MailError> {
    let _ = to;
    Err(MailError)
}

fn main() {}
