//! Dispatching by wire name, for producers that are not typed Rust code (the HTTP API, the
//! dashboard, the command line, scripts): the job need not be linked into this binary, and
//! the job catalogue ([`crate::catalogue`]) gives it its queue, its flow and unique options and
//! its parameters, as a typed dispatch would have them.

use super::Client;
use super::engine::Due;
use crate::catalogue::{Definition, Known, Runner};
use crate::error::{Error, Result};
use crate::job::Encoded;
use crate::payload::Payload;
use crate::store::keys::validate_queue;
use crate::unique::Dispatched;
use std::time::Duration;

/// How many known names a refusal lists.
const NAMES_SHOWN: usize = 50;

/// A dispatch by wire name, not yet sent: the builder made by [`Client::dispatch_by_name`],
/// sent by [`ByName::dispatch`].
#[must_use = "a ByName does nothing until it is sent"]
#[derive(Debug)]
pub struct ByName<'c> {
    client: &'c Client,
    job: String,
    args: serde_json::Value,
    queue: Option<String>,
    due: Option<Due>,
    force: bool,
    /// The deadline the producer gave; else the catalogue's `expires_in`.
    deadline: Option<crate::expiry::Deadline>,
    /// What becomes of it once expired, if the producer said; else the catalogue's.
    on_expire: Option<crate::expiry::OnExpire>,
    /// The fair key the producer gave, instead of the one the catalogue takes from an argument.
    fair_key: Option<String>,
}

impl Client {
    /// A dispatch of the job named `job` (its wire name) with `args` (a JSON array, one element
    /// per parameter of the job fn). [`ByName::dispatch`] refuses a name that no live or recent
    /// worker published in the job catalogue, and arguments that do not fit its parameters;
    /// a known job goes to its queue with its options, as `Job::call(..).dispatch()` would.
    /// It always goes to Redis, where the catalogue is, even in testing mode.
    pub fn dispatch_by_name(&self, job: &str, args: serde_json::Value) -> ByName<'_> {
        ByName {
            client: self,
            job: job.to_owned(),
            args,
            queue: None,
            due: None,
            force: false,
            deadline: None,
            on_expire: None,
            fair_key: None,
        }
    }

    /// What the job catalogue knows of `job`: `None` if no live or recent worker published it.
    pub async fn catalogue_entry(&self, job: &str) -> Result<Option<Known>> {
        let mut conn = self.connection();
        let recent = crate::store::lease::millis(crate::catalogue::RECENT);
        let stored = crate::store::catalogue::read(&mut conn, self.keys(), recent, &[job]).await?;
        stored.into_iter().next().map(known).transpose()
    }

    /// Every job the catalogue knows, by name (forgetting those no worker renewed lately).
    pub async fn catalogue(&self) -> Result<Vec<Known>> {
        let mut conn = self.connection();
        let recent = crate::store::lease::millis(crate::catalogue::RECENT);
        let mut all: Vec<Known> =
            crate::store::catalogue::read(&mut conn, self.keys(), recent, &[])
                .await?
                .into_iter()
                .map(known)
                .collect::<Result<_>>()?;
        all.sort_by(|a, b| a.definition.job.cmp(&b.definition.job));
        Ok(all)
    }
}

fn known(stored: crate::store::catalogue::StoredJob) -> Result<Known> {
    let definition: Definition = serde_json::from_str(&stored.definition)?;
    Ok(Known {
        definition,
        writer: stored.writer,
        writer_live: stored.lease_end > stored.now,
        runners: stored
            .runners
            .into_iter()
            .map(|(worker, queues)| Runner { worker, queues })
            .collect(),
    })
}

