//! What the dashboard is told: who may use it, which names it answers to, whether it may change
//! anything, and how much of a request it takes. [`WebConfig::validate`] is the one place that
//! says what a sound configuration is; the binary calls it at start, [`crate::router`] too.

use crate::host::HostPattern;
use crate::throttle::AuthThrottle;
use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

/// The fewest characters a token or basic-auth password may have. A shorter secret is
/// refused: online guessing is throttled, but a short secret still falls to patience.
pub const MIN_SECRET_CHARS: usize = 16;
/// The most bytes a token or password may have (every input is bounded, the config too).
pub const MAX_SECRET_BYTES: usize = 1024;
/// The most entries [`WebConfig::allowed_hosts`] may hold.
pub const MAX_ALLOWED_HOSTS: usize = 64;
/// How long a browser login lasts by default.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// The longest a browser login may be told to last.
pub const MAX_SESSION_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// The largest request body taken by default: a job's args are JSON, never files.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;
/// How long a request body may take to arrive by default, in all.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a request may take by default, from its head read to its answer.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How [`crate::router`] guards the dashboard and the API.
///
/// With neither an auth token nor basic auth, anyone who reaches the router may use it: the
/// right choice only behind something that authenticates, or on a loopback address (the
/// binary refuses anything else without `--insecure-no-auth`). Even then it answers only
/// requests addressed to a loopback name, the bound address or an allowed host, so a page of
/// another site cannot reach it through DNS rebinding. Its `Debug` output hides the secrets.
#[derive(Clone)]
pub struct WebConfig {
    /// A bearer token: `Authorization: Bearer <token>` for API clients, or `?token=<token>`
    /// once in a browser, which sets a session cookie (not the token). At least
    /// [`MIN_SECRET_CHARS`] characters.
    pub auth_token: Option<String>,
    /// HTTP basic auth, which a browser asks for itself; the password has at least
    /// [`MIN_SECRET_CHARS`] characters.
    pub basic_auth: Option<BasicAuth>,
    /// Refuse every action (each POST answers 403) and hide the buttons.
    pub read_only: bool,
    /// Host names (with or without a port) the dashboard answers to besides `localhost`,
    /// `127.0.0.1`, `[::1]` and [`WebConfig::bound_address`]: for a deployment behind a
    /// proxy. An entry without a port matches any port. Once any is given, the `Host` is
    /// checked in every auth mode; with none, only without auth.
    pub allowed_hosts: Vec<String>,
    /// The address the server listens on, always allowed as a `Host` with its port (unless it
    /// is unspecified, `0.0.0.0` or `[::]`, which no browser asks for). Does not make the host
    /// check apply with auth.
    pub bound_address: Option<SocketAddr>,
    /// Mark the session cookie `Secure` even when no proxy says `X-Forwarded-Proto: https`.
    pub secure_cookies: bool,
    /// How long a `?token=` login lasts (the cookie's `Max-Age` and the expiry inside it).
    pub session_ttl: Duration,
    /// The largest request body taken: a longer `Content-Length` is answered 413 at once.
    pub max_body_bytes: usize,
    /// How long a request body may take to arrive, in all (a slow sender is cut off).
    pub body_timeout: Duration,
    /// How long a request may take, from its head to its answer (503 `timeout` past it).
    pub request_timeout: Duration,
    /// How failed logins are throttled per client address.
    pub auth_throttle: AuthThrottle,
}

impl Default for WebConfig {
    fn default() -> WebConfig {
        WebConfig {
            auth_token: None,
            basic_auth: None,
            read_only: false,
            allowed_hosts: Vec::new(),
            bound_address: None,
            secure_cookies: false,
            session_ttl: DEFAULT_SESSION_TTL,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            auth_throttle: AuthThrottle::default(),
        }
    }
}

/// Why [`WebConfig::validate`] refused a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A token or password too short, blank, or too long.
    #[error(
        "the {what} is too weak: use {MIN_SECRET_CHARS} to {MAX_SECRET_BYTES} bytes, not only whitespace (e.g. head -c 24 /dev/urandom | base64)"
    )]
    WeakSecret {
        /// `auth token` or `basic-auth password`.
        what: &'static str,
    },
    /// An allowed host that is not a host name or address with an optional port.
    #[error("allowed host {entry:?} is not a host name or address with an optional port: {reason}")]
    BadHost {
        /// The entry as given.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// More allowed hosts than [`MAX_ALLOWED_HOSTS`].
    #[error("{count} allowed hosts: at most {MAX_ALLOWED_HOSTS}")]
    TooManyHosts {
        /// How many were given.
        count: usize,
    },
    /// A limit of zero, or a session longer than [`MAX_SESSION_TTL`].
    #[error("{what} must be {rule}")]
    BadLimit {
        /// Which setting.
        what: &'static str,
        /// What it must be.
        rule: &'static str,
    },
}

