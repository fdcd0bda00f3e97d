//! rcud GPUs handed out by Slurm (`deploy/slurm`): runs
//! `scripts/slurm-check.sh`, which starts a one-node Slurm cluster on
//! loopback with two emulated `rcud-server`s, submits jobs asking for the
//! `rgpu` GRES (one runs `tests/cuda/k_vector_add` under `rcud run`), and
//! checks their RCUD_SERVERS, their output and that every GPU is released.
//!
//! The script needs root (passwordless sudo will do), and installs Debian's
//! `slurm-wlm` and `munge` with apt-get when they are missing (16 to 22 s on
//! the development machine; the cluster and its jobs take 25 s more). Hence it
//! runs:
//! - always with `RCUD_SLURM=1` (then a missing prerequisite is a failure);
//! - never with `RCUD_SLURM=0`;
//! - otherwise when the test runs as root (or `sudo -n` works) and Slurm is
//!   installed or apt-get can install it; else it prints `skipped: ...` and
//!   passes.
//!
//! It also needs nvcc, as the other end-to-end tests (see `common/mod.rs`).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{build, repo_root, run_with_timeout, setup};

/// apt-get, the cluster's start and its eleven jobs, on a slow machine.
const TIMEOUT: Duration = Duration::from_secs(600);

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

/// How the check gets root: it is root, or passwordless sudo makes it.
enum Root {
    Already,
    Sudo,
}

/// How the check can run here, or why it cannot.
fn prerequisites() -> Result<Root, &'static str> {
    let root = if running_as_root() {
        Root::Already
    } else if Command::new("sudo")
        .args(["-n", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        Root::Sudo
    } else {
        return Err("not root and no passwordless sudo (slurmd runs the Prolog as root)");
    };
    let installed = [
        "/usr/sbin/slurmctld",
        "/usr/sbin/slurmd",
        "/usr/sbin/munged",
    ]
    .iter()
    .all(|p| Path::new(p).is_file());
    if !installed && !Path::new("/usr/bin/apt-get").is_file() {
        return Err("Slurm is not installed and there is no apt-get to install it");
    }
    Ok(root)
}

#[test]
fn slurm_jobs_get_and_release_rcud_gpus() {
    let test = "slurm_jobs_get_and_release_rcud_gpus";
    let wanted = std::env::var("RCUD_SLURM").ok();
    if wanted.as_deref() == Some("0") {
        println!("skipped: {test}: RCUD_SLURM=0");
        return;
    }
    let root = match prerequisites() {
        Ok(root) => root,
        Err(why) => {
            assert_ne!(
                wanted.as_deref(),
                Some("1"),
                "RCUD_SLURM=1 but the Slurm check cannot run: {why}"
            );
            println!("skipped: {test}: {why}; set RCUD_SLURM=1 to make this a failure");
            return;
        }
    };
    let Some(env) = setup(test) else { return };
    let program = build(env, "k_vector_add");
    let bin_dir = env.rcud.parent().expect("rcud lies in a directory");

    let script = repo_root().join("scripts/slurm-check.sh");
    let mut cmd = match root {
        Root::Already => Command::new(&script),
        Root::Sudo => {
            let mut sudo = Command::new("sudo");
            sudo.args([
                "-n",
                "--preserve-env=RCUD_SLURM_PROGRAM,RCUD_BIN_DIR,RCUD_SLURM_KEEP",
            ])
            .arg(&script);
            sudo
        }
    };
    cmd.env("RCUD_SLURM_PROGRAM", &program)
        .env("RCUD_BIN_DIR", bin_dir)
        .env_remove("RCUD_SERVERS")
        .env_remove("SLURM_CONF");
    let run = run_with_timeout(cmd, TIMEOUT);
    println!("{}", run.stderr);
    if !run.status.success() {
        run.fail("scripts/slurm-check.sh failed", None);
    }
    run.assert_line("slurm-check: PASS");
    // Each of the script's checks reports itself; a check that was skipped
    // would be missing here.
    for step in [
        "rcud-slurm refuses bad configurations",
        "k_vector_add PASS on 127.0.0.1:",
        "rcud info shows 3 GPUs on 2 servers, released",
        "srun job and a step with --export=NONE got their GPUs, released",
        "waited for Resources, then got",
        "GPUs released",
        "reclaimed by job",
        "without rgpu: RCUD_SERVERS unset",
        "rgpu:4 refused",
    ] {
        if !run.stderr.contains(step) {
            run.fail(&format!("the check did not report `{step}`"), None);
        }
    }
}
