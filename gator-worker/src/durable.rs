//! Where this worker's durable jobs save their state: the [`DurableSink`] each attempt's
//! `Context` saves through (`gator_core::context::durable`), `Run::save_durable` (`door::run`)
//! on the worker's shared connection. A save rewrites the job's payload in flight, so the
//! held book ([`crate::held`]) follows it: the new payload is held before the save is sent
//! (recovery never finds it stranded), the old one let go once the save is known.

use crate::fetcher::Fetcher;
use gator_core::Client;
use gator_core::context::durable::{DurableSink, DurableWriter, Save, Stored};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// How many times a save is sent before its failure is the job's: a save is idempotent, so a
/// reply lost to a blip is sent again.
const TRIES: u32 = 3;

/// Saves durable jobs' state with the worker's client.
pub struct DurableStore {
    client: Client,
    fetcher: Arc<Fetcher>,
}

impl DurableStore {
    /// The writer every processor of the worker hands its jobs' contexts: one per worker.
    pub fn writer(client: Client, fetcher: Arc<Fetcher>) -> DurableWriter {
        DurableWriter::new(Arc::new(DurableStore { client, fetcher }))
    }

    async fn send(&self, save: Save<'_>) -> gator_core::Result<Stored> {
        let mut tried = 1;
        loop {
            let sent = crate::door::run(&self.client)
                .save_durable((save.queue, save.process), save.was, save.now)
                .await;
            match sent {
                Err(_) if tried < TRIES => {
                    tokio::time::sleep(Duration::from_millis(100 << tried)).await;
                    tried += 1;
                }
                other => return other,
            }
        }
    }
}

impl DurableSink for DurableStore {
    fn save<'a>(
        &'a self,
        save: Save<'a>,
    ) -> Pin<Box<dyn Future<Output = gator_core::Result<Stored>> + Send + 'a>> {
        Box::pin(async move {
            let held = self.fetcher.held();
            held.hold_payload(save.now.as_bytes());
            let stored = self.send(save).await;
            match stored {
                Ok(Stored::Saved) => held.release_payload(save.was.as_bytes()),
                // Not written; or not known: if it was, the new payload is not held, and
                // recovery puts it back (with its state) as a stranded job.
                Ok(Stored::Lost) | Err(_) => held.release_payload(save.now.as_bytes()),
            }
            stored
        })
    }
}
