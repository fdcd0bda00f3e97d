//! The manifests in deploy/kubernetes pass the Kubernetes OpenAPI schemas,
//! strictly (no unknown field), with kubernetes-validate, which ships the
//! schemas: `scripts/ensure-kubernetes-validate.sh` installs it from PyPI
//! into .venv-k8s the first time (or RCUD_K8S_VALIDATE names one).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("repository root")
}

/// The validator, installed once for all the tests of this file (they run
/// in parallel, and two pip installs into one venv would collide).
fn validator() -> PathBuf {
    static VALIDATOR: OnceLock<PathBuf> = OnceLock::new();
    VALIDATOR.get_or_init(install_validator).clone()
}

fn install_validator() -> PathBuf {
    let output = Command::new(repo_root().join("scripts/ensure-kubernetes-validate.sh"))
        .output()
        .expect("run scripts/ensure-kubernetes-validate.sh");
    assert!(
        output.status.success(),
        "scripts/ensure-kubernetes-validate.sh failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

fn validate(validator: &Path, file: &Path) -> (bool, String) {
    let output = Command::new(validator)
        .arg("--strict")
        .arg(file)
        .output()
        .expect("run kubernetes-validate");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn manifests_pass_the_kubernetes_schemas() {
    let validator = validator();
    let dir = repo_root().join("deploy/kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("deploy/kubernetes")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            f.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for expected in [
        "rcud-server-daemonset.yaml",
        "rcud-device-plugin-daemonset.yaml",
        "example-job.yaml",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    for file in &files {
        let (ok, text) = validate(&validator, file);
        assert!(ok, "{} fails validation:\n{text}", file.display());
        assert!(
            text.contains("passed"),
            "{}: no resource validated:\n{text}",
            file.display()
        );
    }
}

/// The validator rejects what it should, so a pass means something.
#[test]
fn the_validator_rejects_an_unknown_field_and_a_wrong_type() {
    let validator = validator();
    let dir = tempfile::tempdir().expect("temporary directory");
    let job = std::fs::read_to_string(repo_root().join("deploy/kubernetes/example-job.yaml"))
        .expect("example-job.yaml");
    for (what, broken) in [
        (
            "unknown field",
            job.replace(
                "restartPolicy: Never",
                "restartPolicy: Never\n      gpus: 1",
            ),
        ),
        (
            "wrong type",
            job.replace("backoffLimit: 1", "backoffLimit: one"),
        ),
    ] {
        assert_ne!(broken, job, "the {what} was not put in");
        let file = dir.path().join("broken.yaml");
        std::fs::write(&file, broken).expect("write");
        let (ok, text) = validate(&validator, &file);
        assert!(!ok, "a job with a {what} passes:\n{text}");
    }
}
