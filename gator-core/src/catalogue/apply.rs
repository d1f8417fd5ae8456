//! A definition applied to a by-name dispatch: its arguments checked against the parameters,
//! and the flow and unique options a typed dispatch of the same job would carry.

use super::definition::{Definition, Param};
use crate::error::{Error, Result};
use crate::flow::FlowOptions;
use crate::job::signature::Overlap;
use crate::unique::Unique;
use serde_json::Value;

/// The options a by-name dispatch takes from the catalogue.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// The flow options (empty for a job with none).
    pub flow: FlowOptions,
    /// The unique lock, with its default key (the wire name and the arguments).
    pub unique: Option<Unique>,
    /// The job's expiry (`expires_in`, `on_expire`), unless the producer gives its own.
    pub expiry: Option<crate::expiry::Expiry>,
}

impl Definition {
    /// Checks `args` (a JSON array) against the parameters, and gives the options a typed
    /// dispatch of this job with these arguments would carry.
    pub fn apply(&self, args: &Value) -> Result<Applied> {
        let list = self.check_args(args)?;
        let mut flow = self.flow.clone();
        if let Some(index) = self.limit_key_arg {
            flow.key = Some(self.key_text(list, index, "limit key")?);
        }
        if let Some(index) = self.fair_key_arg {
            flow.fair = Some(self.key_text(list, index, "fair key")?);
        }
        flow.overlap = match self.no_overlap {
            Overlap::None => None,
            Overlap::Args => Some(crate::flow::overlap::default_key(&self.job, args)),
            Overlap::Arg(index) => Some(crate::flow::overlap::fit_key(self.key_text(
                list,
                index,
                "overlap key",
            )?)),
        };
        flow.validate()?;
        let unique = self.unique.as_ref().map(|u| {
            let options = u.options();
            Unique::new(crate::unique::default_key(&self.job, args), &options)
        });
        let expiry = self.expiry()?;
        Ok(Applied {
            flow,
            unique,
            expiry,
        })
    }

    /// `args` as a list of this job's arity, each of a kind its type takes.
    fn check_args<'a>(&self, args: &'a Value) -> Result<&'a [Value]> {
        let Some(list) = args.as_array() else {
            return Err(invalid(
                "args must be a JSON array, one element per parameter".into(),
            ));
        };
        let Some(params) = &self.params else {
            return Ok(list);
        };
        if list.len() != params.len() {
            return Err(invalid(format!(
                "job {:?} takes {} argument{} ({}), got {}",
                self.job,
                params.len(),
                if params.len() == 1 { "" } else { "s" },
                signature(params),
                list.len()
            )));
        }
        for (i, (param, value)) in params.iter().zip(list).enumerate() {
            if let Some(wanted) = mismatch(&param.ty, value) {
                return Err(invalid(format!(
                    "argument {} (`{}: {}`) of job {:?} must be {wanted}, got {}",
                    i + 1,
                    param.name,
                    param.ty,
                    self.job,
                    crate::error::cut_name(&value.to_string())
                )));
            }
        }
        Ok(list)
    }

    /// The text of argument `index` as a key (what `to_string` gives for a string, an integer
    /// or a boolean in Rust).
    fn key_text(&self, list: &[Value], index: usize, what: &str) -> Result<String> {
        match list.get(index) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
            Some(Value::Bool(b)) => Ok(b.to_string()),
            _ => Err(invalid(format!(
                "job {:?} takes its {what} from argument {}, which must be a string, an integer or a boolean",
                self.job,
                index + 1
            ))),
        }
    }
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgs { reason }
}

fn signature(params: &[Param]) -> String {
    params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.ty))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What kind of JSON value a Rust type `ty` takes, if `value` is not one; `None` when it fits
/// or the type is not one of the common ones (a struct, an enum: serde decides at the worker).
fn mismatch(ty: &str, value: &Value) -> Option<&'static str> {
    let ty: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
    if let Some(inner) = ty.strip_prefix("Option<").and_then(|t| t.strip_suffix('>')) {
        return if value.is_null() {
            None
        } else {
            mismatch(inner, value)
        };
    }
    let (wanted, fits) = match ty.as_str() {
        "String" | "char" => ("a string", value.is_string()),
        "bool" => ("a boolean", value.is_boolean()),
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => {
            ("a non-negative integer", value.is_u64())
        }
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => {
            ("an integer", value.is_i64() || value.is_u64())
        }
        "f32" | "f64" => ("a number", value.is_number()),
        t if ["Vec<", "VecDeque<", "HashSet<", "BTreeSet<"]
            .iter()
            .any(|p| t.starts_with(p)) =>
        {
            ("an array", value.is_array())
        }
        t if t.starts_with("HashMap<") || t.starts_with("BTreeMap<") => {
            ("an object", value.is_object())
        }
        _ => return None,
    };
    (!fits).then_some(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn definition() -> Definition {
        serde_json::from_value(json!({
            "job": "send_email", "queue": "mail", "retries": 3,
            "params": [{"name": "to", "type": "String"}, {"name": "count", "type": "u32"},
                       {"name": "tag", "type": "Option<String>"}],
            "priority": 10, "limit_key_arg": 0, "rate": "email",
            "no_overlap": {"arg": 1},
            "unique": {"for_ms": 60000, "until": "start"}
        }))
        .expect("a definition")
    }

    #[test]
    fn options_come_from_the_definition_and_the_arguments() {
        let applied = definition().apply(&json!(["eu", 7, null])).expect("fits");
        assert_eq!(applied.flow.priority, Some(10));
        assert_eq!(applied.flow.key.as_deref(), Some("eu"));
        assert_eq!(applied.flow.rate.as_deref(), Some("email"));
        assert_eq!(applied.flow.overlap.as_deref(), Some("7"));
        let unique = applied.unique.expect("unique");
        assert_eq!(unique.key, r#"send_email:["eu",7,null]"#);
        assert_eq!(unique.ttl, 60_000);
    }

    #[test]
    fn a_wrong_arity_or_kind_is_refused_saying_what_the_job_takes() {
        let msg = definition().apply(&json!(["eu"])).unwrap_err().to_string();
        assert!(
            msg.contains("takes 3 arguments (to: String, count: u32, tag: Option<String>), got 1"),
            "{msg}"
        );
        let msg = definition()
            .apply(&json!(["eu", "ten", null]))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("argument 2 (`count: u32`)") && msg.contains("non-negative integer"),
            "{msg}"
        );
        let msg = definition()
            .apply(&json!([5, 1, "x"]))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("must be a string"), "{msg}");
    }
}
