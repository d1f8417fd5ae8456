//! The table of jobs this binary knows, built from what every `#[job]` submitted to
//! `inventory`: linking a crate is enough to register its jobs.

use crate::context::{Context, StateNeed};
use crate::error::{Error, Result};
use crate::job::signature::Signature;
use crate::job::{Execution, Job};
use std::collections::HashMap;
use std::time::Duration;

/// One `#[job]` as seen by the worker. The macro submits one per job type.
#[derive(Debug)]
pub struct JobRegistration {
    /// The wire name.
    pub name: &'static str,
    /// The job's default queue.
    pub queue: &'static str,
    /// Where the job fn is defined (`module::fn at file:line`), for error messages.
    pub defined_at: &'static str,
    /// Decodes the payload's `args` (their JSON text) and returns the work to run in `Context`.
    pub run: fn(&str, Context) -> serde_json::Result<Execution>,
    /// The application state types the job takes (`State<T>` parameters).
    pub states: &'static [StateNeed],
    /// Retries after the first attempt.
    pub retries: u32,
    /// How long one attempt may run.
    pub timeout: Option<Duration>,
    /// The delay before the next attempt after a number of failures.
    pub backoff: fn(u32) -> Duration,
    /// The job's retry strategy, if it has one (`None` from it: `retries` and `backoff`).
    pub retry: fn(&crate::retry::RetryContext<'_>) -> Option<crate::retry::RetryDecision>,
    /// Its parameters and the options it takes from them, for the catalogue.
    pub signature: Signature,
    /// Its unique options, for the catalogue.
    pub unique: Option<crate::unique::UniqueOptions>,
    /// Its expiry (`#[job(expires_in = ..)]`), for the catalogue: by-name dispatches carry it.
    pub expiry: Option<crate::expiry::Expiry>,
}

inventory::collect!(JobRegistration);

impl JobRegistration {
    /// The registration of `J`; `defined_at` says where its fn lives.
    pub const fn of<J: Job>(defined_at: &'static str) -> JobRegistration {
        JobRegistration {
            name: J::NAME,
            queue: J::QUEUE,
            defined_at,
            run: run_job::<J>,
            states: J::STATES,
            retries: J::RETRIES,
            timeout: J::TIMEOUT,
            backoff: J::backoff,
            retry: J::retry,
            signature: J::SIGNATURE,
            unique: J::UNIQUE,
            expiry: J::EXPIRY,
        }
    }
}

fn run_job<J: Job>(args: &str, ctx: Context) -> serde_json::Result<Execution> {
    let args: J::Args = serde_json::from_str(args)?;
    Ok(J::execute(args, ctx))
}

/// Wire name → registration, checked for duplicates.
#[derive(Debug, Default)]
pub struct Registry {
    jobs: HashMap<&'static str, &'static JobRegistration>,
}

impl Registry {
    /// Every job linked into this binary. Fails, naming both, if two claim one wire name:
    /// running either would be a guess.
    pub fn from_inventory() -> Result<Registry> {
        Registry::from_registrations(inventory::iter::<JobRegistration>)
    }

    /// A registry of the given registrations (the worker uses [`Registry::from_inventory`]).
    pub fn from_registrations(
        registrations: impl IntoIterator<Item = &'static JobRegistration>,
    ) -> Result<Registry> {
        let mut jobs = HashMap::new();
        for reg in registrations {
            if let Some(first) = jobs.insert(reg.name, reg) {
                let (a, b) = sorted(first.defined_at, reg.defined_at);
                return Err(Error::DuplicateJobName {
                    name: reg.name.to_owned(),
                    first: a,
                    second: b,
                });
            }
        }
        Ok(Registry { jobs })
    }

    /// Only the jobs named in `names` (wire names): a worker that runs some of the linked jobs.
    /// Fails naming the first name no job has, and the names there are.
    pub fn only<S: AsRef<str>>(&self, names: &[S]) -> Result<Registry> {
        let mut jobs = HashMap::new();
        for name in names {
            let name = name.as_ref();
            match self.jobs.get_key_value(name) {
                Some((key, reg)) => {
                    jobs.insert(*key, *reg);
                }
                None => {
                    return Err(Error::UnknownJob {
                        name: name.to_owned(),
                        known: self.names().join(", "),
                    });
                }
            }
        }
        Ok(Registry { jobs })
    }

    /// Every registration, sorted by wire name.
    pub fn registrations(&self) -> Vec<&'static JobRegistration> {
        self.names()
            .into_iter()
            .filter_map(|n| self.get(n))
            .collect()
    }

    /// The registration for a wire name.
    pub fn get(&self, name: &str) -> Option<&'static JobRegistration> {
        self.jobs.get(name).copied()
    }

    /// Every registered wire name, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self.jobs.keys().copied().collect();
        names.sort_unstable();
        names
    }

    /// How many jobs are registered.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether no job is registered.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

// inventory's iteration order is unspecified; sort so the message is stable.
fn sorted(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never(_: &str, _: Context) -> serde_json::Result<Execution> {
        Ok(Execution::Blocking(Box::new(|| Ok(None))))
    }

    const TEMPLATE: JobRegistration = JobRegistration {
        name: "",
        queue: "default",
        defined_at: "",
        run: never,
        states: &[],
        retries: 25,
        timeout: None,
        backoff: crate::retry::default_backoff,
        retry: no_strategy,
        signature: Signature::UNKNOWN,
        unique: None,
        expiry: None,
    };

    fn no_strategy(_: &crate::retry::RetryContext<'_>) -> Option<crate::retry::RetryDecision> {
        None
    }
    static A: JobRegistration = JobRegistration {
        name: "dup",
        queue: "default",
        defined_at: "app::a at src/a.rs:1",
        run: never,
        ..TEMPLATE
    };
    static B: JobRegistration = JobRegistration {
        name: "dup",
        queue: "default",
        defined_at: "app::b at src/b.rs:9",
        run: never,
        ..TEMPLATE
    };
    static C: JobRegistration = JobRegistration {
        name: "other",
        queue: "default",
        defined_at: "app::c at src/c.rs:3",
        run: never,
        ..TEMPLATE
    };

    #[test]
    fn duplicate_wire_names_are_refused_naming_both() {
        let err = Registry::from_registrations([&B, &C, &A]).expect_err("duplicate must fail");
        let msg = err.to_string();
        assert!(msg.contains("\"dup\""), "{msg}");
        assert!(
            msg.contains("app::a at src/a.rs:1") && msg.contains("app::b at src/b.rs:9"),
            "{msg}"
        );
    }

    #[test]
    fn distinct_names_are_all_found() {
        let reg = Registry::from_registrations([&A, &C]).expect("no duplicates");
        assert_eq!(reg.names(), vec!["dup", "other"]);
        assert!(reg.get("other").is_some());
        assert!(reg.get("missing").is_none());
    }

    #[test]
    fn a_registry_narrowed_to_some_jobs_refuses_unknown_names() {
        let reg = Registry::from_registrations([&A, &C]).expect("no duplicates");
        let only = reg.only(&["other"]).expect("a known name");
        assert_eq!(only.names(), vec!["other"]);
        let msg = reg.only(&["typo"]).expect_err("unknown").to_string();
        assert!(
            msg.contains("\"typo\"") && msg.contains("dup, other"),
            "{msg}"
        );
    }
}
