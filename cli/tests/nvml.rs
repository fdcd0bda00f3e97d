//! `rcud smi` and NVML end to end, against an `rcud-server --backend emu`:
//!
//! - `smi_shows_clients_and_their_memory`: a CUDA program (`hold_memory.cu`,
//!   built with `-cudart shared` and `-cudart static`) holds 64 MiB; the
//!   table shows the device, the memory in use grows, and the program's
//!   process appears, then leaves when it ends.
//! - `pynvml_answers_from_the_server`: `tests/python/nvml_devices.py` runs
//!   under `rcud run` with nvidia-ml-py from PyPI (installed into
//!   `target/nvml-venv` on first use) and checks every NVML answer against
//!   the device table the server reports.
//!
//! Requirements and skipping as in `e2e.rs` (see `common/mod.rs`).

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use common::{build_as, repo_root, run_with_timeout, setup, Env, Server};

const SMI_TIMEOUT: Duration = Duration::from_secs(30);
/// The nvidia-ml-py release the NVML test installs.
const NVIDIA_ML_PY: &str = "nvidia-ml-py==13.615.71";

/// `rcud smi --server ADDR`: its table.
fn smi(env: &Env, server: &Server) -> String {
    smi_as(env, server, None)
}

/// `rcud smi --server ADDR` with the credentials `token` (`tenant:secret`).
fn smi_as(env: &Env, server: &Server, token: Option<&str>) -> String {
    let mut cmd = Command::new(&env.rcud);
    cmd.env_remove("RCUD_SERVERS")
        .env_remove("RCUD_TOKEN_FILE")
        .args(["smi", "--server"])
        .arg(server.addr.to_string());
    match token {
        Some(t) => cmd.env("RCUD_TOKEN", t),
        None => cmd.env_remove("RCUD_TOKEN"),
    };
    let run = run_with_timeout(cmd, SMI_TIMEOUT);
    assert!(
        run.status.success(),
        "rcud smi failed:\n{}",
        run.transcript()
    );
    run.stdout
}

/// The table row of GPU `gpu`.
fn device_row(table: &str, gpu: u32) -> &str {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&gpu.to_string()) && l.contains("emulated"))
        .unwrap_or_else(|| panic!("no row for GPU {gpu}:\n{table}"))
}

/// The `Clients` column of a device row (the last number before the tenant).
fn clients_of(row: &str) -> u32 {
    let fields: Vec<&str> = row.split_whitespace().collect();
    fields[fields.len() - 2]
        .parse()
        .unwrap_or_else(|_| panic!("no client count in {row:?}"))
}

fn smi_with(cudart: &str) {
    let Some(env) = setup("smi_shows_clients_and_their_memory") else {
        return;
    };
    let program = build_as(
        env,
        "hold_memory",
        &format!("hold_memory_{cudart}"),
        &["-cudart", cudart],
    );
    let server = Server::start_with(env, &["--emu-gpus", "2"]);

    let idle = smi(env, &server);
    for gpu in 0..2 {
        let row = device_row(&idle, gpu);
        assert!(row.contains("0 B / 8.0 GiB"), "idle GPU {gpu}: {row}");
        assert_eq!(clients_of(row), 0, "{idle}");
    }
    assert!(idle.contains("Processes:\n  none"), "{idle}");

    let holder = Holder::start(env, &server, &program, None);
    let pid = holder.pid.clone();

    let busy = smi(env, &server);
    let row = device_row(&busy, 0);
    assert!(row.contains("64.0 MiB / 8.0 GiB"), "memory in use: {busy}");
    assert_eq!(clients_of(row), 1, "{busy}");
    assert_eq!(clients_of(device_row(&busy, 1)), 0, "{busy}");
    let process = busy
        .lines()
        .find(|l| l.contains(&format!("(pid {pid})")))
        .unwrap_or_else(|| panic!("process {pid} missing:\n{busy}"));
    let fields: Vec<&str> = process.split_whitespace().collect();
    assert_eq!(
        &fields[..4],
        ["0", pid.as_str(), "64.0", "MiB"],
        "{process}"
    );

    holder.finish();
    // The agent ends with the connection, at once or nearly.
    let mut after = smi(env, &server);
    for _ in 0..50 {
        if after.contains("Processes:\n  none") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        after = smi(env, &server);
    }
    assert!(after.contains("Processes:\n  none"), "{after}");
    assert!(device_row(&after, 0).contains("0 B / 8.0 GiB"), "{after}");
}

/// `hold_memory` running under `rcud run`, holding its 64 MiB.
struct Holder {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
    pid: String,
}

