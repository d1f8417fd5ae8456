//! What the dashboard is told: who may use it, which names it answers to, whether it may change
//! anything, and how much of a request it takes. [`WebConfig::validate`] is the one place that
//! says what a sound configuration is; the binary calls it at start, [`crate::router`] too.

use crate::host::HostPattern;
use crate::secret::weakness;
pub use crate::secret::{BasicAuth, MAX_SECRET_BYTES, MIN_SECRET_CHARS, MIN_SECRET_DISTINCT_CHARS};
use crate::throttle::AuthThrottle;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// The most entries [`WebConfig::allowed_hosts`] may hold.
pub const MAX_ALLOWED_HOSTS: usize = 64;
/// How long a browser login lasts by default.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// The longest a browser login may be told to last.
pub const MAX_SESSION_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// The largest request body taken by default: a job's args are JSON, never files.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;
/// How long a request body may take to arrive by default, in all: a third of
/// [`DEFAULT_REQUEST_TIMEOUT`], so that a slow body is answered 408 at its own deadline, and a
/// handler still has time to answer a body that arrived just in time.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);
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
    /// [`MIN_SECRET_CHARS`] characters, of which [`MIN_SECRET_DISTINCT_CHARS`] different, and
    /// not repetitive (the rules: [`WebConfig::validate`]).
    pub auth_token: Option<String>,
    /// HTTP basic auth, which a browser asks for itself; the password follows the token's
    /// rules.
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
    /// How long a request body may take to arrive, in all (a slow sender is cut off: 408
    /// `request_timeout`). Shorter than [`WebConfig::request_timeout`], which would otherwise
    /// answer first.
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
    /// A token or password too short, blank, too long, of too few different characters, or
    /// repetitive (the rules are in [`WebConfig::validate`]).
    #[error(
        "the {what} is too weak: {why}. Use {MIN_SECRET_CHARS} characters to {MAX_SECRET_BYTES} bytes, at least {MIN_SECRET_DISTINCT_CHARS} different ones, none of them more than half, not a piece repeated nor mostly runs or sequences (e.g. head -c 24 /dev/urandom | base64)"
    )]
    WeakSecret {
        /// `auth token` or `basic-auth password`.
        what: &'static str,
        /// Which rule it breaks: `it has fewer than 6 different characters`, say.
        why: &'static str,
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

    /// Checks the configuration; the binary exits 2 with the message, [`crate::router`] panics
    /// with it:
    ///
    /// - a token or password has [`MIN_SECRET_CHARS`] characters or more, at most
    ///   [`MAX_SECRET_BYTES`] bytes, and is not blank; it has at least
    ///   [`MIN_SECRET_DISTINCT_CHARS`] different characters, none of them more than half of it;
    ///   it is not a shorter piece repeated (`passwordpassword`), nor mostly runs or sequences
    ///   (at most two thirds of its neighbouring pairs the same character or neighbours:
    ///   `aaaabbbb`, `abcdefgh`). A random secret passes: `head -c 24 /dev/urandom | base64`;
    /// - allowed hosts are well formed;
    /// - limits are above zero, the session ttl at most [`MAX_SESSION_TTL`], and the body
    ///   timeout shorter than the request timeout (else a slow body would be answered 503
    ///   `timeout` at the request timeout, never 408 at its own).
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
        if self.body_timeout >= self.request_timeout {
            return Err(ConfigError::BadLimit {
                what: "the body timeout (--body-timeout)",
                rule: "shorter than the request timeout (--request-timeout), which would otherwise answer a slow body 503 first",
            });
        }
        if !self.auth_throttle.is_sound() {
            return Err(ConfigError::BadLimit {
                what: "the auth throttle's burst, refill and max clients",
                rule: "above zero",
            });
        }
        Ok(())
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

/// `secret` (the `what`: `auth token`, say), or the first rule of [`crate::secret`] it breaks.
fn check_secret(what: &'static str, secret: &str) -> Result<(), ConfigError> {
    match weakness(secret) {
        Some(why) => Err(ConfigError::WeakSecret { what, why }),
        None => Ok(()),
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
    fn weak_tokens_and_passwords_are_refused_with_the_rule_they_break() {
        let weak = |config: WebConfig| match config.validate() {
            Err(error @ ConfigError::WeakSecret { .. }) => error.to_string(),
            other => panic!("{other:?}"),
        };
        assert!(weak(WebConfig::new().auth_token("fifteen-chars-x")).contains("shorter than 16"));
        let repeated = weak(WebConfig::new().auth_token("x".repeat(16)));
        assert!(
            repeated.starts_with("the auth token is too weak: it has fewer than 6 different")
                && repeated.contains("head -c 24"),
            "{repeated}"
        );
        assert!(weak(WebConfig::new().basic_auth("ops", "passwordpassword")).contains("password"));
        assert!(
            WebConfig::new()
                .auth_token("sixteen-chars-xx")
                .validate()
                .is_ok()
        );
        assert!(WebConfig::new().validate().is_ok());
    }

    #[test]
    fn a_body_timeout_not_shorter_than_the_request_timeout_is_refused() {
        let seconds = Duration::from_secs;
        for (body, request) in [(30, 30), (31, 30)] {
            let config = WebConfig::new().timeouts(seconds(body), seconds(request));
            assert!(
                matches!(config.validate(), Err(ConfigError::BadLimit { what, .. }) if what.contains("body timeout")),
                "{body} s, {request} s"
            );
        }
        assert!(
            WebConfig::new()
                .timeouts(seconds(29), seconds(30))
                .validate()
                .is_ok()
        );
        assert!(DEFAULT_BODY_TIMEOUT < DEFAULT_REQUEST_TIMEOUT);
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
