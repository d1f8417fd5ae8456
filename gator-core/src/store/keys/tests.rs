//! Key names as Redis sees them: tags, namespaces, kinds.

use super::*;

#[test]
fn per_queue_keys_share_the_queue_hash_tag() {
    let k = Keys::default();
    assert_eq!(k.queue("high"), "gator:{high}:queue");
    assert_eq!(k.scheduled("high"), "gator:{high}:scheduled");
    assert_eq!(k.retry("high"), "gator:{high}:retry");
    assert_eq!(k.dead("high"), "gator:{high}:dead");
    assert_eq!(k.chain("high", "c1"), "gator:{high}:chain:c1");
    assert_eq!(k.inflight("high", "h:1:ab"), "gator:{high}:inflight:h:1:ab");
    assert_eq!(k.leases("high"), "gator:{high}:leases");
    assert_eq!(k.queues(), "gator:queues");
    assert_eq!(k.processes(), "gator:processes");
    assert_eq!(k.process("h:1:ab"), "gator:process:h:1:ab");
}

#[test]
fn namespace_goes_outside_the_braces() {
    let k = Keys::new("myapp:gator").expect("valid namespace");
    assert_eq!(k.queue("default"), "myapp:gator:{default}:queue");
    assert!(Keys::new("bad{ns}").is_err());
    assert!(Keys::new("").is_err());
}

#[test]
fn queue_names_that_would_break_the_hash_tag_are_refused() {
    assert!(validate_queue("default").is_ok());
    assert!(validate_queue("mail.high-2_x").is_ok());
    for bad in ["", "a{b", "a}b", "a:b", "a b", &"x".repeat(129)] {
        assert!(validate_queue(bad).is_err(), "{bad:?} should be refused");
    }
}
