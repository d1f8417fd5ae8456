use gator_core::job;

// A Hangul filler shows as nothing: "send\u{3164}email" looks like "sendemail" or "send email".
#[job(name = "send\u{3164}email")]
fn send_email(to: String) {
    let _ = to;
}

// The Braille blank looks like a space; alone, the name shows as nothing at all.
#[job(name = "\u{2800}")]
fn blank(path: String) {
    let _ = path;
}

// A zero-width space makes two rate limiters that look alike.
#[job(rate = "email\u{200b}")]
fn notify(to: String) {
    let _ = to;
}

fn main() {}