impl ByName<'_> {
    /// Sends it to `queue` instead of the queue the catalogue names.
    pub fn queue(mut self, queue: &str) -> Self {
        self.queue = Some(queue.to_owned());
        self
    }

    /// Sends it to `queue` instead of the queue the catalogue names.
    #[deprecated(since = "0.10.0", note = "use `.queue(queue)`")]
    pub fn on(self, queue: &str) -> Self {
        self.queue(queue)
    }

    /// Makes it due at `at` (Redis's clock decides when that has come; a time past is now).
    pub fn at(mut self, at: impl Into<crate::job::DueTime>) -> Result<Self> {
        self.due = Some(Due::at(at)?);
        Ok(self)
    }

    /// Makes it due after `delay`, counted on Redis's clock.
    pub fn after(mut self, delay: Duration) -> Result<Self> {
        self.due = Some(Due::after(delay)?);
        Ok(self)
    }

    /// Expires it if it has not started `ttl` after its dispatch, on Redis's clock (see
    /// [`crate::expiry`]), instead of the job's own `expires_in` (from the catalogue); refused
    /// if zero or past the 5-year horizon.
    pub fn expires_in(mut self, ttl: Duration) -> Result<Self> {
        self.deadline = Some(crate::expiry::Deadline::In(crate::expiry::check_delay(
            ttl,
        )?));
        Ok(self)
    }

    /// What becomes of it if it expires, instead of the job's own `on_expire` (kept in the
    /// dead set by default); nothing without a deadline, its own or the job's.
    pub fn on_expire(mut self, on_expire: crate::expiry::OnExpire) -> Self {
        self.on_expire = Some(on_expire);
        self
    }

    /// Its expiry: each of the deadline and `on_expire` as the producer gave it, else as the
    /// job's definition has it (`catalogue`); none without a deadline from either.
    fn expiry(&self, catalogue: Option<crate::expiry::Expiry>) -> Option<crate::expiry::Expiry> {
        let deadline = self.deadline.or(catalogue.map(|e| e.deadline))?;
        let on_expire = (self.on_expire)
            .or(catalogue.map(|e| e.on_expire))
            .unwrap_or_default();
        Some(crate::expiry::Expiry {
            deadline,
            on_expire,
        })
    }

    /// Gives it the fair key `key` (see [`crate::flow`]), instead of the one the job takes from
    /// its arguments (`#[job(fair_key = arg)]`), as `.fair_key(..)` does on a typed dispatch;
    /// checked when sent (1 to 128 bytes that show as themselves, as every flow name:
    /// `gator_rules::visible_name`).
    pub fn fair_key(mut self, key: impl Into<String>) -> Self {
        self.fair_key = Some(key.into());
        self
    }

    /// Sends it even if the catalogue does not know the name (with no options but those the
    /// payload is given); a known job still gets its options and its arguments checked.
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    /// Stores it: whether a new job was stored, or a unique job's duplicate was found.
    #[deprecated(since = "0.10.0", note = "use `.dispatch()`")]
    pub async fn send(self) -> Result<Dispatched> {
        self.dispatch().await
    }

    /// Stores it: whether a new job was stored, or a unique job's duplicate was found.
    pub async fn dispatch(self) -> Result<Dispatched> {
        gator_rules::job_name(&self.job).map_err(|reason| Error::InvalidJobName {
            name: crate::error::cut_name(&self.job),
            reason,
        })?;
        if let Some(queue) = &self.queue {
            validate_queue(queue)?;
        }
        if !self.args.is_array() {
            return Err(Error::InvalidArgs {
                reason: "args must be a JSON array, one element per parameter of the job".into(),
            });
        }
        let client = self.client;
        let encoded = match client.catalogue_entry(&self.job).await? {
            Some(known) => self.encoded(&known.definition)?,
            None if self.force => self.unknown()?,
            None => return Err(self.refusal().await?),
        };
        client.send(encoded, self.due.unwrap_or(Due::Now)).await
    }

    /// The job with its catalogue options.
    fn encoded(&self, definition: &Definition) -> Result<Encoded> {
        let mut applied = definition.apply(&self.args)?;
        let queue = self.queue.as_deref().unwrap_or(&definition.queue);
        let mut payload = Payload::new(&self.job, queue, self.args.clone());
        if let Some(fair) = &self.fair_key {
            applied.flow.fair = Some(fair.clone());
            applied.flow.validate()?;
        }
        payload.flow = (!applied.flow.is_empty()).then(|| Box::new(applied.flow));
        // Duplicates must meet on one shard of a sharded queue: placed by their key.
        let shard_key = applied.unique.as_ref().map(|u| u.key.clone());
        payload.unique = applied.unique.map(Box::new);
        Ok(Encoded {
            payload,
            shard_key,
            expiry: self.expiry(applied.expiry),
        })
    }

    /// A forced job the catalogue does not know: on the queue given, or `default`, with the
    /// options the producer gave.
    fn unknown(&self) -> Result<Encoded> {
        let queue = self.queue.as_deref().unwrap_or("default");
        let mut payload = Payload::new(&self.job, queue, self.args.clone());
        if let Some(fair) = &self.fair_key {
            let flow = crate::flow::FlowOptions {
                fair: Some(fair.clone()),
                ..crate::flow::FlowOptions::default()
            };
            flow.validate()?;
            payload.flow = Some(Box::new(flow));
        }
        Ok(Encoded {
            payload,
            shard_key: None,
            expiry: self.expiry(None),
        })
    }

    /// Why an unknown name is refused, with the names the catalogue knows.
    async fn refusal(&self) -> Result<Error> {
        let names: Vec<String> = self
            .client
            .catalogue()
            .await?
            .into_iter()
            .map(|k| k.definition.job)
            .collect();
        let mut known = names
            .iter()
            .take(NAMES_SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > NAMES_SHOWN {
            known.push_str(&format!(", … ({} in all)", names.len()));
        }
        if known.is_empty() {
            known = "none: no worker has published its jobs".into();
        }
        Ok(Error::NotInCatalogue {
            name: crate::error::cut_name(&self.job),
            known,
        })
    }
}
