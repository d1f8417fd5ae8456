//! The flow-control options: `priority`, `cost`, `critical`, `limit_key`, `rate`, `tz`,
//! `no_overlap` and `overlap_key` (`windows` has its own file). The priority range, the cost's
//! and what a rate limiter may be called are the rules the runtime checks too (gator-rules).

use super::JobOptions;
use super::arg_keys::arg_name_value;
use super::values::{check_unset, flag, int_value, string_value};
use gator_rules::{CostError, DEFAULT_PRIORITY, MAX_FLOW_NAME, MAX_PRIORITY};
use syn::{Ident, Meta};

/// `priority = 10`.
pub(super) fn priority(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.priority, key)?;
    let expected = format!("a priority from 0 (first) to {MAX_PRIORITY}, as in `priority = 10`");
    let (n, span) = int_value(meta, key, &expected)?;
    let Some(priority) = gator_rules::priority(n) else {
        return Err(syn::Error::new(
            span,
            format!(
                "priority {n} is too high: a priority is from 0 (runs first) to {MAX_PRIORITY}; \
                 the default is {DEFAULT_PRIORITY}"
            ),
        ));
    };
    options.priority = Some(priority);
    Ok(())
}

/// `cost = 2`.
pub(super) fn cost(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.cost, key)?;
    let (n, span) = int_value(meta, key, "a cost of 1 or more units, as in `cost = 2`")?;
    match gator_rules::cost(n) {
        Ok(cost) => options.cost = Some(cost),
        Err(CostError::Zero) => {
            return Err(syn::Error::new(
                span,
                "a cost of 0 would take no part of the limit: a cost is 1 or more units; for a \
                 job that runs outside the limit write `critical`",
            ));
        }
        Err(CostError::TooHigh) => {
            return Err(syn::Error::new(
                span,
                format!("cost {n} is too high: a cost is from 1 to {}", u32::MAX),
            ));
        }
    }
    Ok(())
}

/// `critical`.
pub(super) fn critical(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.critical, key)?;
    let message = "`critical` takes no value: write `#[job(critical)]`";
    options.critical = Some(flag(meta, key, message)?);
    Ok(())
}

/// `limit_key = region`: the argument is found once the fn is checked
/// ([`JobOptions::resolve_limit_key`]).
pub(super) fn limit_key(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.limit_key, key)?;
    options.limit_key = Some(arg_name_value(meta, key, "region")?);
    Ok(())
}

/// `fair_key = tenant`: the argument whose value is the job's fair key.
pub(super) fn fair_key(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.fair_key, key)?;
    options.fair_key = Some(arg_name_value(meta, key, "tenant")?);
    Ok(())
}

/// `rate = "email"`.
pub(super) fn rate(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.rate, key)?;
    let rate = string_value(meta, key, "email")?;
    if let Err(problem) = gator_rules::flow_name(&rate.value()) {
        return Err(syn::Error::new(
            rate.span(),
            format!(
                "invalid rate limiter name: it {problem}; a name is 1 to {MAX_FLOW_NAME} bytes \
                 that show as themselves, as in `rate = \"email\"` (its rate is set in \
                 Redis: `gator-worker queue rate QUEUE 100/1s --limiter NAME`)"
            ),
        ));
    }
    options.rate = Some(rate);
    Ok(())
}

/// `tz = "Europe/Berlin"`: only checked for a value here; the worker knows the zones.
pub(super) fn tz(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.tz, key)?;
    let tz = string_value(meta, key, "Europe/Berlin")?;
    if tz.value().trim().is_empty() {
        return Err(syn::Error::new(
            tz.span(),
            "the time zone is empty: write an IANA zone such as `tz = \"Europe/Berlin\"`",
        ));
    }
    options.tz = Some(tz);
    Ok(())
}

/// `no_overlap`.
pub(super) fn no_overlap(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.no_overlap, key)?;
    let message = "`no_overlap` takes no value: write `#[job(no_overlap)]`, and \
                   `overlap_key = account` to key by one argument";
    options.no_overlap = Some(flag(meta, key, message)?);
    Ok(())
}

/// `overlap_key = account`: found as `limit_key` is ([`JobOptions::resolve_overlap_key`]).
pub(super) fn overlap_key(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.overlap_key, key)?;
    options.overlap_key = Some(arg_name_value(meta, key, "account")?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::args::tests::parse;
    use quote::quote;
    use syn::LitStr;

    #[test]
    fn flow_options_are_read() {
        let (options, errors) = parse(quote!(
            priority = 0,
            cost = 3,
            critical,
            limit_key = region,
            rate = "email",
            windows = ["05:00-07:00", "22:00-02:00"],
            tz = "Europe/Berlin"
        ));
        assert_eq!(errors, 0);
        assert_eq!(options.priority, Some(0));
        assert_eq!(options.cost, Some(3));
        assert!(options.critical.is_some());
        assert_eq!(
            options.limit_key.map(|k| k.to_string()).as_deref(),
            Some("region")
        );
        assert_eq!(options.rate.map(|r| r.value()).as_deref(), Some("email"));
        let windows: Vec<String> = options
            .windows
            .unwrap_or_default()
            .iter()
            .map(LitStr::value)
            .collect();
        assert_eq!(windows, ["05:00-07:00", "22:00-02:00"]);
        assert_eq!(
            options.tz.map(|tz| tz.value()).as_deref(),
            Some("Europe/Berlin")
        );
        let (options, errors) = parse(quote!(priority = 9999, cost = 4294967295));
        assert_eq!(
            (errors, options.priority, options.cost),
            (0, Some(9999), Some(u32::MAX))
        );
    }

    #[test]
    fn bad_flow_options_are_each_refused() {
        let long = "r".repeat(129);
        let cases = [
            quote!(priority = 10000),
            quote!(priority = -1),
            quote!(priority = "10"),
            quote!(priority),
            quote!(cost = 0),
            quote!(cost = 4294967296),
            quote!(cost = 1.5),
            quote!(critical = true),
            quote!(critical(yes)),
            quote!(limit_key = "region"),
            quote!(limit_key = args.region),
            quote!(limit_key),
            quote!(rate = ""),
            quote!(rate = #long),
            quote!(rate = "a\tb"),
            quote!(rate = email),
            quote!(windows = []),
            quote!(windows = "05:00-07:00"),
            quote!(windows = [5]),
            quote!(windows = ["05:00-07:00"], windows = ["08:00-09:00"]),
            quote!(tz = "UTC"),
            quote!(windows = ["05:00-07:00"], tz = ""),
            quote!(windows = ["05:00-07:00"], tz = Berlin),
            quote!(critical, critical),
            quote!(no_overlap = true),
            quote!(no_overlap, no_overlap),
            quote!(overlap_key = "account"),
            quote!(overlap_key = args.account),
            quote!(overlap_key),
            quote!(critical, no_overlap),
            quote!(critical, overlap_key = account),
        ];
        for tokens in cases {
            assert_eq!(parse(tokens.clone()).1, 1, "{tokens}");
        }
        // Each bad window is reported, and a refused `windows` still excuses `tz`.
        assert_eq!(
            parse(quote!(windows = ["5-7", "05:00-05:00", 9], tz = "UTC")).1,
            3
        );
        let (options, errors) = parse(quote!(rate = #long, cost = 2));
        assert_eq!(
            (errors, options.rate.is_none(), options.cost),
            (1, true, Some(2))
        );
        let just_long_enough = "é".repeat(64);
        assert_eq!(parse(quote!(rate = #just_long_enough)).1, 0);
    }
}
