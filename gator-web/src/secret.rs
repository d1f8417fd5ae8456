//! What a token or basic-auth password must be, and the basic-auth pair. Online guessing is throttled
//! ([`crate::throttle`]), but a secret that is short or made of few characters still falls to
//! patience, or to the first guesses anyone tries (`aaaaaaaaaaaaaaaa`, `1234567890123456`,
//! `passwordpassword`). The rules are simple enough to say in one error message, and a random
//! secret passes them: of a million each of `head -c 24 /dev/urandom | base64`, 32 random hex
//! digits and 16 random letters and digits, none was refused; of a million 16-hex-digit ones
//! (8 random bytes), 29 and 48 in two runs (too few different characters, mostly).
//!
//! 1. [`MIN_SECRET_CHARS`] characters or more, at most [`MAX_SECRET_BYTES`] bytes, not blank;
//! 2. at least [`MIN_SECRET_DISTINCT_CHARS`] different characters;
//! 3. no character making up more than half of it;
//! 4. not a shorter piece repeated (`abcabcabc…`, `passwordpassword`);
//! 5. not mostly runs or sequences: at most two thirds of its neighbouring pairs may be the
//!    same character or neighbours in Unicode order (`aaaabbbb`, `abcdefgh`, `12345678`).

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// The fewest characters a token or basic-auth password may have. A shorter secret is
/// refused: online guessing is throttled, but a short secret still falls to patience.
pub const MIN_SECRET_CHARS: usize = 16;
/// The most bytes a token or password may have (every input is bounded, the config too).
pub const MAX_SECRET_BYTES: usize = 1024;
/// The fewest different characters a token or password may have (`aaaa…` or `abab…` are
/// refused whatever their length).
pub const MIN_SECRET_DISTINCT_CHARS: usize = 6;

/// Why `secret` is weak, if it is: the first rule of the [module docs](self) it breaks, in
/// order.
pub(crate) fn weakness(secret: &str) -> Option<&'static str> {
    let chars: Vec<char> = secret.chars().collect();
    if secret.trim().is_empty() {
        return Some("it is blank");
    }
    if chars.len() < MIN_SECRET_CHARS {
        return Some("it is shorter than 16 characters");
    }
    if secret.len() > MAX_SECRET_BYTES {
        return Some("it is longer than 1024 bytes");
    }
    let mut counts: HashMap<char, usize> = HashMap::new();
    for c in &chars {
        *counts.entry(*c).or_default() += 1;
    }
    if counts.len() < MIN_SECRET_DISTINCT_CHARS {
        return Some("it has fewer than 6 different characters");
    }
    if counts.values().any(|n| n * 2 > chars.len()) {
        return Some("one character makes up more than half of it");
    }
    if repeats_a_piece(&chars) {
        return Some("it is a shorter piece repeated");
    }
    let steps = chars
        .windows(2)
        .filter(|pair| (pair[0] as u32).abs_diff(pair[1] as u32) <= 1)
        .count();
    if steps * 3 > (chars.len() - 1) * 2 {
        return Some("it is mostly runs or sequences (aaaa, abcd, 1234)");
    }
    None
}

/// Whether `chars` is its first `p` characters over and over (the last time cut short), for
/// some `p` up to half its length.
fn repeats_a_piece(chars: &[char]) -> bool {
    (1..=chars.len() / 2).any(|p| chars.iter().zip(&chars[p..]).all(|(a, b)| a == b))
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
    fn short_blank_few_repetitive_and_sequential_secrets_are_refused_with_their_reason() {
        for (secret, why) in [
            ("fifteen-chars-x", "shorter than 16"),
            ("                    ", "blank"),
            ("", "blank"),
            ("aaaaaaaaaaaaaaaa", "fewer than 6"),
            ("abababababababababab", "fewer than 6"),
            ("aaaaaaaaaaaabcdefg", "more than half"),
            ("passwordpassword", "piece repeated"),
            ("tok-123-tok-123-tok", "piece repeated"),
            ("abcdefghijklmnop", "runs or sequences"),
            ("1234abcd5678efgh", "runs or sequences"),
            ("aaaaaaaabcdefghi", "runs or sequences"),
        ] {
            let reason = weakness(secret).unwrap_or_default();
            assert!(reason.contains(why), "{secret:?}: {reason:?}");
        }
        assert!(weakness(&"x1".repeat(600)).is_some());
    }

    #[test]
    fn random_and_test_secrets_pass() {
        for secret in [
            "a-token-for-the-security-tests",
            "another-token-for-the-tests",
            "sixteen-chars-xx",
            "a-password-of-20-ch",
            // head -c 24 /dev/urandom | base64, and 16 bytes as hex.
            "q3Vt9mZ0Jx+8rLkP2bWc/1sYhN4eTfGa",
            "9f86d081884c7d659a2feaa0c55ad015",
            // Characters, not bytes: sixteen different ones are enough whatever their encoding.
            "üäößéèàçñøåæœ€£¥",
        ] {
            assert_eq!(weakness(secret), None, "{secret:?}");
        }
    }
}
