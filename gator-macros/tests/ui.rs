//! Compile tests of `#[job]`: what it accepts (`ui/pass`), and the error each mistake gets
//! (`ui/fail`, one file per mistake). Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p gator-macros --test ui` and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