impl WebConfig {
    /// No auth, not read-only: mount it behind your own auth.
    pub fn new() -> WebConfig {
        WebConfig::default()
    }

    /// Requires this bearer token (see [`WebConfig::auth_token`]).
    pub fn auth_token(mut self, token: impl Into<String>) -> WebConfig {
        self.auth_token = Some(token.into());
        self
    }

    /// Accepts HTTP basic auth with this user and password.
    pub fn basic_auth(mut self, user: impl Into<String>, password: impl Into<String>) -> WebConfig {
        self.basic_auth = Some(BasicAuth {
            user: user.into(),
            password: password.into(),
        });
        self
    }

    /// Refuses every action (see [`WebConfig::read_only`]).
    pub fn read_only(mut self, read_only: bool) -> WebConfig {
        self.read_only = read_only;
        self
    }

    /// Answers these host names too, and checks `Host` in every auth mode (see
    /// [`WebConfig::allowed_hosts`]): `["gator.example.com", "10.0.0.5:9090"]`.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> WebConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts.extend(hosts.into_iter().map(Into::into));
        self
    }

    /// The address the server listens on, once bound (see [`WebConfig::bound_address`]).
    pub fn bound_address(mut self, address: SocketAddr) -> WebConfig {
        self.bound_address = Some(address);
        self
    }

    /// Marks the session cookie `Secure` (see [`WebConfig::secure_cookies`]).
    pub fn secure_cookies(mut self, secure: bool) -> WebConfig {
        self.secure_cookies = secure;
        self
    }

    /// How long a browser login lasts (see [`WebConfig::session_ttl`]).
    pub fn session_ttl(mut self, ttl: Duration) -> WebConfig {
        self.session_ttl = ttl;
        self
    }

    /// The largest request body taken (see [`WebConfig::max_body_bytes`]).
    pub fn max_body_bytes(mut self, bytes: usize) -> WebConfig {
        self.max_body_bytes = bytes;
        self
    }

    /// How long a body and a whole request may take (see [`WebConfig::body_timeout`] and
    /// [`WebConfig::request_timeout`]).
    pub fn timeouts(mut self, body: Duration, request: Duration) -> WebConfig {
        self.body_timeout = body;
        self.request_timeout = request;
        self
    }

    /// How failed logins are throttled (see [`AuthThrottle`]).
    pub fn auth_throttle(mut self, throttle: AuthThrottle) -> WebConfig {
        self.auth_throttle = throttle;
        self
    }

    /// Whether any kind of auth is required.
    pub fn has_auth(&self) -> bool {
        self.auth_token.is_some() || self.basic_auth.is_some()
    }

    /// Checks the configuration: secrets of at least [`MIN_SECRET_CHARS`] characters and not
    /// only whitespace, well-formed allowed hosts, limits above zero. The binary exits 2 with
    /// the message; [`crate::router`] panics with it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(token) = &self.auth_token {
            check_secret("auth token", token)?;
        }
        if let Some(basic) = &self.basic_auth {
            check_secret("basic-auth password", &basic.password)?;
        }
        self.host_patterns()?;
        let limits = [
            ("the session ttl", self.session_ttl.is_zero()),
            ("the body limit", self.max_body_bytes == 0),
            ("the body timeout", self.body_timeout.is_zero()),
            ("the request timeout", self.request_timeout.is_zero()),
        ];
        if let Some((what, _)) = limits.iter().find(|(_, zero)| *zero) {
            return Err(ConfigError::BadLimit {
                what,
                rule: "above zero",
            });
        }
        if self.session_ttl > MAX_SESSION_TTL {
            return Err(ConfigError::BadLimit {
                what: "the session ttl",
                rule: "at most 30 days",
            });
        }
        self.auth_throttle.validate()
    }

    /// The allowed hosts, parsed.
    pub(crate) fn host_patterns(&self) -> Result<Vec<HostPattern>, ConfigError> {
        if self.allowed_hosts.len() > MAX_ALLOWED_HOSTS {
            return Err(ConfigError::TooManyHosts {
                count: self.allowed_hosts.len(),
            });
        }
        self.allowed_hosts
            .iter()
            .map(|entry| {
                HostPattern::parse(entry).map_err(|reason| ConfigError::BadHost {
                    entry: entry.clone(),
                    reason,
                })
            })
            .collect()
    }
}

