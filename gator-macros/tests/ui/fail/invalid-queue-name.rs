use gator_core::job;

#[job(queue = "mail queue")]
fn send_email(to: String) {
    let _ = to;
}

#[job(queue = "")]
fn send_sms(to: String) {
    let _ = to;
}

// `..` would send the dashboard's relative link `queues/..` to another page.
#[job(queue = "..")]
fn send_fax(to: String) {
    let _ = to;
}

fn main() {}
