//! What the workers of this test binary log, captured as the fmt subscriber writes it (no
//! colours), so a test can read the lines an operator's terminal would show.

use std::io::Write;
use std::sync::{Mutex, Once};

static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct Capture;

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Starts capturing (once per test binary): every later log line lands in [`text`].
pub fn capture() {
    static START: Once = Once::new();
    START.call_once(|| {
        tracing_subscriber::fmt()
            .with_writer(|| Capture)
            .with_ansi(false)
            .with_env_filter("info")
            .init();
    });
}

/// Everything logged so far, as text (invalid UTF-8 shown as U+FFFD).
pub fn text() -> String {
    String::from_utf8_lossy(&LOGS.lock().unwrap()).into_owned()
}
