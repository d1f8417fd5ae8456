//! This worker's part in the job catalogue ([`gator_core::catalogue`]): it publishes the jobs
//! it runs at start, renews its leases on them every [`RENEW_EVERY`], gives them up when it
//! stops; it says at start when it runs only some of the jobs on a queue it serves; it tells
//! the processors whether a job it does not run is run by a live worker elsewhere; and it
//! stops passing over such jobs once no live worker runs them.

use crate::door::Published;
use crate::outage::Outage;
use crate::queues::QueueOrder;
use gator_core::catalogue::{Definition, LEASE, MAX_JOBS, RENEW_EVERY};
use gator_core::{Client, Registry};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// How many job names this process remembers having said it hands back (one line each).
const SAID_MAX: usize = 1_000;

/// This worker's catalogue: see the module docs.
pub struct Catalogue {
    client: Client,
    id: String,
    order: Arc<QueueOrder>,
    /// (name, definition JSON) of every job this worker runs.
    jobs: Vec<(String, String)>,
    outage: Arc<Outage>,
    /// What was already logged, so a renewal says nothing new twice.
    said: Mutex<HashSet<String>>,
}

impl Catalogue {
    /// The catalogue of a worker `id` that runs `registry`'s jobs from `order`'s queues.
    pub fn new(
        client: Client,
        id: String,
        order: Arc<QueueOrder>,
        registry: &Registry,
        outage: Arc<Outage>,
    ) -> Catalogue {
        let jobs = registry
            .registrations()
            .into_iter()
            .map(|reg| (reg.name.to_owned(), Definition::of(reg).to_json()))
            .collect();
        Catalogue {
            client,
            id,
            order,
            jobs,
            outage,
            said: Mutex::default(),
        }
    }

    /// Publishes (or renews) this worker's jobs; logs what it could not publish, once.
    pub async fn publish(&self) {
        let lease = LEASE.as_millis() as u64;
        let queues = self.order.all();
        let published = crate::door::presence(&self.client)
            .publish_catalogue((&self.id, lease), &queues, MAX_JOBS, &self.jobs)
            .await;
        match published {
            Ok(published) => {
                self.outage.reached();
                self.report(&published);
            }
            Err(e) => self.outage.unless_outage(&e, || {
                warn!(error = %e, "could not publish this worker's jobs in the job catalogue; retrying at the next renewal");
            }),
        }
    }

    fn report(&self, published: &Published) {
        for (name, holder) in &published.differs {
            if self.first_time(&format!("differs {name}")) {
                warn!(job = %name, writer = %holder, "this worker's definition of the job differs from the catalogue's, which another live worker wrote: producers by name apply that one until its lease ends (when that worker stops, or 60 s after it died)");
            }
        }
        for name in &published.full {
            if self.first_time(&format!("full {name}")) {
                warn!(job = %name, max = MAX_JOBS, "the job catalogue is full: this job is not in it, and producers by name refuse it unless forced");
            }
        }
    }

    /// Says, once, which jobs on the queues this worker serves it does not run, and hands back
    /// for the workers that do: those linked into this binary but left out (`.jobs([...])`),
    /// and those other workers published in the catalogue for these queues.
    pub async fn say_what_it_leaves(&self, registry: &Registry) {
        let served: BTreeSet<String> = self.order.all().into_iter().collect();
        let mut others: Vec<(String, String)> = Registry::from_inventory()
            .map(|linked| {
                let regs = linked.registrations().into_iter();
                regs.map(|r| (r.name.to_owned(), r.queue.to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        match self.client.catalogue().await {
            Ok(known) => others.extend(
                known
                    .into_iter()
                    .map(|k| (k.definition.job, k.definition.queue)),
            ),
            Err(e) if crate::outage::is_logged_already(&e) => {}
            Err(e) => warn!(error = %e, "could not read the job catalogue"),
        }
        let mut left: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (job, queue) in others {
            if registry.get(&job).is_none() && served.contains(&queue) {
                left.entry(queue).or_default().insert(job);
            }
        }
        for (queue, jobs) in left {
            info!(queue = %queue, jobs = ?jobs, "this worker runs only some of the jobs on this queue: jobs it does not run are handed back, unrun and with no attempt used, for the workers that run them (give them a queue of their own to save the detour)");
        }
    }

    /// Whether a live worker other than this one runs job `name` from `queue`; says once per
    /// name that it hands such jobs back.
    pub async fn run_elsewhere(&self, name: &str, queue: &str) -> bool {
        let known = match self.client.catalogue_entry(name).await {
            Ok(known) => known,
            Err(e) => {
                self.outage.unless_outage(&e, || {
                    warn!(error = %e, job = %name, "could not read the job catalogue");
                });
                return false;
            }
        };
        let elsewhere = known.is_some_and(|k| k.runs_on(queue, &self.id));
        if elsewhere && self.first_time(&format!("hands {name}")) {
            info!(job = %name, queue = %queue, "this worker does not run this job: handing it back, with no attempt used, for the workers that run it");
        }
        elsewhere
    }

    /// Stops passing over the jobs no live worker runs any more from a list this worker
    /// shares ([`crate::queues::passing`]): it takes them again, and fails them as jobs whose
    /// code is missing.
    async fn recheck_passing(&self) {
        for (list, name) in self.order.passing().all() {
            if !self.run_elsewhere(&name, &list).await {
                self.order.passing().remove(&list, &name);
            }
        }
    }

    /// Renews every [`RENEW_EVERY`] until `stop`, then gives the leases up; rechecks the jobs
    /// this worker passes over after each renewal.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(RENEW_EVERY) => {
                    self.publish().await;
                    self.recheck_passing().await;
                }
                _ = stop.cancelled() => break,
            }
        }
        let names: Vec<String> = self.jobs.iter().map(|(name, _)| name.clone()).collect();
        let mut presence = crate::door::presence(&self.client);
        match presence.withdraw_catalogue(&self.id, &names).await {
            Err(e) if !crate::outage::is_logged_already(&e) => {
                warn!(error = %e, "could not give up this worker's leases in the job catalogue; they end within 60 s");
            }
            _ => {}
        }
    }

    fn first_time(&self, what: &str) -> bool {
        let mut said = self.said.lock().unwrap_or_else(|e| e.into_inner());
        said.len() < SAID_MAX && said.insert(what.to_owned())
    }
}
