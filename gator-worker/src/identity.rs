//! Who this process is: its id in the lease sets, and the predecessors it may take over at
//! start without waiting for their leases.
//!
//! **The rule.** A predecessor's lease is proven stale only when that process cannot be alive:
//! - with `--worker-id NAME`, every other process `NAME:<nonce>`: the name is the operator's
//!   promise that one process of that name lives at a time (a pod or container name);
//! - without one, on Linux, every other process whose id names this process's boot of the
//!   kernel (`/proc/sys/kernel/random/boot_id`), PID namespace (`/proc/self/ns/pid`) and pid:
//!   one pid names one live process in a namespace, and it is this one now, so the other
//!   process with that pid has exited. A namespace that was destroyed ended every process in
//!   it, so a namespace id reused by the kernel proves the same.
//!
//! Anything else waits for the lease: a host name is not unique (two containers of one pod
//! share it, each with pid 1), so the same host and pid prove nothing. A container restarted
//! in a new PID namespace is such a case: give it a `--worker-id` (the pod name) to take its
//! predecessor's jobs back at once.
//!
//! **One process, several workers.** An app may start more than one worker in one process:
//! they share the pid (and the worker id, if given one), and are alive. Each id's nonce begins
//! with this process's mark, drawn once per process, so a worker spares the ids that carry its
//! own process's mark ([`predecessors`]).

use std::sync::LazyLock;

/// This OS process's mark: six hex digits drawn once, the first half of every nonce.
static PROCESS_MARK: LazyLock<String> =
    LazyLock::new(|| format!("{:06x}", rand::random::<u32>() & 0xff_ffff));

/// A new process id: `<worker id>:<nonce>` with a `--worker-id`; else
/// `<host>:<pid>:<lineage>:<nonce>` on Linux (see [`take_over_prefix`]) and
/// `<host>:<pid>:<nonce>` elsewhere. The nonce, twelve hex digits, is this OS process's mark
/// and six of this run's: each run is unique, and the runs of one process say so.
pub fn process_id(worker_id: Option<&str>) -> String {
    let nonce = rand::random::<u32>() & 0xff_ffff;
    let mark = PROCESS_MARK.as_str();
    match take_over_prefix(worker_id) {
        Some(prefix) => format!("{prefix}:{mark}{nonce:06x}"),
        None => format!("{}:{}:{mark}{nonce:06x}", hostname(), std::process::id()),
    }
}

/// What a worker takes over at start ([`take_over_prefix`]), with the prefix of the ids of
/// this OS process's own workers, `<prefix>:<process mark>`, which it spares.
pub fn predecessors(worker_id: Option<&str>) -> Option<(String, String)> {
    take_over_prefix(worker_id).map(|prefix| {
        let spared = format!("{prefix}:{}", PROCESS_MARK.as_str());
        (prefix, spared)
    })
}

/// The prefix of the ids of the processes this one may take over at start (recovering their
/// jobs whatever their leases): its worker id, or `<host>:<pid>:<lineage>` where the lineage
/// names the kernel's boot and the PID namespace (`b<boot id>n<namespace inode>`). `None`
/// where neither can be known: then only leases that expired are recovered.
pub fn take_over_prefix(worker_id: Option<&str>) -> Option<String> {
    match worker_id {
        Some(name) => Some(name.to_owned()),
        None => lineage().map(|lineage| format!("{}:{}:{lineage}", hostname(), std::process::id())),
    }
}

/// `b<boot id, 32 hex>n<PID namespace inode>`, read from `/proc`; `None` if either is missing.
fn lineage() -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let boot: String = boot.chars().filter(char::is_ascii_hexdigit).collect();
    let ns = std::fs::read_link("/proc/self/ns/pid").ok()?;
    // `pid:[4026531836]`
    let inode: String = ns
        .to_string_lossy()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    (boot.len() == 32 && !inode.is_empty()).then(|| format!("b{boot}n{inode}"))
}

/// This machine's name, for process ids an operator can read (never for deciding anything on
/// its own: containers share host names).
pub fn hostname() -> String {
    let name = gethostname::gethostname()
        .to_string_lossy()
        .trim()
        .to_owned();
    if name.is_empty() {
        "localhost".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_its_take_over_prefix_and_a_nonce() {
        let id = process_id(Some("orders-worker-0"));
        assert!(id.starts_with("orders-worker-0:") && id.len() == "orders-worker-0:".len() + 12);
        let (_, spared) = predecessors(Some("orders-worker-0")).unwrap();
        assert!(id.starts_with(&spared), "{id} is this process's: {spared}");
        let prefix = take_over_prefix(None);
        let id = process_id(None);
        match prefix {
            // On Linux: host, pid and lineage, then the nonce, which has no ':'.
            Some(prefix) => {
                let pid = format!(":{}:b", std::process::id());
                assert!(prefix.contains(&pid), "{prefix}");
                let rest = id.strip_prefix(&format!("{prefix}:")).expect("the prefix");
                assert!(!rest.contains(':') && rest.len() == 12, "{id}");
            }
            None => assert!(id.contains(&format!(":{}:", std::process::id()))),
        }
        assert_ne!(process_id(None), process_id(None), "each run is unique");
    }
}