impl Holder {
    fn start(
        env: &Env,
        server: &Server,
        program: &std::path::Path,
        token_file: Option<&std::path::Path>,
    ) -> Holder {
        let mut cmd = Command::new(&env.rcud);
        cmd.env_remove("RCUD_SERVERS")
            .env_remove("LD_PRELOAD")
            .env_remove("RCUD_TOKEN")
            .env_remove("RCUD_TOKEN_FILE")
            .args(["run", "--server"])
            .arg(server.addr.to_string());
        if let Some(file) = token_file {
            cmd.arg("--token-file").arg(file);
        }
        let mut child = cmd
            .arg("--")
            .arg(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start hold_memory under rcud run");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("read hold_memory");
        let pid = line
            .trim()
            .strip_prefix("holding 67108864 pid ")
            .unwrap_or_else(|| panic!("hold_memory said {line:?}"))
            .to_string();
        Holder { child, out, pid }
    }

    /// Lets the program free its memory and end; checks it passed.
    fn finish(mut self) {
        drop(self.child.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.out, &mut rest).expect("read hold_memory");
        let status = self.child.wait().expect("wait for hold_memory");
        assert!(
            status.success() && rest.contains("PASS"),
            "hold_memory: {status} {rest}"
        );
    }
}

#[test]
fn smi_hides_other_tenants_programs() {
    let Some(env) = setup("smi_hides_other_tenants_programs") else {
        return;
    };
    let program = build_as(
        env,
        "hold_memory",
        "hold_memory_shared",
        &["-cudart", "shared"],
    );
    let dir = tempfile::tempdir().expect("temporary directory");
    let auth = dir.path().join("tenants.toml");
    std::fs::write(
        &auth,
        "[tenants.alpha]\nsecret = \"alpha-secret-0123456789\"\n\n\
         [tenants.beta]\nsecret = \"beta-secret-0123456789a\"\n",
    )
    .expect("write the tenants");
    // The server and the client refuse secrets others can read.
    let private = |path: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
    };
    private(&auth);
    let alpha_token = dir.path().join("alpha.token");
    std::fs::write(&alpha_token, "alpha:alpha-secret-0123456789").expect("write the token");
    private(&alpha_token);
    let auth_arg = auth.to_string_lossy().into_owned();
    let server = Server::start_with(env, &["--auth-file", &auth_arg]);
    let holder = Holder::start(env, &server, &program, Some(&alpha_token));

    let own = smi_as(env, &server, Some("alpha:alpha-secret-0123456789"));
    let row = device_row(&own, 0);
    assert!(
        row.ends_with("alpha") && row.contains("64.0 MiB / 8.0 GiB"),
        "{own}"
    );
    assert!(own.contains(&format!("(pid {})", holder.pid)), "{own}");

    let other = smi_as(env, &server, Some("beta:beta-secret-0123456789a"));
    let row = device_row(&other, 0);
    // The totals are shared; the program is not named.
    assert!(
        row.ends_with("beta") && row.contains("64.0 MiB / 8.0 GiB"),
        "{other}"
    );
    assert_eq!(clients_of(row), 1, "{other}");
    assert!(
        !other.contains(&holder.pid) && !other.contains("hold_memory"),
        "{other}"
    );
    let hidden = other
        .lines()
        .find(|l| l.contains("(another tenant's client)"))
        .unwrap_or_else(|| panic!("no hidden client:\n{other}"));
    let fields: Vec<&str> = hidden.split_whitespace().collect();
    assert_eq!(&fields[..5], ["0", "-", "64.0", "MiB", "-"], "{hidden}");
    holder.finish();
}

#[test]
fn smi_shows_clients_and_their_memory() {
    smi_with("shared");
    smi_with("static");
}

/// `target/nvml-venv/bin/python` with nvidia-ml-py, made once.
fn nvml_python() -> PathBuf {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let made = PYTHON.get_or_init(|| {
        let venv = repo_root().join("target").join("nvml-venv");
        let python = venv.join("bin").join("python");
        let stamp = venv.join("installed");
        if std::fs::read_to_string(&stamp).ok().as_deref() == Some(NVIDIA_ML_PY) {
            return Ok(python);
        }
        let step = |cmd: &mut Command| -> Result<(), String> {
            let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr)))
            }
        };
        step(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
        step(Command::new(&python).args(["-m", "pip", "install", "-q", NVIDIA_ML_PY]))?;
        std::fs::write(&stamp, NVIDIA_ML_PY).map_err(|e| e.to_string())?;
        Ok(python)
    });
    match made {
        Ok(p) => p.clone(),
        Err(e) => panic!("cannot install {NVIDIA_ML_PY}: {e}"),
    }
}

#[test]
fn pynvml_answers_from_the_server() {
    let Some(env) = setup("pynvml_answers_from_the_server") else {
        return;
    };
    let python = nvml_python();
    let server = Server::start_with(env, &["--emu-gpus", "2"]);
    // What the server reports, through the client library.
    let entries = rcud_client::config::parse_servers(&server.addr.to_string()).expect("address");
    let rt = rcud_client::Runtime::connect(&entries, "nvml test".into());
    let devices = rt.devices();
    assert_eq!(devices.len(), 2);
    let expected = serde_json::json!({
        "count": devices.len(),
        "names": devices.iter().map(|d| d.props.name.clone()).collect::<Vec<_>>(),
        "total": devices.iter().map(|d| d.props.total_global_mem).collect::<Vec<_>>(),
    });
    let script = repo_root()
        .join("tests")
        .join("python")
        .join("nvml_devices.py");
    let mut cmd = Command::new(&env.rcud);
    cmd.env_remove("RCUD_SERVERS")
        .env_remove("LD_PRELOAD")
        .args(["run", "--server"])
        .arg(server.addr.to_string())
        .arg("--")
        .arg(&python)
        .arg(&script)
        .arg(expected.to_string());
    let run = run_with_timeout(cmd, Duration::from_secs(120));
    assert!(
        run.status.success() && run.stdout.contains("nvml: ok"),
        "{}\n{}",
        run.transcript(),
        server.log_text()
    );
    // The UUID pynvml printed is the server's.
    let uuid = &devices[0].props.uuid;
    let hex: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
    assert!(
        run.stdout.contains(&format!("GPU-{}-", &hex[..8])),
        "{}",
        run.stdout
    );
}
