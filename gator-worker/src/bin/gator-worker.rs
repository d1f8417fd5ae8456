//! `gator-worker` with no jobs of its own: useful for `--help`. Your app's worker binary is
//! the same three lines plus a `use your_crate as _;` that links your jobs.
fn main() -> std::process::ExitCode {
    gator_worker::main()
}
