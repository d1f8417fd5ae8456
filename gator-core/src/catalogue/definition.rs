//! A job as the catalogue publishes it: [`Definition`], the JSON every by-name producer reads.

use crate::expiry::{Deadline, Expiry, OnExpire};
use crate::flow::FlowOptions;
use crate::job::signature::{Backoff, Overlap};
use crate::registry::JobRegistration;
use crate::unique::{UniqueOptions, UniqueUntil};
use serde::{Deserialize, Serialize};

fn default_backoff() -> String {
    "default".to_owned()
}

/// One job of the catalogue, as stored (JSON) in `gator:{catalogue}:jobs`. The field names are
/// part of the wire format (`docs/wire-format.md`, "The job catalogue").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    /// The wire name.
    pub job: String,
    /// The queue a dispatch goes to unless the producer names another.
    pub queue: String,
    /// The wire arguments, in order; absent when the job did not say (arity is not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Vec<Param>>,
    /// Retries after the first attempt (applied by the worker).
    pub retries: u32,
    /// Where the delays between retries come from (applied by the worker; for reading):
    /// `"default"` (Gator's curve, with jitter), `"list"` (`backoff_ms`), `"custom"` (a fn).
    #[serde(default = "default_backoff")]
    pub backoff: String,
    /// With `backoff: "list"`, the delays in ms, the last repeating.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backoff_ms: Vec<u64>,
    /// How long one attempt may run, in ms (applied by the worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The flow options every dispatch of it carries, with the payload's `flow` field names
    /// (`priority`, `cost`, `critical`, `rate`, `windows`, `tz`); its `key`, `fair` and
    /// `overlap` come from its arguments (`limit_key_arg`, `fair_key_arg`, `no_overlap`) when
    /// it is dispatched.
    #[serde(flatten)]
    pub flow: FlowOptions,
    /// Flow option: the index in `args` of the argument whose value is the limit key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_key_arg: Option<usize>,
    /// Flow option: the index in `args` of the argument whose value is the fair key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_key_arg: Option<usize>,
    /// Flow option: no overlap, and where its key comes from.
    #[serde(default, skip_serializing_if = "Overlap::is_none")]
    pub no_overlap: Overlap,
    /// Unique and debounce options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unique: Option<UniqueDefinition>,
    /// `expires_in`, in ms: a dispatch not started this long after it never runs
    /// ([`crate::expiry`]); absent for a job that waits as long as it must.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_ms: Option<u64>,
    /// What becomes of it once expired: `"drop"`, or `"dead"` (the default, not written).
    #[serde(default, skip_serializing_if = "is_dead")]
    pub on_expire: OnExpire,
    /// Where the job fn is defined (`module::fn at file:line`).
    #[serde(default)]
    pub defined_at: String,
}

/// One wire argument of a job: its parameter's name and Rust type, as the fn writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    /// The parameter's name.
    pub name: String,
    /// Its Rust type (`String`, `u64`, `Option<String>`, `Vec<u8>`, ...).
    #[serde(rename = "type")]
    pub ty: String,
}

/// A job's unique options in the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UniqueDefinition {
    /// The lock's TTL, in ms.
    pub for_ms: u64,
    /// `"success"` (the default) or `"start"`: when the lock is released.
    pub until: String,
    /// The debounce delay, in ms, for a debounced job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debounce_ms: Option<u64>,
}

impl Definition {
    /// The definition of a job registered in this binary.
    pub fn of(reg: &JobRegistration) -> Definition {
        let sig = &reg.signature;
        Definition {
            job: reg.name.to_owned(),
            queue: reg.queue.to_owned(),
            params: sig.params.map(|params| {
                params
                    .iter()
                    .map(|(name, ty)| Param {
                        name: (*name).to_owned(),
                        ty: (*ty).to_owned(),
                    })
                    .collect()
            }),
            retries: reg.retries,
            backoff: match sig.backoff {
                Backoff::Default => "default",
                Backoff::List(_) => "list",
                Backoff::Custom => "custom",
            }
            .to_owned(),
            backoff_ms: match sig.backoff {
                Backoff::List(delays) => delays.to_vec(),
                _ => Vec::new(),
            },
            timeout_ms: reg.timeout.map(ms),
            flow: FlowOptions {
                priority: sig.priority,
                cost: sig.cost,
                critical: sig.critical,
                rate: sig.rate.map(str::to_owned),
                windows: sig.windows.iter().map(|w| (*w).to_owned()).collect(),
                tz: sig.tz.map(str::to_owned),
                ..FlowOptions::default()
            },
            limit_key_arg: sig.limit_key_arg,
            fair_key_arg: sig.fair_key_arg,
            no_overlap: sig.overlap,
            unique: reg.unique.as_ref().map(UniqueDefinition::of),
            expires_in_ms: match reg.expiry {
                Some(Expiry {
                    deadline: Deadline::In(ttl),
                    ..
                }) => Some(ms(ttl)),
                _ => None,
            },
            on_expire: reg.expiry.map(|e| e.on_expire).unwrap_or_default(),
            defined_at: reg.defined_at.to_owned(),
        }
    }

    /// The expiry every dispatch of it carries unless the producer gives its own; refused if
    /// the published `expires_in_ms` is not one a job may have (zero, past the horizon).
    pub fn expiry(&self) -> crate::error::Result<Option<Expiry>> {
        let Some(ttl) = self.expires_in_ms else {
            return Ok(None);
        };
        let ttl = crate::expiry::check_delay(std::time::Duration::from_millis(ttl))?;
        Ok(Some(Expiry {
            deadline: Deadline::In(ttl),
            on_expire: self.on_expire,
        }))
    }

    /// The definition as stored: compact JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a definition always serializes")
    }
}

impl UniqueDefinition {
    fn of(options: &UniqueOptions) -> UniqueDefinition {
        UniqueDefinition {
            for_ms: ms(options.ttl),
            until: match options.until {
                UniqueUntil::Start => "start",
                UniqueUntil::Success => "success",
            }
            .to_owned(),
            debounce_ms: options.debounce.map(ms),
        }
    }

    /// The options a dispatch carries.
    pub fn options(&self) -> UniqueOptions {
        use std::time::Duration;
        UniqueOptions {
            ttl: Duration::from_millis(self.for_ms),
            until: if self.until == "start" {
                UniqueUntil::Start
            } else {
                UniqueUntil::Success
            },
            debounce: self.debounce_ms.map(Duration::from_millis),
        }
    }
}

fn is_dead(on_expire: &OnExpire) -> bool {
    *on_expire == OnExpire::Dead
}

fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
