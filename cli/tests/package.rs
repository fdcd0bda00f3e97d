//! The Debian package: `cargo deb -p rcud --no-build` packs the release
//! build (`cargo build --release --workspace` first), and these tests read
//! the package with `dpkg-deb` (files, modes, control fields, conffiles,
//! maintainer scripts), then extract it and run CUDA programs with the
//! extracted `rcud` against the extracted `rcud-server`, so that the
//! installed layout (`/usr/bin`, `/usr/lib/rcud`) is what is tested.
//!
//! Needs `cargo-deb` (`$RCUD_CARGO_DEB`, else on PATH, else where
//! `scripts/ensure-cargo-deb.sh` installs it) and `dpkg-deb`. Without them
//! the tests print `skipped: ...` and pass, unless `RCUD_REQUIRE_DEB=1`.

mod common;

use common::{build, build_as, repo_root, run_with_timeout, setup, Env, Server, RUN_TIMEOUT};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// Limit for packing (it compresses some 100 MB of binaries).
const PACK_TIMEOUT: Duration = Duration::from_secs(600);

/// Every file of the package with its mode: the programs, the client
/// library where `rcud run` looks for it, the unit, the example
/// configuration (600: it holds tenants' secrets) and the documentation.
const FILES: &[(&str, u32)] = &[
    ("usr/bin/rcud", 0o755),
    ("usr/bin/rcud-server", 0o755),
    ("usr/lib/rcud/librcudart.so", 0o644),
    ("usr/lib/systemd/system/rcud-server.service", 0o644),
    ("etc/rcud/server.toml", 0o600),
    ("usr/share/doc/rcud/README.md", 0o644),
    ("usr/share/doc/rcud/operations.md", 0o644),
    ("usr/share/doc/rcud/compatibility.md", 0o644),
    ("usr/share/doc/rcud/security.md", 0o644),
    ("usr/share/doc/rcud/copyright", 0o644),
];

/// `cargo-deb`, or `None` (after printing `skipped: ...`) when it or
/// `dpkg-deb` is missing and `RCUD_REQUIRE_DEB` is not `1`.
fn cargo_deb(test: &str) -> Option<PathBuf> {
    let explicit = std::env::var_os("RCUD_CARGO_DEB").filter(|v| !v.is_empty());
    if let Some(path) = explicit.as_ref().map(PathBuf::from) {
        assert!(
            path.is_file(),
            "RCUD_CARGO_DEB={} is not a file",
            path.display()
        );
    }
    let found = explicit.map(PathBuf::from).or_else(|| {
        let on_path = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|d| d.join("cargo-deb"));
        on_path
            .chain([repo_root().join("target/tools/bin/cargo-deb")])
            .find(|p| p.is_file())
    });
    let dpkg_deb = Command::new("dpkg-deb").arg("--version").output().is_ok();
    let missing = match (&found, dpkg_deb) {
        (Some(_), true) => return found,
        (None, _) => "no cargo-deb found (run scripts/ensure-cargo-deb.sh, or set RCUD_CARGO_DEB)",
        (Some(_), false) => "no dpkg-deb found (install dpkg)",
    };
    if std::env::var("RCUD_REQUIRE_DEB").as_deref() == Ok("1") {
        panic!("RCUD_REQUIRE_DEB=1 but {missing}");
    }
    // Straight to stderr: the test harness captures `eprintln!`.
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {test}: {missing}; set RCUD_REQUIRE_DEB=1 to make this a failure"
    );
    None
}

/// The package, packed once per test process from the release build.
fn package(cargo_deb: &Path) -> &'static Path {
    static DEB: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DEB.get_or_init(|| pack(cargo_deb))
        .as_deref()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn pack(cargo_deb: &Path) -> Result<PathBuf, String> {
    let rcud = Path::new(env!("CARGO_BIN_EXE_rcud"));
    if rcud.parent().and_then(Path::file_name) != Some("release".as_ref()) {
        return Err(format!(
            "the package holds the release build, but this test runs {}: \
             run it with `cargo test --release`",
            rcud.display()
        ));
    }
    let out = repo_root().join("target/debian-test");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut cmd = Command::new(cargo_deb);
    cmd.current_dir(repo_root())
        .args(["-p", "rcud", "--no-build", "--fast", "--output"])
        .arg(&out);
    let run = run_with_timeout(cmd, PACK_TIMEOUT);
    if !run.status.success() {
        return Err(format!("cargo deb failed:\n{}", run.transcript()));
    }
    // cargo-deb prints the package's path last.
    run.stdout
        .lines()
        .last()
        .map(PathBuf::from)
        .filter(|p| p.extension().is_some_and(|e| e == "deb") && p.is_file())
        .ok_or_else(|| format!("cargo deb named no package:\n{}", run.transcript()))
}

