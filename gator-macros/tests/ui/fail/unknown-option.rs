use gator_core::job;

#[job(queue = "mail", retrys = 3)]
fn send_email(to: String) {
    let _ = to;
}

fn main() {
    // The job type still exists, so using it adds no error of its own.
    let _ = SendEmail::call("ada@example.com".into());
}
