use gator_core::job;

// A job's result is stored as JSON: a value that cannot be serialized is refused at compile time.
#[job]
async fn open_log(path: String) -> Result<std::fs::File, std::io::Error> {
    std::fs::File::open(path)
}

fn main() {}