/// `dpkg-deb OPTION PACKAGE MEMBERS`'s standard output; panics when it fails.
fn dpkg_deb(option: &str, deb: &Path, members: &[&str]) -> String {
    let output = Command::new("dpkg-deb")
        .arg(option)
        .arg(deb)
        .args(members)
        .output()
        .expect("run dpkg-deb");
    assert!(
        output.status.success(),
        "dpkg-deb {option} {} {members:?} failed: {}",
        deb.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("dpkg-deb prints UTF-8")
}

/// The regular files of `dpkg-deb -c` (a `tar -tv` listing): path to mode.
fn listed_files(listing: &str) -> BTreeMap<String, u32> {
    listing
        .lines()
        .filter(|l| l.starts_with('-'))
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let perms = fields[0].as_bytes();
            let mode = perms[1..10]
                .iter()
                .enumerate()
                .filter(|(_, &c)| c != b'-')
                .fold(0, |m, (i, _)| m | (1 << (8 - i)));
            let path = fields.last().expect("a path ends each line");
            (path.trim_start_matches("./").to_string(), mode)
        })
        .collect()
}

#[test]
fn package_holds_the_programs_library_unit_and_configuration() {
    let Some(cargo_deb) = cargo_deb("package_holds_the_programs_library_unit_and_configuration")
    else {
        return;
    };
    let deb = package(&cargo_deb);

    let files = listed_files(&dpkg_deb("--contents", deb, &[]));
    for &(path, mode) in FILES {
        match files.get(path) {
            Some(&have) => assert_eq!(
                have,
                mode,
                "{path} has mode {have:o}, not {mode:o}, in {}",
                deb.display()
            ),
            None => panic!("{} lacks {path}; it holds {files:#?}", deb.display()),
        }
    }
    let extra: Vec<&String> = files
        .keys()
        .filter(|p| !FILES.iter().any(|(f, _)| f == p))
        .collect();
    assert!(
        extra.is_empty(),
        "unexpected files in the package: {extra:?}"
    );

    let control = dpkg_deb("--field", deb, &[]);
    let field = |name: &str| {
        control
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
            .unwrap_or_else(|| panic!("no {name} field in\n{control}"))
    };
    assert_eq!(field("Package"), "rcud");
    if cfg!(target_arch = "x86_64") {
        assert_eq!(field("Architecture"), "amd64");
    }
    // Computed from the binaries' shared libraries ($auto), and useradd's.
    let depends = field("Depends");
    assert!(depends.contains("libc6"), "Depends: {depends}");
    assert!(depends.contains("passwd"), "Depends: {depends}");

    // An operator's edits to the configuration survive upgrades.
    let conffiles = dpkg_deb("--info", deb, &["conffiles"]);
    assert_eq!(
        conffiles.lines().collect::<Vec<_>>(),
        ["/etc/rcud/server.toml"]
    );

    // The unit's binary and configuration are where the package puts them.
    let dir = tempfile::tempdir().expect("temporary directory");
    extract(deb, dir.path());
    let unit = std::fs::read_to_string(
        dir.path()
            .join("usr/lib/systemd/system/rcud-server.service"),
    )
    .expect("read the packaged unit");
    assert!(
        unit.lines()
            .any(|l| l == "ExecStart=/usr/bin/rcud-server --config /etc/rcud/server.toml"),
        "the unit does not start /usr/bin/rcud-server with /etc/rcud/server.toml:\n{unit}"
    );
    assert!(unit.lines().any(|l| l == "User=rcud"), "{unit}");
}

