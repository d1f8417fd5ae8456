//! The Redis server itself, not Gator's data: its clock (`TIME`, the clock every decision is
//! made on) and what `INFO` says of it.

use crate::error::Result;
use redis::aio::ConnectionLike;
use serde::Serialize;

/// Which server answers, from `INFO server`: Redis, or Valkey (which reports
/// `redis_version:7.2.4` whatever its own version, and says what it is in `server_name` and
/// `valkey_version`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Server {
    /// `redis` or `valkey` (another server that names itself in `server_name`: that name).
    pub name: String,
    /// Its own version: `valkey_version` for Valkey, else `redis_version`.
    pub version: String,
}

impl Server {
    /// What one `INFO server` text says.
    pub fn from_info(text: &str) -> Server {
        let field = |name: &str| {
            text.lines()
                .find_map(|line| line.trim().strip_prefix(name)?.strip_prefix(':'))
                .map(str::to_owned)
        };
        let name = field("server_name").unwrap_or_else(|| "redis".to_owned());
        let version = field(&format!("{name}_version"))
            .or_else(|| field("redis_version"))
            .unwrap_or_default();
        Server { name, version }
    }

    /// The major version (0 if it cannot be read).
    pub fn major(&self) -> u32 {
        let major = self.version.split('.').next().unwrap_or_default();
        major.parse().unwrap_or(0)
    }

    /// `Err` with what is needed if Gator's scripts cannot run on it: they declare Redis 7
    /// script flags (`#!lua flags=…`), which Redis 7.0 and Valkey 7.2 and later accept.
    pub fn supported(&self) -> std::result::Result<(), String> {
        let (least, major) = (7, self.major());
        if self.name == "valkey" && major > 0 && major < least {
            return Err(format!(
                "Gator needs Valkey 7.2 or newer; this server is {self}"
            ));
        }
        if self.name == "redis" && major < least {
            return Err(format!(
                "Gator needs Redis 7.0 or newer; this server is {self}"
            ));
        }
        Ok(())
    }
}

impl std::fmt::Display for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.name, self.version)
    }
}

/// Which server answers (on a cluster, the first node that answers `INFO`).
pub async fn identify(conn: &mut impl ConnectionLike) -> Result<Server> {
    let texts = info(conn, &["server"]).await?;
    Ok(texts
        .first()
        .map(|text| Server::from_info(text))
        .unwrap_or_default())
}

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

#[cfg(test)]
mod tests {
    use super::Server;

    #[test]
    fn valkey_is_told_from_redis_by_its_own_name_and_version() {
        let valkey = Server::from_info(
            "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n",
        );
        assert_eq!(valkey.to_string(), "valkey 9.1.2");
        assert_eq!(valkey.major(), 9);
        assert!(valkey.supported().is_ok());
        let redis =
            Server::from_info("# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n");
        assert_eq!(redis.to_string(), "redis 7.0.15");
        let old = Server::from_info("redis_version:6.2.14\r\n");
        assert_eq!(
            old.supported().unwrap_err(),
            "Gator needs Redis 7.0 or newer; this server is redis 6.2.14"
        );
    }
}
