//! A job's flow options that `#[job(priority = .., cost = ..)]` checks at compile time and
//! `FlowOptions::validate` at dispatch: the priority range and the cost's.

/// The priority of a job that names none: lower runs first.
pub const DEFAULT_PRIORITY: u16 = 100;

/// The highest (least urgent) priority a job may have.
pub const MAX_PRIORITY: u16 = 9999;

/// A job's priority: 0 (runs first) to [`MAX_PRIORITY`]; `None` above.
pub fn priority(n: u64) -> Option<u16> {
    u16::try_from(n).ok().filter(|p| *p <= MAX_PRIORITY)
}

/// Why a cost is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostError {
    /// 0 would take no part of the limit: a job outside the limit is `critical` instead.
    Zero,
    /// Above `u32::MAX` units.
    TooHigh,
}

/// A job's cost, the units of its queue's concurrency limit it takes while it runs: 1 to
/// `u32::MAX`.
pub fn cost(n: u64) -> Result<u32, CostError> {
    match u32::try_from(n) {
        Ok(0) => Err(CostError::Zero),
        Ok(cost) => Ok(cost),
        Err(_) => Err(CostError::TooHigh),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_priority_is_from_0_to_9999() {
        assert_eq!(priority(0), Some(0));
        assert_eq!(priority(u64::from(MAX_PRIORITY)), Some(9999));
        assert_eq!(priority(10_000), None);
        assert_eq!(priority(u64::MAX), None);
        assert_eq!(
            priority(u64::from(DEFAULT_PRIORITY)),
            Some(DEFAULT_PRIORITY)
        );
    }

    #[test]
    fn a_cost_is_one_unit_or_more() {
        assert_eq!(cost(0), Err(CostError::Zero));
        assert_eq!(cost(1), Ok(1));
        assert_eq!(cost(u64::from(u32::MAX)), Ok(u32::MAX));
        assert_eq!(cost(u64::from(u32::MAX) + 1), Err(CostError::TooHigh));
    }
}
