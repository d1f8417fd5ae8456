//! The async runtime the worker and the admin commands both run on: a leaf, so the admin
//! commands (`cli`) need nothing of the crate's root.

/// Builds the async runtime both the worker and the admin commands run on, or says on stderr
/// why it cannot.
pub(crate) fn start(mut builder: tokio::runtime::Builder) -> Option<tokio::runtime::Runtime> {
    match builder.enable_all().build() {
        Ok(runtime) => Some(runtime),
        Err(e) => {
            eprintln!("gator-worker: cannot start the async runtime: {e}");
            None
        }
    }
}
