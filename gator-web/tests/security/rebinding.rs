//! Item 1 of issue 29: a page of another site cannot use the dashboard through DNS rebinding
//! or the browser's ambient credentials.

use crate::common::{TOKEN, Web, bearer, json, status};

/// The CSRF token a page shows, as a page on the dashboard's origin could read it.
fn csrf_of(page: &str) -> String {
    let start = page.find("name=\"gator-csrf\" content=\"").unwrap() + 27;
    page[start..start + 64].to_owned()
}

#[test]
fn without_auth_a_request_addressed_to_another_host_is_refused_421_before_any_handler() {
    let web = Web::start(&[]);
    let port = web.port();
    let rebound = format!("Host: rebind.attacker.example:{port}\r\n");
    // What a rebinding page would do: read the CSRF token from a page, then act with it.
    let page = web.get("/", "");
    assert_eq!(status(&page), 200, "{page}");
    let csrf = csrf_of(&page);
    let body = r#"{"force": true, "job": "send_email", "args": ["x"]}"#;
    let enqueued = web.send(&format!(
        "POST /api/queues/web/jobs HTTP/1.1\r\nHost: {}\r\nX-Gator-Csrf: {csrf}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        web.address,
        body.len()
    ));
    assert_eq!(status(&enqueued), 201, "{enqueued}");
    for (method, path) in [
        ("GET", "/"),
        ("GET", "/api/queues"),
        ("POST", "/api/queues/web/pause"),
    ] {
        let answer = web.send(&format!(
            "{method} {path} HTTP/1.1\r\n{rebound}X-Gator-Csrf: {csrf}\r\nSec-Fetch-Site: same-origin\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ));
        assert_eq!(status(&answer), 421, "{method} {path}: {answer}");
        assert_eq!(json(&answer)["code"], "host_not_allowed", "{answer}");
    }
    let queue = web.get("/api/queues/web", "");
    assert_eq!(
        json(&queue)["info"]["paused"],
        false,
        "the action never ran: {queue}"
    );
    // The names of this machine, on any port, are answered.
    for host in ["localhost", "127.0.0.1:1", "[::1]:9090", "LOCALHOST."] {
        let answer = web.get_as("/api/queues", &format!("Host: {host}\r\n"));
        assert_eq!(status(&answer), 200, "{host}: {answer}");
    }
    // No Host at all cannot come from a browser (see host.rs): answered.
    let answer = web.send("GET /api/queues HTTP/1.0\r\n\r\n");
    assert_eq!(status(&answer), 200, "{answer}");
}

#[test]
fn the_binary_answers_to_its_bound_address_with_its_port_only() {
    // 127.0.0.2 is loopback, yet none of the default names: only binding adds it.
    let web = Web::start(&["--bind", "127.0.0.2:0"]);
    let port = web.port();
    let answer = web.get_as("/api/queues", &format!("Host: 127.0.0.2:{port}\r\n"));
    assert_eq!(status(&answer), 200, "{answer}");
    let other = web.get_as("/api/queues", &format!("Host: 127.0.0.2:{}\r\n", port + 1));
    assert_eq!(status(&other), 421, "{other}");
}

/// The status of `GET /api/queues` with the bearer token, addressed to `host`.
fn asked(web: &Web, host: &str) -> u16 {
    status(&web.get_as("/api/queues", &format!("Host: {host}\r\n{}", bearer())))
}

#[test]
fn an_allowlist_adds_names_by_flag_and_env_and_is_enforced_with_auth_too() {
    let web = Web::start(&[
        "--auth-token",
        TOKEN,
        "--allowed-host",
        "gator.example.com",
        "--allowed-host",
        "ops.example:8443",
    ]);
    for allowed in [
        "gator.example.com",
        "gator.example.com:443",
        "ops.example:8443",
    ] {
        assert_eq!(asked(&web, allowed), 200, "{allowed}");
    }
    for refused in [
        "ops.example:80",
        "evil.example",
        "gator.example.com.evil.example",
    ] {
        assert_eq!(
            asked(&web, refused),
            421,
            "{refused}, even with the bearer token"
        );
    }
    // A proxy's X-Forwarded-Host is a name the request was addressed to as well.
    let forwarded = web.get_as(
        "/api/queues",
        &format!(
            "Host: gator.example.com\r\nX-Forwarded-Host: evil.example\r\n{}",
            bearer()
        ),
    );
    assert_eq!(status(&forwarded), 421, "{forwarded}");
    drop(web);
    let web = Web::start_with_env(
        &["--auth-token", TOKEN],
        &[(
            "GATOR_WEB_ALLOWED_HOSTS",
            "other.example, gator.example.com:443",
        )],
    );
    assert_eq!(asked(&web, "other.example:1"), 200);
    assert_eq!(asked(&web, "gator.example.com:80"), 421);
    drop(web);
    // With auth and no allowlist, names are not checked: the token is the guard.
    let web = Web::start(&["--auth-token", TOKEN]);
    assert_eq!(asked(&web, "evil.example"), 200);
}

#[test]
fn a_cross_site_request_is_refused_gets_too_unless_it_carries_the_bearer_token() {
    let basic = "Authorization: Basic b3BzOmEtcGFzc3dvcmQtb2YtMjAtY2g=\r\n"; // ops:a-password-of-20-ch
    let web = Web::start(&[
        "--auth-token",
        TOKEN,
        "--basic-auth",
        "ops:a-password-of-20-ch",
    ]);
    let login = web.get(&format!("/?token={TOKEN}"), "");
    let cookie = crate::common::header(&login, "set-cookie").unwrap();
    let cookie = format!("Cookie: {}\r\n", cookie.split(';').next().unwrap());
    let cross = "Sec-Fetch-Site: cross-site\r\n";
    for (what, credentials) in [
        ("basic auth", basic),
        ("the session cookie", cookie.as_str()),
    ] {
        for path in ["/api/overview", "/dead"] {
            let same = web.get(
                path,
                &format!("{credentials}Sec-Fetch-Site: same-origin\r\n"),
            );
            assert_eq!(status(&same), 200, "{what} {path}: {same}");
            let answer = web.get(path, &format!("{credentials}{cross}"));
            assert_eq!(status(&answer), 403, "{what} {path}: {answer}");
            assert_eq!(json(&answer)["code"], "cross_site");
        }
    }
    let answer = web.get("/api/overview", &format!("{}{cross}", bearer()));
    assert_eq!(
        status(&answer),
        200,
        "a bearer token is no browser's: {answer}"
    );
    drop(web);
    // Without auth too.
    let web = Web::start(&[]);
    let answer = web.get("/api/overview", cross);
    assert_eq!(status(&answer), 403, "{answer}");
}
