//! The Redis server itself, not Gator's data: its clock (`TIME`, the clock every decision is
//! made on) and what `INFO` says of it.

use crate::error::Result;
use redis::aio::ConnectionLike;

/// Redis's clock, ms since the Unix epoch (`TIME`).
pub async fn time(conn: &mut impl ConnectionLike) -> Result<u64> {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(secs * 1000 + micros / 1000)
}

/// The text of `INFO sections...`: one text for a server, one per node for a cluster.
pub async fn info(conn: &mut impl ConnectionLike, sections: &[&str]) -> Result<Vec<String>> {
    let reply: redis::Value = redis::cmd("INFO").arg(sections).query_async(conn).await?;
    let mut texts = Vec::new();
    collect_texts(reply, &mut texts);
    Ok(texts)
}

/// The INFO texts in a reply: one for a server, one per node for a cluster (a map or an array
/// of them, depending on how the client aggregates).
fn collect_texts(value: redis::Value, texts: &mut Vec<String>) {
    match value {
        redis::Value::BulkString(bytes) => texts.push(String::from_utf8_lossy(&bytes).into_owned()),
        redis::Value::VerbatimString { text, .. } | redis::Value::SimpleString(text) => {
            texts.push(text)
        }
        redis::Value::Array(values) | redis::Value::Set(values) => {
            values.into_iter().for_each(|v| collect_texts(v, texts))
        }
        redis::Value::Map(pairs) => pairs.into_iter().for_each(|(_, v)| collect_texts(v, texts)),
        _ => {}
    }
}
