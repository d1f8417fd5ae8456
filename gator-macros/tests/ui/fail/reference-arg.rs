use gator_core::job;

#[job]
fn send_email(to: &str, cc: Vec<&'static str>) {
    let _ = (to, cc);
}

fn main() {}
