//! The HTML pages and their assets, embedded in the binary (no CDN, no build step). Each page is
//! the shared layout around its own `<main>` (`assets/pages/<name>.html`) and script
//! (`assets/js/<name>.js`); the scripts fill the page from the JSON API.

use crate::app::App;
use axum::Router;
use axum::extract::{OriginalUri, State};
use axum::http::HeaderValue;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// One page: its path (relative to the mount point), its name (script and body file) and the
/// title in the tab and the navigation.
struct Page {
    path: &'static str,
    name: &'static str,
    title: &'static str,
    /// Shown in the navigation bar (detail pages are reached through links).
    nav: bool,
    body: &'static str,
    script: &'static str,
}

macro_rules! page {
    ($path:literal, $name:literal, $title:literal, $nav:literal) => {
        Page {
            path: $path,
            name: $name,
            title: $title,
            nav: $nav,
            body: include_str!(concat!("../assets/pages/", $name, ".html")),
            script: include_str!(concat!("../assets/js/", $name, ".js")),
        }
    };
}

const PAGES: &[Page] = &[
    page!("/", "overview", "Overview", true),
    page!("/queues", "queues", "Queues", true),
    page!("/queue", "queue", "Queue", false),
    page!("/busy", "busy", "Busy", true),
    page!("/scheduled", "scheduled", "Scheduled", true),
    page!("/retries", "retries", "Retries", true),
    page!("/dead", "dead", "Dead", true),
    page!("/job", "job", "Job", false),
    page!("/flows", "flows", "Workflows", true),
    page!("/jobs", "jobs", "Jobs", true),
    page!("/cron", "cron", "Cron", true),
    page!("/limits", "limits", "Limits", true),
    page!("/scaling", "scaling", "Scaling", true),
    page!("/search", "search", "Search", true),
];

const STYLE: &str = include_str!("../assets/style.css");
const SHARED_JS: &str = include_str!("../assets/js/gator.js");
const SETS_JS: &str = include_str!("../assets/js/sets.js");
const FAVICON: &str = include_str!("../assets/favicon.svg");

/// Only our own scripts and styles run; nothing may frame the dashboard.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'";

pub(crate) fn routes() -> Router<App> {
    let mut router = Router::new();
    for (index, page) in PAGES.iter().enumerate() {
        router = router.route(
            page.path,
            get(move |State(app): State<App>, uri: OriginalUri| async move {
                render(&app, &PAGES[index], uri)
            }),
        );
    }
    router.route("/assets/{file}", get(asset))
}