/// Long enough, short enough, and not blank.
fn check_secret(what: &'static str, secret: &str) -> Result<(), ConfigError> {
    let weak = secret.chars().count() < MIN_SECRET_CHARS
        || secret.len() > MAX_SECRET_BYTES
        || secret.trim().is_empty();
    if weak {
        Err(ConfigError::WeakSecret { what })
    } else {
        Ok(())
    }
}

impl fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebConfig")
            .field("auth_token", &self.auth_token.as_ref().map(|_| "***"))
            .field("basic_auth", &self.basic_auth)
            .field("read_only", &self.read_only)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("bound_address", &self.bound_address)
            .field("secure_cookies", &self.secure_cookies)
            .field("session_ttl", &self.session_ttl)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("body_timeout", &self.body_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("auth_throttle", &self.auth_throttle)
            .finish()
    }
}

/// A user and password for HTTP basic auth; parsed from `user:password`.
#[derive(Clone, PartialEq, Eq)]
pub struct BasicAuth {
    /// The user name.
    pub user: String,
    /// The password.
    pub password: String,
}

impl fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BasicAuth")
            .field("user", &self.user)
            .field("password", &"***")
            .finish()
    }
}

impl FromStr for BasicAuth {
    type Err = String;

    fn from_str(text: &str) -> Result<BasicAuth, String> {
        match text.split_once(':') {
            Some((user, password)) if !user.is_empty() && !password.is_empty() => Ok(BasicAuth {
                user: user.to_owned(),
                password: password.to_owned(),
            }),
            _ => Err("expected user:password, both non-empty".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_parses_user_colon_password_and_debug_hides_secrets() {
        let auth: BasicAuth = "ops:s3cr:et".parse().expect("valid");
        assert_eq!(auth.user, "ops");
        assert_eq!(auth.password, "s3cr:et");
        assert!("ops".parse::<BasicAuth>().is_err());
        assert!(":pw".parse::<BasicAuth>().is_err());
        let config = WebConfig::new()
            .auth_token("tok-123-tok-123-tok")
            .basic_auth("ops", "pw-456-pw-456-pw-456");
        let shown = format!("{config:?}");
        assert!(
            !shown.contains("tok-123") && !shown.contains("pw-456"),
            "{shown}"
        );
    }

    #[test]
    fn secrets_shorter_than_sixteen_characters_or_blank_are_refused() {
        let weak =
            |config: WebConfig| matches!(config.validate(), Err(ConfigError::WeakSecret { .. }));
        assert!(weak(WebConfig::new().auth_token("fifteen-chars-x")));
        assert!(weak(WebConfig::new().auth_token(" ".repeat(20))));
        assert!(weak(WebConfig::new().auth_token("")));
        assert!(weak(
            WebConfig::new().auth_token("x".repeat(MAX_SECRET_BYTES + 1))
        ));
        assert!(weak(WebConfig::new().basic_auth("ops", "short")));
        // Characters, not bytes: sixteen of them are enough whatever their encoding.
        assert!(
            WebConfig::new()
                .auth_token("ü".repeat(16))
                .validate()
                .is_ok()
        );
        assert!(
            WebConfig::new()
                .auth_token("sixteen-chars-xx")
                .validate()
                .is_ok()
        );
        assert!(WebConfig::new().validate().is_ok());
    }

    #[test]
    fn bad_hosts_and_zero_limits_are_refused() {
        let config = WebConfig::new().allowed_hosts(["http://gator.example"]);
        assert!(matches!(
            config.validate(),
            Err(ConfigError::BadHost { .. })
        ));
        let many = (0..=MAX_ALLOWED_HOSTS).map(|i| format!("h{i}.example"));
        let config = WebConfig::new().allowed_hosts(many);
        assert!(matches!(
            config.validate(),
            Err(ConfigError::TooManyHosts { .. })
        ));
        let config = WebConfig::new().max_body_bytes(0);
        assert!(matches!(
            config.validate(),
            Err(ConfigError::BadLimit { .. })
        ));
        let config = WebConfig::new().session_ttl(MAX_SESSION_TTL * 2);
        assert!(matches!(
            config.validate(),
            Err(ConfigError::BadLimit { .. })
        ));
    }
}
