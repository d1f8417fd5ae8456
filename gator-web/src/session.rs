//! The login cookie a `?token=` login sets: proof of a login, not the token.
//!
//! The cookie is `<expiry>.<mac>`: the expiry in seconds since the epoch, and an HMAC-SHA256 of
//! it under a key made when the router is built, from 32 random bytes and the token. So:
//!
//! - a stolen cookie does not reveal the token (nor helps guess it offline: the random half of
//!   the key never leaves the process), and lasts until its expiry at most;
//! - changing the token, or restarting the process, ends every session (the per-process CSRF
//!   token already ties a page to one process; behind a load balancer, pin a browser to one);
//! - nothing is stored per session: no table to fill.
//!
//! The cookie is `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's request
//! carries it), has a `Max-Age`, and is `Secure` when the request came over HTTPS through a
//! proxy (`X-Forwarded-Proto: https`) or [`crate::WebConfig::secure_cookies`] says so.

use axum::http::HeaderMap;
use axum::http::header::COOKIE;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The cookie's name.
pub(crate) const SESSION_COOKIE: &str = "gator_session";
/// What the MAC covers besides the expiry: a cookie of another purpose or version never
/// verifies as a session.
const PURPOSE: &[u8] = b"gator-web session v1\0";
/// A cookie value longer than this is not ours (an expiry and 43 base64 characters).
const MAX_COOKIE_CHARS: usize = 80;

/// Mints and checks session cookies for one router.
pub(crate) struct Sessions {
    key: hmac::Key,
    ttl: Duration,
    always_secure: bool,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions").field("ttl", &self.ttl).finish()
    }
}

impl Sessions {
    /// Sessions for this token, lasting `ttl`.
    pub(crate) fn new(token: &str, ttl: Duration, always_secure: bool) -> Sessions {
        Sessions::with_salt(token, rand::random(), ttl, always_secure)
    }

    /// Sessions keyed by `salt` and the token: the key is `HMAC(salt, token)`.
    fn with_salt(token: &str, salt: [u8; 32], ttl: Duration, always_secure: bool) -> Sessions {
        let salt = hmac::Key::new(hmac::HMAC_SHA256, &salt);
        let derived = hmac::sign(&salt, token.as_bytes());
        Sessions {
            key: hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()),
            ttl,
            always_secure,
        }
    }

    /// A fresh cookie value, valid for the ttl from `now`.
    pub(crate) fn mint(&self, now: SystemTime) -> String {
        let expiry = seconds(now).saturating_add(self.ttl.as_secs());
        let tag = hmac::sign(&self.key, &message(expiry));
        format!("{expiry}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// Whether the request carries a cookie this router minted that has not expired.
    pub(crate) fn verify(&self, headers: &HeaderMap, now: SystemTime) -> bool {
        cookie(headers, SESSION_COOKIE).is_some_and(|value| self.verify_value(value, now))
    }

    fn verify_value(&self, value: &str, now: SystemTime) -> bool {
        if value.len() > MAX_COOKIE_CHARS {
            return false;
        }
        let Some((expiry, tag)) = value.split_once('.') else {
            return false;
        };
        let (Ok(expiry), Ok(tag)) = (expiry.parse::<u64>(), URL_SAFE_NO_PAD.decode(tag)) else {
            return false;
        };
        let now = seconds(now);
        // Not expired, and not from further ahead than the ttl (a ttl since shortened).
        let in_time = now < expiry && expiry <= now.saturating_add(self.ttl.as_secs());
        // Constant time, in ring.
        in_time && hmac::verify(&self.key, &message(expiry), &tag).is_ok()
    }

    /// The `Set-Cookie` value for `value`. No `Path`: the browser scopes the cookie to the
    /// directory of the page it was set on, the mount point as the browser sees it.
    pub(crate) fn set_cookie(&self, value: &str, headers: &HeaderMap) -> String {
        let https = headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"));
        let secure = if self.always_secure || https {
            "; Secure"
        } else {
            ""
        };
        format!(
            "{SESSION_COOKIE}={value}; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            self.ttl.as_secs()
        )
    }
}

fn message(expiry: u64) -> Vec<u8> {
    [PURPOSE, expiry.to_string().as_bytes()].concat()
}

fn seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The value of the cookie `name`, if the request carries it.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then_some(v)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const TOKEN: &str = "a-token-of-twenty-chars";
    const HOUR: Duration = Duration::from_secs(3600);

    fn with_cookie(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let cookie = format!("a=1; {SESSION_COOKIE}={value}; b=2");
        headers.insert(
            COOKIE,
            HeaderValue::from_str(&cookie).expect("a header value"),
        );
        headers
    }

    #[test]
    fn a_minted_cookie_verifies_until_it_expires_and_does_not_hold_the_token() {
        let sessions = Sessions::new(TOKEN, HOUR, false);
        let now = SystemTime::now();
        let value = sessions.mint(now);
        assert!(
            !value.contains(TOKEN) && value.len() <= MAX_COOKIE_CHARS,
            "{value}"
        );
        assert!(sessions.verify(&with_cookie(&value), now));
        assert!(!sessions.verify(&with_cookie(&value), now + HOUR));
        let (expiry, tag) = value.split_once('.').expect("a dot");
        let longer = format!("{}.{tag}", expiry.parse::<u64>().expect("digits") + 1);
        assert!(
            !sessions.verify(&with_cookie(&longer), now),
            "a changed expiry"
        );
        assert!(!sessions.verify(&HeaderMap::new(), now));
    }

    #[test]
    fn another_token_or_another_process_does_not_accept_the_cookie() {
        let now = SystemTime::now();
        let salt = [7; 32];
        let value = Sessions::with_salt(TOKEN, salt, HOUR, false).mint(now);
        let same = Sessions::with_salt(TOKEN, salt, HOUR, false);
        assert!(same.verify(&with_cookie(&value), now));
        let new_token = Sessions::with_salt("another-token-of-20-chars", salt, HOUR, false);
        assert!(
            !new_token.verify(&with_cookie(&value), now),
            "the token changed"
        );
        let new_process = Sessions::new(TOKEN, HOUR, false);
        assert!(
            !new_process.verify(&with_cookie(&value), now),
            "another salt"
        );
    }

    #[test]
    fn the_cookie_is_http_only_strict_has_a_max_age_and_is_secure_over_https() {
        let sessions = Sessions::new(TOKEN, HOUR, false);
        let plain = sessions.set_cookie("v", &HeaderMap::new());
        assert_eq!(
            plain,
            "gator_session=v; HttpOnly; SameSite=Strict; Max-Age=3600"
        );
        let mut proxied = HeaderMap::new();
        proxied.insert("x-forwarded-proto", HeaderValue::from_static("HTTPS"));
        assert!(sessions.set_cookie("v", &proxied).ends_with("; Secure"));
        let always = Sessions::new(TOKEN, HOUR, true);
        assert!(
            always
                .set_cookie("v", &HeaderMap::new())
                .ends_with("; Secure")
        );
    }
}
