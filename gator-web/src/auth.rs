//! The guard in front of every route, in order:
//!
//! 1. **Host.** Without auth (or with an operator's allowlist), a request addressed to a name
//!    the dashboard does not know is answered 421 `host_not_allowed`: a page of another site
//!    cannot reach it through DNS rebinding (`host.rs`).
//! 2. **Throttle.** With auth, a client address whose burst of failed logins is spent is
//!    answered 429 with `Retry-After`, its credentials unchecked ([`crate::throttle`]).
//! 3. **Who.** With auth, a request must carry the bearer token (`Authorization: Bearer`),
//!    basic auth, or the session cookie a `?token=` login set; else 401. A request with an
//!    `Authorization` header is judged by it alone. Every wrong token or password (in the
//!    header or a `?token=`) counts as a failure, before anything else may refuse the
//!    request: no guess escapes the throttle, whatever answers it.
//! 4. **Same site.** A request the browser marks `Sec-Fetch-Site: cross-site` is refused
//!    (403 `cross_site`), GETs too, with the same answer whether its credentials were right or
//!    wrong: another site can neither act nor make the server do expensive reads with the
//!    browser's cookie or cached basic auth, and the refusal tells nothing of a guess. Only a
//!    request carrying `Authorization: Bearer` is exempt, right or wrong (step 3 judges it
//!    as any other): no browser adds that header by itself.
//! 5. **Login.** A page opened with a right `?token=` gets a session cookie (not the token:
//!    `session.rs`) and a redirect to itself without the token, so it stays out of
//!    history and logs. The redirect is relative and names a page of the dashboard, never
//!    another site.
//! 6. **Read-only.** Every POST answers 403 `read_only`.
//! 7. **CSRF.** A browser sends cookies and basic auth by itself, so every POST must also show
//!    the per-process CSRF token in `X-Gator-Csrf` (the page reads it from a meta tag, which
//!    another site cannot), and must not come from another site (`Origin`). Bearer requests
//!    are exempt, as in step 4.
//!
//! Every secret is compared in constant time.

use crate::app::App;
use crate::error::ApiError;
use crate::throttle::Client;
use axum::extract::{ConnectInfo, OriginalUri, Request, State};
use axum::http::header::{
    AUTHORIZATION, HOST, LOCATION, ORIGIN, RETRY_AFTER, SET_COOKIE, WWW_AUTHENTICATE,
};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::time::{Instant, SystemTime};
use subtle::ConstantTimeEq;

/// The header every browser POST must carry the CSRF token in.
pub const CSRF_HEADER: &str = "x-gator-csrf";

/// How a request proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    /// No auth is configured.
    Open,
    /// `Authorization: Bearer`: not sent by a browser on its own, so not CSRF-able.
    Bearer,
    /// The session cookie or basic auth: a browser sends these by itself.
    Ambient,
}

/// The middleware: steps 1 to 7 of the module docs.
pub(crate) async fn guard(State(app): State<App>, req: Request, next: Next) -> Response {
    if let Err(refused) = app
        .hosts
        .check(app.config.has_auth(), req.uri(), req.headers())
    {
        return refused.into_response();
    }
    let identity = match authenticate(&app, &req) {
        ControlFlow::Continue(identity) => identity,
        ControlFlow::Break(answer) => return answer,
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

/// What a request's credentials say.
struct Credentials {
    /// Who they prove the request is, if anyone.
    identity: Option<Identity>,
    /// Whether it presented a token or password (in `Authorization`) that was wrong.
    wrong: bool,
    /// It carries `Authorization: Bearer`, right or wrong: no browser adds that by itself.
    bearer: bool,
}

/// Steps 2 to 5: who is asking, or the answer that ends the request here.
fn authenticate(app: &App, req: &Request) -> ControlFlow<Response, Identity> {
    let client = Client::of(
        req.extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0),
    );
    let now = Instant::now();
    if app.config.has_auth()
        && let Err(wait) = app.throttle.admit(client, now)
    {
        return ControlFlow::Break(throttled(wait));
    }
    let credentials = identify(app, req.headers());
    let login = token_login(app, req);
    // Counted first: were a refusal below to come before, a guess would be free, and a right
    // one told apart by its answer.
    let wrong_login = login.as_ref().is_some_and(|login| !login.right);
    for _ in 0..u8::from(credentials.wrong) + u8::from(wrong_login) {
        app.throttle.fail(client, now);
    }
    let exempt = app.config.has_auth() && credentials.bearer;
    if !exempt && cross_site(req.headers()) {
        let refused = ApiError::forbidden(
            "cross_site",
            "cross-site requests are refused: open the dashboard by its own address",
        );
        return ControlFlow::Break(refused.into_response());
    }
    if let Some(answer) = login.and_then(|login| login_answer(app, req, login)) {
        return ControlFlow::Break(answer);
    }
    match credentials.identity {
        Some(identity) => ControlFlow::Continue(identity),
        None => ControlFlow::Break(unauthorized(app)),
    }
}

/// Who the request is (step 3): by its `Authorization` header alone if it has one, else by
/// its session cookie.
fn identify(app: &App, headers: &HeaderMap) -> Credentials {
    let judged = |identity: Option<Identity>, bearer: bool| Credentials {
        wrong: identity.is_none(),
        identity,
        bearer,
    };
    if !app.config.has_auth() {
        return Credentials {
            identity: Some(Identity::Open),
            wrong: false,
            bearer: false,
        };
    }
    let authorization = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    if let Some(given) = authorization.and_then(|a| a.strip_prefix("Bearer ")) {
        let token = app.config.auth_token.as_deref();
        let right = token.is_some_and(|token| same(token.as_bytes(), given.trim().as_bytes()));
        return judged(right.then_some(Identity::Bearer), true);
    }
    if let Some(given) = authorization.and_then(|a| a.strip_prefix("Basic ")) {
        let right = app.config.basic_auth.as_ref().is_some_and(|expected| {
            let expected = format!("{}:{}", expected.user, expected.password);
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(given.trim())
                .unwrap_or_default();
            same(expected.as_bytes(), &decoded)
        });
        return judged(right.then_some(Identity::Ambient), false);
    }
    let session = app
        .sessions
        .as_ref()
        .is_some_and(|sessions| sessions.verify(headers, SystemTime::now()));
    Credentials {
        identity: session.then_some(Identity::Ambient),
        wrong: false,
        bearer: false,
    }
}

/// `Sec-Fetch-Site: cross-site`: the browser says another site made this request.
fn cross_site(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() == b"cross-site")
}

