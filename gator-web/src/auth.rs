//! The guard in front of every route, in order:
//!
//! 1. **Who.** With auth configured, a request must carry the bearer token (`Authorization:
//!    Bearer`, or the cookie a `?token=` login set) or basic auth; else 401. A page opened
//!    with a right `?token=` sets the cookie and redirects to itself without the token, so it
//!    stays out of history and logs.
//! 2. **Read-only.** Every POST answers 403 `read_only`.
//! 3. **CSRF.** A browser sends cookies and basic auth by itself, so every POST must also show
//!    the per-process CSRF token in `X-Gator-Csrf` (the page reads it from a meta tag, which
//!    another site cannot), and must not come from another site (`Origin`,
//!    `Sec-Fetch-Site`). A request with `Authorization: Bearer` is exempt: a browser never adds
//!    that header by itself, so another site cannot forge it.
//!
//! Every secret is compared in constant time.

use crate::App;
use crate::error::ApiError;
use axum::extract::{OriginalUri, Request, State};
use axum::http::header::{
    AUTHORIZATION, COOKIE, HOST, LOCATION, ORIGIN, SET_COOKIE, WWW_AUTHENTICATE,
};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use subtle::ConstantTimeEq;

/// The header every browser POST must carry the CSRF token in.
pub const CSRF_HEADER: &str = "x-gator-csrf";
/// The cookie a `?token=` login sets.
const TOKEN_COOKIE: &str = "gator_token";

/// How a request proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    /// No auth is configured.
    Open,
    /// `Authorization: Bearer`: not sent by a browser on its own, so not CSRF-able.
    Bearer,
    /// The login cookie or basic auth: a browser sends these by itself.
    Ambient,
}

/// The middleware: steps 1 to 3 of the module docs.
pub(crate) async fn guard(State(app): State<App>, req: Request, next: Next) -> Response {
    if let Some(login) = token_login(&app, &req) {
        return login;
    }
    let identity = match identify(&app, req.headers()) {
        Some(identity) => identity,
        None => return unauthorized(&app),
    };
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    if app.config.read_only {
        return ApiError::forbidden("read_only", "the dashboard is read-only").into_response();
    }
    if identity != Identity::Bearer
        && let Err(refused) = check_csrf(&app, req.headers())
    {
        return refused.into_response();
    }
    // Every action leaves a line, so an operator can tell who retried or cleared what.
    let path = req.uri().path().to_owned();
    let response = next.run(req).await;
    tracing::info!(
        path = %path,
        status = response.status().as_u16(),
        by = identity.name(),
        "dashboard action"
    );
    response
}

impl Identity {
    fn name(self) -> &'static str {
        match self {
            Identity::Open => "open",
            Identity::Bearer => "bearer",
            Identity::Ambient => "browser",
        }
    }
}

fn identify(app: &App, headers: &HeaderMap) -> Option<Identity> {
    if !app.config.has_auth() {
        return Some(Identity::Open);
    }
    let authorization = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    if let (Some(token), Some(given)) = (
        &app.config.auth_token,
        authorization.and_then(|a| a.strip_prefix("Bearer ")),
    ) && same(token.as_bytes(), given.trim().as_bytes())
    {
        return Some(Identity::Bearer);
    }
    if let (Some(basic), Some(given)) = (
        &app.config.basic_auth,
        authorization.and_then(|a| a.strip_prefix("Basic ")),
    ) {
        let expected = format!("{}:{}", basic.user, basic.password);
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(given.trim())
            .unwrap_or_default();
        if same(expected.as_bytes(), &decoded) {
            return Some(Identity::Ambient);
        }
    }
    if let (Some(token), Some(cookie)) = (&app.config.auth_token, cookie(headers, TOKEN_COOKIE))
        && same(cookie_value(token).as_bytes(), cookie.as_bytes())
    {
        return Some(Identity::Ambient);
    }
    None
}

