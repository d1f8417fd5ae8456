//! The process-wide default client that `Job::dispatch` uses: set by the application (or the
//! `gator-worker` binary), or connected from the environment on first use.

use super::Client;
use crate::error::Result;
use std::sync::RwLock;

static DEFAULT_CLIENT: RwLock<Option<Client>> = RwLock::new(None);
static DEFAULT_INIT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The process-wide client used by `Job::dispatch`: the one set with [`set_default_client`],
/// or else one connected from the environment on first use (see [`Client::from_env`]).
pub async fn default_client() -> Result<Client> {
    if let Some(client) = current_default() {
        return Ok(client);
    }
    // One connection attempt at a time, so a burst of first dispatches opens one client.
    let _guard = DEFAULT_INIT.lock().await;
    if let Some(client) = current_default() {
        return Ok(client);
    }
    let client = Client::from_env().await?;
    set_default_client(client.clone());
    Ok(client)
}

/// Makes `client` the process-wide default. The `gator-worker` binary does this (a worker built
/// in code only with `.install_default_client()`), so that jobs which dispatch other jobs use
/// the worker's Redis and namespace.
pub fn set_default_client(client: Client) {
    // A poisoned lock only means a panic while swapping an Arc; the value is still whole.
    *DEFAULT_CLIENT.write().unwrap_or_else(|e| e.into_inner()) = Some(client);
}

/// The default client if one is set or connected; never connects.
pub(crate) fn current_default() -> Option<Client> {
    DEFAULT_CLIENT
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}
