use gator_core::job;

struct Mailer;

impl Mailer {
    #[job]
    fn send_email(&self, to: String) {
        let _ = to;
    }
}

fn main() {}