/// A `?token=` login: whether the token is right, and the rest of the query.
struct Login<'a> {
    right: bool,
    rest: Vec<&'a str>,
}

/// A GET of a page with `?token=`, checked. `None` for any other request, including a path
/// that is not one of the dashboard's pages.
fn token_login<'a>(app: &App, req: &'a Request) -> Option<Login<'a>> {
    app.sessions.as_ref()?;
    let token = app.config.auth_token.as_ref()?;
    if req.method() != Method::GET || !crate::pages::is_page(req.uri().path()) {
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
    let right = same(token.as_bytes(), given?.as_bytes());
    Some(Login { right, rest })
}

/// Step 5: the right token sets the session cookie and redirects to the same page without
/// it; a wrong one is a 401.
fn login_answer(app: &App, req: &Request, login: Login<'_>) -> Option<Response> {
    let sessions = app.sessions.as_ref()?;
    if !login.right {
        return Some(unauthorized(app));
    }
    let original = req
        .extensions()
        .get::<OriginalUri>()
        .map_or(req.uri().path(), |uri| uri.path());
    let mut location = back_to(req.uri().path(), original);
    if !login.rest.is_empty() {
        location = format!("{location}?{}", login.rest.join("&"));
    }
    let cookie = sessions.set_cookie(&sessions.mint(SystemTime::now()), req.headers());
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(LOCATION, HeaderValue::from_str(&location).ok()?);
    headers.insert(SET_COOKIE, HeaderValue::from_str(&cookie).ok()?);
    Some(response)
}

/// Where a login on the page at `stripped` (`original` as the browser asked for it) sends the
/// browser back to: relative (a proxy in front may add a prefix of its own), the overview of a
/// router nested at `/gator` as `gator`, any other page as its own name. Only plain path
/// characters: nothing a browser could read as a scheme (`https:`), a host (`//`, `\`) or
/// anything but a path below the mount point; else the mount point itself.
fn back_to(stripped: &str, original: &str) -> String {
    let page = stripped.strip_prefix('/').unwrap_or(stripped);
    let location = match (page, original.rsplit('/').next()) {
        ("", Some(last)) if !last.is_empty() => last,
        ("", _) => "./",
        (page, _) => page,
    };
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/');
    if location.chars().all(plain) && !location.starts_with('/') && !location.contains("//") {
        location.to_owned()
    } else {
        "./".to_owned()
    }
}

/// Step 7: same-site, and the CSRF token shown.
///
/// Step 4 refused what a browser marks `Sec-Fetch-Site: cross-site`; from a browser that does
/// not send that header, `Origin` is compared with the host asked for (`Host`, or
/// `X-Forwarded-Host` behind a proxy that rewrites `Host`). The CSRF token is checked either way.
fn check_csrf(app: &App, headers: &HeaderMap) -> Result<(), ApiError> {
    if headers.get("sec-fetch-site").is_none()
        && let Some(origin) = headers.get(ORIGIN)
    {
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
            return Err(ApiError::forbidden(
                "cross_site",
                "cross-site requests are refused",
            ));
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

/// 429 with `Retry-After` in whole seconds, rounded up.
fn throttled(wait: std::time::Duration) -> Response {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let mut response = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "throttled",
        format!("too many failed logins from this address: try again in {seconds} s"),
    )
    .into_response();
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds.max(1)));
    response
}

/// Constant-time equality (the length is not secret).
fn same(expected: &[u8], given: &[u8]) -> bool {
    expected.ct_eq(given).into()
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
    fn a_login_sends_the_browser_back_to_a_page_of_the_dashboard_only() {
        assert_eq!(back_to("/dead", "/gator/dead"), "dead");
        assert_eq!(back_to("/", "/gator"), "gator");
        assert_eq!(back_to("/", "/"), "./");
        for hostile in [
            "/https:evil.example",
            "//evil.example",
            "/\\evil.example",
            "/a//b",
        ] {
            assert_eq!(back_to(hostile, hostile), "./", "{hostile}");
        }
    }
}
