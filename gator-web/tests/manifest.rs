//! Depending on gator-web must not change the features an app's worker is built with: Cargo
//! unifies a crate's features across the whole build, so a gator-core feature turned on by
//! gator-web's own dependency line (it once turned on `cluster`) would be on for the app's
//! worker too. Optional support goes behind gator-web's own features.

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
