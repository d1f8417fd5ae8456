use gator_core::job;

// A newline forges a log line; U+202E reverses the text shown after it.
#[job(name = "send\nINFO forged")]
fn send_email(to: String) {
    let _ = to;
}

#[job(name = "resize\u{202e}gpj.exe")]
fn resize(path: String) {
    let _ = path;
}

fn main() {}