fn render(app: &App, page: &Page, OriginalUri(original): OriginalUri) -> Response {
    let html = layout(app, page, links(page.path, original.path()));
    let mut response = ([(CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response();
    let headers = response.headers_mut();
    headers.insert("content-security-policy", HeaderValue::from_static(CSP));
    // `nosniff`, `no-referrer` and `no-store` are on every answer: see `crate::layers`.
    response
}

/// Whether `path` (relative to the mount point) is one of the pages.
pub(crate) fn is_page(path: &str) -> bool {
    PAGES.iter().any(|page| page.path == path)
}

/// Where the router is mounted (`/gator`; empty at the root), from the path the router saw
/// (`route`, the prefix stripped) and the path the browser asked for.
pub(crate) fn mount_prefix(route: &str, original: &str) -> String {
    let route = route.trim_end_matches('/');
    original
        .trim_end_matches('/')
        .strip_suffix(route)
        .unwrap_or_default()
        .to_owned()
}

/// How a page's links resolve, all relative, so that a proxy in front that adds a path prefix
/// of its own changes nothing: (`<base href>`, the overview's link).
///
/// Axum's `nest("/gator", ..)` answers the overview at `/gator` (not `/gator/`), where a
/// relative `queues` would resolve above the mount point; so the overview there has
/// `<base href="gator/">`. Every other page sits one level below the mount point, where links
/// resolve as they should; they link to the overview as `../gator`.
pub(crate) fn links(page_path: &str, original: &str) -> (String, String) {
    let prefix = mount_prefix(page_path, original);
    let last = prefix.rsplit('/').next().unwrap_or_default();
    let base = if page_path == "/" && !original.ends_with('/') {
        format!("{last}/")
    } else {
        "./".to_owned()
    };
    let home = if prefix.is_empty() {
        "./".to_owned()
    } else {
        format!("../{last}")
    };
    (base, home)
}

/// `text` safe inside an HTML attribute.
fn attr(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The navigation links, the current page marked for screen readers and the stylesheet.
fn nav(page: &Page, home: &str) -> String {
    PAGES
        .iter()
        .filter(|p| p.nav)
        .map(|p| {
            let href = if p.path == "/" { home } else { &p.path[1..] };
            let current = if p.name == page.name {
                " aria-current=\"page\""
            } else {
                ""
            };
            format!("<a href=\"{href}\"{current}>{}</a>", p.title)
        })
        .collect()
}

/// The shared frame: head with the CSRF token and mode, navigation, the page's `<main>`.
fn layout(app: &App, page: &Page, (base, home): (String, String)) -> String {
    let (base, home) = (attr(&base), attr(&home));
    let nav = nav(page, &home);
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="gator-csrf" content="{csrf}">
<meta name="gator-read-only" content="{read_only}">
<base href="{base}">
<title>{title} · Gator</title>
<link rel="icon" href="assets/favicon.svg">
<link rel="stylesheet" href="assets/style.css">
</head>
<body data-page="{name}"{body_class}>
<header class="top">
<a class="brand" href="{home}">Gator</a>
<nav>{nav}</nav>
<span id="live" class="live" title="The page refreshes every 2 s while it is visible">live</span>
</header>
<div id="flash" class="flash" role="status" hidden></div>
<main>
{body}
</main>
<footer>{footer}</footer>
<script src="assets/gator.js"></script>
{sets}<script src="assets/{name}.js"></script>
</body>
</html>
"#,
        csrf = app.csrf,
        base = base,
        home = home,
        read_only = app.config.read_only,
        title = page.title,
        name = page.name,
        body_class = if app.config.read_only {
            " class=\"read-only\""
        } else {
            ""
        },
        body = page.body,
        footer = if app.config.read_only {
            "read-only mode"
        } else {
            ""
        },
        sets = if matches!(page.name, "scheduled" | "retries" | "dead") {
            "<script src=\"assets/sets.js\"></script>\n"
        } else {
            ""
        },
    )
}

async fn asset(axum::extract::Path(file): axum::extract::Path<String>) -> Response {
    let found = match file.as_str() {
        "style.css" => Some(("text/css; charset=utf-8", STYLE)),
        "gator.js" => Some(("text/javascript; charset=utf-8", SHARED_JS)),
        "sets.js" => Some(("text/javascript; charset=utf-8", SETS_JS)),
        "favicon.svg" => Some(("image/svg+xml", FAVICON)),
        name => name.strip_suffix(".js").and_then(|name| {
            PAGES
                .iter()
                .find(|p| p.name == name)
                .map(|p| ("text/javascript; charset=utf-8", p.script))
        }),
    };
    match found {
        Some((content_type, text)) => (
            [(CONTENT_TYPE, content_type), (CACHE_CONTROL, "no-cache")],
            text,
        )
            .into_response(),
        None => crate::error::ApiError::not_found(format!("no asset {file:?}")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_prefix_is_what_the_browser_asked_for_above_the_route() {
        assert_eq!(mount_prefix("/", "/gator"), "/gator");
        assert_eq!(mount_prefix("/queues", "/gator/queues"), "/gator");
        assert_eq!(mount_prefix("/queues", "/ops/gator/queues"), "/ops/gator");
        assert_eq!(mount_prefix("/", "/"), "");
        assert_eq!(mount_prefix("/dead", "/dead"), "");
        let link = |route, original| links(route, original);
        assert_eq!(link("/", "/gator"), ("gator/".into(), "../gator".into()));
        assert_eq!(link("/", "/gator/"), ("./".into(), "../gator".into()));
        assert_eq!(
            link("/dead", "/ops/gator/dead"),
            ("./".into(), "../gator".into())
        );
        assert_eq!(link("/", "/"), ("./".into(), "./".into()));
        assert_eq!(link("/dead", "/dead"), ("./".into(), "./".into()));
    }

    #[test]
    fn every_page_has_its_body_and_script() {
        for page in PAGES {
            assert!(page.body.contains("<h1>"), "{} has a heading", page.name);
            assert!(page.script.contains("\"use strict\""), "{}.js", page.name);
            assert!(
                !page.script.contains("innerHTML"),
                "{}.js must not use innerHTML",
                page.name
            );
        }
        assert!(!SHARED_JS.contains(".innerHTML") && !SETS_JS.contains(".innerHTML"));
    }
}
