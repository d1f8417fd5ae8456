//! What every handler shares ([`App`]): the client, the admin, the configuration and the
//! guards' state. The routes and the auth guard take it, [`crate::try_router`] makes it; it
//! imports only the configuration and the guards' own state, so none of them imports the
//! crate's root.

use crate::config::WebConfig;
use crate::host::Hosts;
use crate::session::Sessions;
use crate::throttle::Throttle;
use gator_core::Client;
use std::sync::Arc;

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct App {
    /// Dispatches (enqueue by wire name, cancel, reply) and reads one job's status.
    pub(crate) client: Client,
    /// Reads and repairs the fleet: everything else the pages and the API show or do.
    pub(crate) admin: gator_core::Admin,
    pub(crate) config: Arc<WebConfig>,
    /// The CSRF token of this router: random, made when it is built, shown to the pages in a
    /// meta tag.
    pub(crate) csrf: Arc<str>,
    /// The names this router answers to.
    pub(crate) hosts: Arc<Hosts>,
    /// Failed logins per client address.
    pub(crate) throttle: Arc<Throttle>,
    /// The login cookie's keys, with a token configured.
    pub(crate) sessions: Option<Arc<Sessions>>,
}