/// A GET of a page with `?token=`: the right token sets the cookie and redirects to the same
/// page without it; a wrong one is a 401. `None` for any other request.
fn token_login(app: &App, req: &Request) -> Option<Response> {
    let token = app.config.auth_token.as_ref()?;
    if req.method() != Method::GET || req.uri().path().contains("/api/") {
        return None;
    }
    let query = req.uri().query()?;
    let mut given = None;
    let mut rest = Vec::new();
    for pair in query.split('&') {
        match pair.strip_prefix("token=") {
            Some(value) => given = Some(percent_decode(value)),
            None => rest.push(pair),
        }
    }
    let given = given?;
    if !same(token.as_bytes(), given.as_bytes()) {
        return Some(unauthorized(app));
    }
    // Back to the same page, relative (a proxy in front may add a prefix of its own): the
    // overview of a router nested at `/gator` is `gator`, any other page its own name.
    let stripped = req.uri().path();
    let original = req
        .extensions()
        .get::<OriginalUri>()
        .map_or(stripped.to_owned(), |uri| uri.path().to_owned());
    let page = stripped.trim_start_matches('/');
    let mut location = match (page, original.rsplit('/').next()) {
        ("", Some(last)) if !last.is_empty() => last.to_owned(),
        ("", _) => "./".to_owned(),
        (page, _) => page.to_owned(),
    };
    if !rest.is_empty() {
        location = format!("{location}?{}", rest.join("&"));
    }
    // No Path: the browser scopes the cookie to the directory of the page it was set on, the
    // mount point as the browser sees it, proxy prefix and all.
    let cookie = format!(
        "{TOKEN_COOKIE}={}; HttpOnly; SameSite=Strict",
        cookie_value(token)
    );
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(LOCATION, HeaderValue::from_str(&location).ok()?);
    headers.insert(SET_COOKIE, HeaderValue::from_str(&cookie).ok()?);
    Some(response)
}

/// Step 3: same-site, and the CSRF token shown.
///
/// A browser that sends `Sec-Fetch-Site` says itself whether the request is cross-site; only
/// for one that does not is `Origin` compared with the host asked for (`Host`, or
/// `X-Forwarded-Host` behind a proxy that rewrites `Host`). The CSRF token is checked either way.
fn check_csrf(app: &App, headers: &HeaderMap) -> Result<(), ApiError> {
    let cross_site = || ApiError::forbidden("cross_site", "cross-site requests are refused");
    match headers.get("sec-fetch-site").map(HeaderValue::as_bytes) {
        Some(b"cross-site") => return Err(cross_site()),
        Some(_) => {}
        None => {
            if let Some(origin) = headers.get(ORIGIN) {
                let origin_host = origin
                    .to_str()
                    .ok()
                    .and_then(|o| o.split_once("://"))
                    .map(|(_, host)| host);
                let asked = [HOST, HeaderName::from_static("x-forwarded-host")]
                    .into_iter()
                    .filter_map(|name| headers.get(name)?.to_str().ok())
                    .filter_map(|v| v.split(',').next().map(str::trim))
                    .collect::<Vec<_>>();
                if !origin_host.is_some_and(|o| asked.contains(&o)) {
                    return Err(cross_site());
                }
            }
        }
    }
    let shown = headers.get(CSRF_HEADER).map(HeaderValue::as_bytes);
    if shown.is_some_and(|shown| same(app.csrf.as_bytes(), shown)) {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "csrf",
            "missing or wrong X-Gator-Csrf header: send the token from the page's gator-csrf meta tag, or authenticate with Authorization: Bearer",
        ))
    }
}

fn unauthorized(app: &App) -> Response {
    let mut response = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "authentication required: send Authorization: Bearer <token> (in a browser, open the page once with ?token=<token>) or basic auth",
    )
    .into_response();
    let challenge = if app.config.basic_auth.is_some() {
        "Basic realm=\"gator\", charset=\"UTF-8\""
    } else {
        "Bearer realm=\"gator\""
    };
    response
        .headers_mut()
        .insert(WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    response
}

/// Constant-time equality (the length is not secret).
fn same(expected: &[u8], given: &[u8]) -> bool {
    expected.ct_eq(given).into()
}

/// The cookie holds the token hex-encoded: any token then fits a cookie value.
fn cookie_value(token: &str) -> String {
    token.bytes().map(|b| format!("{b:02x}")).collect()
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
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

/// Decodes `%XX` and `+` in a query value.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_decoded() {
        assert_eq!(percent_decode("a%2Fb+c%3d"), "a/b c=");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }

    #[test]
    fn cookies_are_found_by_name() {
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_static("a=1; gator_token=ab12; b=2"),
        );
        assert_eq!(cookie(&headers, TOKEN_COOKIE), Some("ab12"));
        assert_eq!(cookie(&headers, "c"), None);
    }
}