#[test]
fn maintainer_scripts_create_the_user_and_leave_the_unit_stopped() {
    let Some(cargo_deb) =
        cargo_deb("maintainer_scripts_create_the_user_and_leave_the_unit_stopped")
    else {
        return;
    };
    let deb = package(&cargo_deb);
    let dir = tempfile::tempdir().expect("temporary directory");
    let status = Command::new("dpkg-deb")
        .arg("--control")
        .arg(deb)
        .arg(dir.path())
        .status()
        .expect("run dpkg-deb --control");
    assert!(status.success(), "dpkg-deb --control failed");
    let script = |name: &str| {
        let path = dir.path().join(name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("the package has no {name}: {e}"));
        let syntax = Command::new("sh")
            .arg("-n")
            .arg(&path)
            .status()
            .expect("run sh -n");
        assert!(syntax.success(), "{name} is not valid sh:\n{text}");
        assert!(
            !text.contains("#DEBHELPER#"),
            "{name} kept #DEBHELPER#:\n{text}"
        );
        text
    };
    let postinst = script("postinst");
    for needed in [
        "useradd --system",
        "dpkg-statoverride --update --add rcud rcud 600 /etc/rcud/server.toml",
        // cargo-deb's systemd fragments: systemd learns of the unit, which
        // is enabled again only on upgrades of an installation where the
        // operator had enabled it (`debian-installed`, not on first install)...
        "deb-systemd-helper update-state rcud-server.service",
        "if deb-systemd-helper debian-installed rcud-server.service; then",
        "systemctl --system daemon-reload",
    ] {
        assert!(
            postinst.contains(needed),
            "postinst lacks `{needed}`:\n{postinst}"
        );
    }
    // ...but neither enables nor starts it on install: the example
    // configuration has placeholder secrets.
    for refused in ["deb-systemd-invoke start", "_dh_action=start"] {
        assert!(
            !postinst.contains(refused),
            "postinst has `{refused}`:\n{postinst}"
        );
    }
    let postrm = script("postrm");
    assert!(
        postrm.contains("dpkg-statoverride --remove /etc/rcud/server.toml"),
        "postrm does not forget the statoverride on purge:\n{postrm}"
    );
}

fn extract(deb: &Path, dir: &Path) {
    let status = Command::new("dpkg-deb")
        .arg("--extract")
        .arg(deb)
        .arg(dir)
        .status()
        .expect("run dpkg-deb --extract");
    assert!(
        status.success(),
        "dpkg-deb --extract {} failed",
        deb.display()
    );
}

/// `rcud run` exactly as installed: no `--library` and no `RCUD_LIBRARY`,
/// so it must find `../lib/rcud/librcudart.so` itself.
fn installed_run(rcud: &Path, server: Option<&Server>, program: &Path) -> common::Run {
    let mut cmd = Command::new(rcud);
    cmd.env_remove("LD_PRELOAD")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("RCUD_SERVERS")
        .env_remove("RCUD_LIBRARY")
        .arg("run");
    if let Some(server) = server {
        cmd.arg("--server").arg(server.addr.to_string());
    }
    cmd.arg("--").arg(program);
    run_with_timeout(cmd, RUN_TIMEOUT)
}

#[test]
fn extracted_package_runs_cuda_programs() {
    let Some(cargo_deb) = cargo_deb("extracted_package_runs_cuda_programs") else {
        return;
    };
    let Some(env) = setup("extracted_package_runs_cuda_programs") else {
        return;
    };
    let shared = build(env, "device_query");
    let stat = build_as(
        env,
        "device_query",
        "device_query-sm80-static",
        &["-arch=sm_80", "-cudart", "static"],
    );
    let deb = package(&cargo_deb);
    let root = tempfile::tempdir().expect("temporary directory");
    extract(deb, root.path());
    let installed = Env {
        nvcc: env.nvcc.clone(),
        link_dir: env.link_dir.clone(),
        rcud: root.path().join("usr/bin/rcud"),
        server: root.path().join("usr/bin/rcud-server"),
        cudart: root.path().join("usr/lib/rcud/librcudart.so"),
    };

    let server = Server::start(&installed);
    for program in [&shared, &stat] {
        let run = installed_run(&installed.rcud, Some(&server), program);
        run.assert_pass(Some(&server));
        common::assert_emulated_device(&run);
        // With the embedded server too.
        let run = installed_run(&installed.rcud, None, program);
        run.assert_pass(None);
        common::assert_emulated_device(&run);
    }

    // Away from ../lib/rcud, the installed `rcud run` names where it looked.
    let bare = tempfile::tempdir().expect("temporary directory");
    let lone = bare.path().join("rcud");
    std::fs::copy(&installed.rcud, &lone).expect("copy rcud");
    let run = installed_run(&lone, None, &shared);
    let expected = format!(
        "rcud: the rcud CUDA runtime library was not found at {}",
        bare.path().join("librcudart.so").display()
    );
    assert!(
        !run.status.success() && run.stderr.contains(&expected),
        "rcud without ../lib/rcud/ did not say `{expected}`:\n{}",
        run.transcript()
    );
}

