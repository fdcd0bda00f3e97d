//! `docs/api-coverage.md` is what the build generates from the export
//! lists, the implemented functions and `exports/unsupported.txt`:
//! `RCUD_BLESS=1 cargo test -p rcud-cudart --test api_coverage` rewrites it.

use std::path::Path;

#[test]
fn the_coverage_document_is_current() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/api-coverage.md"));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/api-coverage.md");
    if std::env::var_os("RCUD_BLESS").is_some() {
        std::fs::write(&path, generated).expect("write docs/api-coverage.md");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "docs/api-coverage.md is stale: rerun with RCUD_BLESS=1 \
         (cargo test -p rcud-cudart --test api_coverage)"
    );
}
