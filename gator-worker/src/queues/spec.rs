//! The `--queues` spec: `critical,default` (strict order) or `high:3,default:1` (weighted).

use std::fmt;
use std::str::FromStr;

/// Which queues a worker takes jobs from, and in what order it tries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueSelection {
    /// `critical,default`: always try the first non-empty queue in this order.
    Strict(Vec<String>),
    /// `high:3,default:1`: each fetch orders the queues by weighted random shuffle, so
    /// `high` is tried first three times as often as `default`, and no queue starves.
    Weighted(Vec<(String, u32)>),
    /// No `--queues`: every queue in the known-queues set, shuffled with equal weights.
    AllKnown,
}

/// Why a `--queues` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueueSpecError(String);

impl FromStr for QueueSelection {
    type Err = QueueSpecError;

    /// Parses `name[:weight],...`. Any weight makes the selection weighted (a queue without
    /// one weighs 1); no weight at all means strict order.
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let mut queues: Vec<(String, Option<u32>)> = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, weight) = match part.split_once(':') {
                Some((name, w)) => {
                    let weight = w
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|w| *w >= 1)
                        .ok_or_else(|| {
                            QueueSpecError(format!(
                                "weight {w:?} of queue {name:?} must be a whole number from 1 up"
                            ))
                        })?;
                    (name.trim(), Some(weight))
                }
                None => (part, None),
            };
            crate::door::validate_queue(name).map_err(|e| QueueSpecError(e.to_string()))?;
            if queues.iter().any(|(q, _)| q == name) {
                return Err(QueueSpecError(format!("queue {name:?} is listed twice")));
            }
            queues.push((name.to_owned(), weight));
        }
        if queues.is_empty() {
            return Err(QueueSpecError(
                "no queue named: use e.g. `high:3,default:1` or `critical,default`".into(),
            ));
        }
        if queues.iter().all(|(_, w)| w.is_none()) {
            Ok(QueueSelection::Strict(
                queues.into_iter().map(|(q, _)| q).collect(),
            ))
        } else {
            Ok(QueueSelection::Weighted(
                queues
                    .into_iter()
                    .map(|(q, w)| (q, w.unwrap_or(1)))
                    .collect(),
            ))
        }
    }
}

impl fmt::Display for QueueSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueSelection::Strict(q) => f.write_str(&q.join(",")),
            QueueSelection::Weighted(q) => {
                let parts: Vec<String> = q.iter().map(|(n, w)| format!("{n}:{w}")).collect();
                f.write_str(&parts.join(","))
            }
            QueueSelection::AllKnown => f.write_str("(every known queue)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<QueueSelection, QueueSpecError> {
        s.parse()
    }

    #[test]
    fn weights_make_a_weighted_selection_and_missing_weights_count_as_one() {
        assert_eq!(
            parse("high:3,default:1").expect("valid"),
            QueueSelection::Weighted(vec![("high".into(), 3), ("default".into(), 1)])
        );
        assert_eq!(
            parse("high:3, low").expect("valid"),
            QueueSelection::Weighted(vec![("high".into(), 3), ("low".into(), 1)])
        );
    }

    #[test]
    fn no_weights_means_strict_order() {
        assert_eq!(
            parse("critical,default").expect("valid"),
            QueueSelection::Strict(vec!["critical".into(), "default".into()])
        );
    }

    #[test]
    fn bad_specs_are_refused_with_the_reason() {
        assert!(parse("").unwrap_err().to_string().contains("no queue"));
        assert!(parse("high:0").unwrap_err().to_string().contains("weight"));
        assert!(parse("high:x").unwrap_err().to_string().contains("weight"));
        assert!(
            parse("a{b}")
                .unwrap_err()
                .to_string()
                .contains("invalid queue name")
        );
        assert!(parse("a,a").unwrap_err().to_string().contains("twice"));
    }
}
