//! Depending on gator-web must not change the features an app's worker is built with: Cargo
//! unifies a crate's features across the whole build, so a gator-core feature turned on by
//! gator-web's own dependency line (it once turned on `cluster`) would be on for the app's
//! worker too. Optional support goes behind gator-web's own features, and gator-core's
//! defaults (`cluster`) are not taken either: the workspace's line for gator-core says
//! `default-features = false`, so an app that builds its worker without `cluster` gets none
//! from gator-web when it says the same of gator-web.

#[test]
fn gator_web_turns_on_no_feature_of_gator_core() {
    let manifest = include_str!("../Cargo.toml");
    let dependencies = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .expect("a [dependencies] table");
    let line = dependencies
        .lines()
        .find(|l| l.trim_start().starts_with("gator-core"))
        .expect("gator-core is a dependency");
    assert!(
        !line.contains("features"),
        "gator-web's dependency on gator-core turns features on for every app: {line}"
    );
}

#[test]
fn gator_web_takes_no_default_feature_of_gator_core() {
    let workspace = include_str!("../../Cargo.toml");
    let line = workspace
        .lines()
        .find(|l| l.starts_with("gator-core = "))
        .expect("gator-core in [workspace.dependencies]");
    assert!(
        line.contains("default-features = false"),
        "every member that names gator-core takes its default features: {line}"
    );
    let manifest = include_str!("../Cargo.toml");
    assert!(
        manifest.contains("default = [\"cluster\"]")
            && manifest.contains("cluster = [\"gator-core/cluster\"]"),
        "gator-web turns cluster support on by its own default, and forwards it"
    );
}
