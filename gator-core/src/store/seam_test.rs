//! "Only `store` talks to Redis": no production code of gator-core, gator-worker or gator-web
//! builds a Redis command, a pipeline or a script call outside `gator-core/src/store/`.
//! `transport/connection.rs` and `open.rs`, which keep the connections alive, may forward what
//! `store` built, but build nothing. A command written anywhere else would be a key or a
//! script nobody can find from `store`.

use std::path::{Path, PathBuf};

/// What builds a command, or runs one as a typed query.
const BUILDS: [&str; 6] = [
    "redis::cmd",
    "redis::Script",
    "redis::pipe",
    "pipe()",
    "query_async",
    "invoke_async",
];

/// What builds or sends a command.
const SPELLS: [&str; 7] = [
    "redis::cmd",
    "redis::Script",
    "redis::pipe",
    "pipe()",
    "query_async",
    "invoke_async",
    "req_packed_command",
];

/// Where they may be written, relative to the workspace.
const STORE: &str = "gator-core/src/store/";

/// The connections' plumbing, which sends what `store` built as packed bytes (to the node of a
/// key, for `WAIT`: `Connection::send_to_node_of`) and hands back the raw reply: it builds no
/// command and runs none as a typed query (`query_async`), which is `store`'s.
const FORWARDERS: [&str; 2] = [
    "gator-core/src/transport/connection.rs",
    "gator-core/src/transport/open.rs",
];

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn no_code_outside_store_builds_a_redis_command() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in ["gator-core", "gator-worker", "gator-web"] {
        rust_files(&workspace.join(krate).join("src"), &mut files);
    }
    let mut offences = Vec::new();
    for file in files {
        let shown = shown(&workspace, &file);
        if shown.starts_with(STORE) {
            continue;
        }
        let spells: &[&str] = if FORWARDERS.contains(&shown.as_str()) {
            &BUILDS
        } else {
            &SPELLS
        };
        let text = std::fs::read_to_string(&file).expect("a readable file");
        // A file's unit tests may talk to Redis as they like.
        let production = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in production.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if let Some(spell) = spells.iter().find(|spell| code.contains(*spell)) {
                offences.push(format!("{shown}:{}: {spell}", n + 1));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "Redis commands outside gator-core/src/store/ (move them into a store fn):\n{}",
        offences.join("\n")
    );
}

/// The code of `text`: its lines without their `//` comments (doc comments included).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(n, line)| (n + 1, line.split("//").next().unwrap_or("")))
}

/// "Store's rooms are the crate's own": `store/mod.rs` and `store/door/mod.rs` declare no
/// module `pub` (a room is `pub(crate)`, a handle's file private), but `crash`, which exists
/// only with the `crash-seams` feature. Outside gator-core the store is its handles and the
/// types re-exported beside them (`compile_fail` in the module docs tries a room's path).
#[test]
fn no_room_of_the_store_is_public_outside_gator_core() {
    let store = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store");
    let mut offences = Vec::new();
    for file in ["mod.rs", "door/mod.rs"] {
        // `store/mod.rs` must exist; a store without `door/` has no handles' files to check.
        let read = std::fs::read_to_string(store.join(file));
        let text = if file == "mod.rs" {
            read.expect("store/mod.rs is readable")
        } else {
            read.unwrap_or_default()
        };
        let mut gated = false;
        for (n, code) in code_lines(&text) {
            let code = code.trim();
            let public = code.starts_with("pub mod ") && !code.starts_with("pub mod crash");
            if public || (code.starts_with("pub mod crash") && !gated) {
                offences.push(format!("store/{file}:{n}: {code}"));
            }
            gated =
                code == "#[cfg(feature = \"crash-seams\")]" || (gated && code.starts_with("#["));
        }
    }
    assert!(
        offences.is_empty(),
        "public rooms of the store (make them pub(crate); re-export what a user needs from door/):\n{}",
        offences.join("\n")
    );
}

/// "The worker reaches Redis through a few doors": at most five files of gator-worker name
/// `gator_core::store`; no other file takes a connection (`.connection()`); and the `Settle`
/// handle is made in the settle room alone (`gator-worker/src/settle/`), which owns every
/// outcome write. The dashboard names none: it reaches Redis through `Admin`.
#[test]
fn the_worker_reaches_the_store_from_at_most_five_files() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    rust_files(&workspace.join("gator-worker/src"), &mut files);
    let (mut doors, mut connections, mut settles) = (Vec::new(), Vec::new(), Vec::new());
    for file in files {
        let shown = shown(&workspace, &file);
        let text = std::fs::read_to_string(&file).expect("a readable file");
        let code: Vec<&str> = code_lines(&text).map(|(_, code)| code).collect();
        if code.iter().any(|c| c.contains("gator_core::store")) {
            doors.push(shown.clone());
        }
        if code.iter().any(|c| c.contains(".connection()")) {
            connections.push(shown.clone());
        }
        if code.iter().any(|c| c.contains("Settle::new")) {
            settles.push(shown);
        }
    }
    assert!(
        doors.len() <= 5,
        "files naming gator_core::store: {doors:?}"
    );
    let mut web = Vec::new();
    rust_files(&workspace.join("gator-web/src"), &mut web);
    let web: Vec<String> = web
        .into_iter()
        .filter(|file| {
            let text = std::fs::read_to_string(file).expect("a readable file");
            code_lines(&text).any(|(_, code)| code.contains("gator_core::store"))
        })
        .map(|file| shown(&workspace, &file))
        .collect();
    assert!(
        web.is_empty(),
        "gator-web files naming gator_core::store: {web:?}"
    );
    let stray: Vec<_> = connections.iter().filter(|f| !doors.contains(f)).collect();
    assert!(
        stray.is_empty(),
        "files taking a connection outside the doors: {stray:?}"
    );
    let outside: Vec<_> = settles
        .iter()
        .filter(|f| !f.starts_with("gator-worker/src/settle/"))
        .collect();
    assert!(
        outside.is_empty(),
        "Settle handles made outside settle/: {outside:?}"
    );
}

/// `file`'s path from the workspace's root, with `/` between folders on every system.
fn shown(workspace: &Path, file: &Path) -> String {
    file.strip_prefix(workspace)
        .expect("inside the workspace")
        .to_string_lossy()
        .replace('\\', "/")
}
