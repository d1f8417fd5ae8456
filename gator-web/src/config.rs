//! What the dashboard is told: who may use it, and whether it may change anything.

use std::fmt;
use std::str::FromStr;

/// How [`crate::router`] guards the dashboard and the API.
///
/// With neither an auth token nor basic auth, anyone who reaches the router may use it: the
/// right choice only behind something that authenticates, or on a loopback address (the
/// binary refuses anything else without `--insecure-no-auth`). Its `Debug` output hides the
/// secrets.
#[derive(Clone, Default)]
pub struct WebConfig {
    /// A bearer token: `Authorization: Bearer <token>` for API clients, or `?token=<token>`
    /// once in a browser, which sets an HttpOnly, SameSite=Strict cookie.
    pub auth_token: Option<String>,
    /// HTTP basic auth, which a browser asks for itself.
    pub basic_auth: Option<BasicAuth>,
    /// Refuse every action (each POST answers 403) and hide the buttons.
    pub read_only: bool,
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

    /// Whether any kind of auth is required.
    pub fn has_auth(&self) -> bool {
        self.auth_token.is_some() || self.basic_auth.is_some()
    }
}

impl fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebConfig")
            .field("auth_token", &self.auth_token.as_ref().map(|_| "***"))
            .field("basic_auth", &self.basic_auth)
            .field("read_only", &self.read_only)
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
            .auth_token("tok-123")
            .basic_auth("ops", "pw-456");
        let shown = format!("{config:?}");
        assert!(
            !shown.contains("tok-123") && !shown.contains("pw-456"),
            "{shown}"
        );
    }
}
