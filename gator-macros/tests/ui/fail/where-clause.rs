use gator_core::job;

#[job]
fn send_email(to: String)
where
    String: Clone,
{
    let _ = to;
}

fn main() {}
