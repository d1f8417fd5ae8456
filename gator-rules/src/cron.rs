//! The shape of a cron expression, the part of its rule `#[job(cron = ..)]` can check at
//! compile time. The fields themselves are read by croner in gator-core, at run time.

/// A cron expression's shape: 5 fields (`*/5 * * * *`: minute hour day-of-month month
/// day-of-week), 6 (a seconds field first), or a nickname (`@daily`). Otherwise
/// `Err(fields)`, the number of fields it has.
pub fn cron_shape(expr: &str) -> Result<(), usize> {
    let fields = expr.split_whitespace().count();
    if expr.trim_start().starts_with('@') || (5..=6).contains(&fields) {
        return Ok(());
    }
    Err(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cron_expressions_have_five_or_six_fields_or_a_nickname() {
        let ok = |c: &str| cron_shape(c).is_ok();
        assert!(ok("*/5 * * * *") && ok("0 */5 * * * *") && ok("@daily") && ok(" @hourly"));
        assert!(!ok("") && !ok("* * * *") && !ok("0 0 0 * * * 2030"));
        assert_eq!(cron_shape("* * * *"), Err(4));
        assert_eq!(cron_shape("0 0 0 * * * 2030"), Err(7));
    }
}
