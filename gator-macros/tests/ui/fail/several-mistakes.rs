use gator_core::job;

// Every mistake is reported at once, each on its own token.
#[job(queue = "no spaces", priority = 1)]
async fn send_email<T>(to: &str, (a, b): (T, T)) -> u32 {
    let _ = (to, a, b);
    0
}

fn main() {}