/// Installs the package with `dpkg -i` into a throwaway root (an overlay of
/// `/` in a private mount namespace, gone when the script exits), starts the
/// installed unit's command as the user `rcud` with the installed example
/// configuration, runs a program against it with a tenant's token, and
/// purges the package. Prints `key: value` lines for the test to check,
/// then the program's output.
/// Arguments: the package, the program, a free port, an empty directory.
const THROWAWAY_INSTALL: &str = r#"
set -eu
deb=$1 program=$2 port=$3 base=$4
mount -t tmpfs tmpfs "$base"
mkdir "$base/upper" "$base/work" "$base/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$base/upper,workdir=$base/work" "$base/root"
for d in proc dev sys; do mount --rbind "/$d" "$base/root/$d"; done
root=$base/root
cp "$deb" "$root/tmp/rcud.deb"
chroot "$root" dpkg -i /tmp/rcud.deb >&2
echo "user: $(chroot "$root" getent passwd rcud)"
echo "config: $(chroot "$root" stat -c '%U:%G %a' /etc/rcud/server.toml)"
echo "override: $(chroot "$root" dpkg-statoverride --list /etc/rcud/server.toml)"
wants=/etc/systemd/system/multi-user.target.wants/rcud-server.service
if [ -e "$root$wants" ]; then echo "enabled: yes"; else echo "enabled: no"; fi

# The unit's command, as the unit's user, on a port of the test's.
exec_start=$(sed -n 's/^ExecStart=//p' "$root/usr/lib/systemd/system/rcud-server.service")
chroot --userspec=rcud:rcud "$root" $exec_start --listen "127.0.0.1:$port" \
    --backend emu --metrics 127.0.0.1:0 >"$base/server.log" 2>&1 &
server=$!
tries=0
until bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; do
    tries=$((tries + 1))
    if [ "$tries" -gt 300 ] || ! kill -0 "$server" 2>/dev/null; then
        echo "server: not listening" && cat "$base/server.log" >&2 && exit 1
    fi
    sleep 0.1
done
# The first tenant of the example configuration.
tenant=$(sed -n 's/^\[tenants\.\(.*\)\]$/\1/p' "$root/etc/rcud/server.toml" | head -n1)
secret=$(sed -n 's/^secret = "\(.*\)"$/\1/p' "$root/etc/rcud/server.toml" | head -n1)
(umask 077 && printf '%s:%s\n' "$tenant" "$secret" >"$root/tmp/token")
status=0
chroot "$root" env -u RCUD_LIBRARY -u LD_PRELOAD -u LD_LIBRARY_PATH \
    /usr/bin/rcud run --server "127.0.0.1:$port" --token-file /tmp/token -- "$program" \
    >"$base/program.out" 2>&1 || status=$?
echo "program status: $status"
kill "$server"
wait "$server" || true

chroot "$root" dpkg --purge rcud >&2
if [ -e "$root/etc/rcud" ]; then echo "purged: no"; else echo "purged: yes"; fi
echo "override after purge: $(chroot "$root" dpkg-statoverride --list /etc/rcud/server.toml || true)"
# Last, what the program printed (ending with PASS).
cat "$base/program.out"
"#;

#[test]
fn installs_and_serves_in_a_throwaway_root() {
    let test = "installs_and_serves_in_a_throwaway_root";
    let Some(cargo_deb) = cargo_deb(test) else {
        return;
    };
    let Some(env) = setup(test) else {
        return;
    };
    // dpkg -i needs root, and the throwaway root a mount namespace.
    let probe = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {test}: `unshare --mount` is not permitted here (needs root); \
             the other package tests still check the package's files and run it extracted"
        );
        return;
    }
    let program = build(env, "k_vector_add");
    let deb = package(&cargo_deb);
    let base = tempfile::tempdir().expect("temporary directory");
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        THROWAWAY_INSTALL,
        "sh",
    ])
    .arg(deb)
    .arg(&program)
    .arg(common::free_port().to_string())
    .arg(base.path());
    let run = run_with_timeout(cmd, PACK_TIMEOUT);
    if !run.status.success() {
        run.fail("installing into the throwaway root failed", None);
    }
    let value = |key: &str| {
        run.stdout
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
            .unwrap_or_else(|| run.fail(&format!("no `{key}:` line"), None))
    };
    let user = value("user");
    assert!(
        user.starts_with("rcud:x:") && user.ends_with(":/nonexistent:/usr/sbin/nologin"),
        "the system user: {user}"
    );
    assert_eq!(value("config"), "rcud:rcud 600");
    assert_eq!(value("override"), "rcud rcud 600 /etc/rcud/server.toml");
    assert_eq!(value("enabled"), "no");
    // The installed server read the installed configuration as `rcud`, and
    // the installed client found its library and the tenant's token.
    assert_eq!(value("program status"), "0");
    // (A kernel: device_query would fail here, as cudaMemGetInfo answers
    // the tenant's 4 GiB limit and totalGlobalMem the device's 8 GiB.)
    run.assert_pass(None);
    assert_eq!(value("purged"), "yes");
    assert_eq!(value("override after purge"), "");
}
