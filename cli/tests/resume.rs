//! Sessions that outlive the network, end to end: the unmodified CUDA
//! programs of `tests/cuda/` run against an `rcud-server` through a proxy
//! that resets their connections at several points (the handshake, early
//! calls and module uploads, mid-payload both ways), and must pass as if
//! nothing happened. An outage longer than the budget gives the clean
//! error, promptly. Over the RDMA modules the soft provider breaks the
//! queue pairs instead (`RCUD_SOFT_RDMA_FAULT`).
//!
//! Needs `nvcc` and the workspace built, as `e2e.rs` says.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{run_with_timeout, setup, Env, Run, Server, PROGRAMS};
use rcud_transport::fault_proxy::{Action, Direction, Fault, FaultProxy};

const TIMEOUT: Duration = Duration::from_secs(180);

/// Cuts at several points, in order: in the handshake, among the first
/// calls (a module upload), and in the payloads of either direction. A
/// short program meets only the first few.
fn arm_several_cuts(proxy: &FaultProxy) {
    for (direction, after) in [
        (Direction::Down, 40),
        (Direction::Up, 400),
        (Direction::Down, 3_000),
        (Direction::Up, 20_000),
        (Direction::Up, 400_000),
        (Direction::Down, 3_000_000),
    ] {
        proxy.arm(Fault {
            direction,
            after,
            action: Action::Cut,
        });
    }
}

fn run_through(
    env: &Env,
    addr: SocketAddr,
    bin: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> Run {
    let mut cmd = Command::new(&env.rcud);
    cmd.env_remove("LD_PRELOAD")
        .env_remove("RCUD_SERVERS")
        .envs(envs.iter().copied())
        .arg("run")
        .arg("--server")
        .arg(addr.to_string())
        .arg("--")
        .arg(bin)
        .args(args);
    run_with_timeout(cmd, TIMEOUT)
}

/// Runs each program through a fresh proxy with several cuts armed.
fn programs_through_cuts(env: &Env, server: &Server, programs: &[(&str, &[&str])], cudart: &str) {
    let mut total_cuts = 0;
    for &(name, args) in programs {
        let bin = common::build_program(env, name, cudart);
        let proxy = FaultProxy::start(server.addr).expect("start the proxy");
        arm_several_cuts(&proxy);
        let run = run_through(env, proxy.addr(), &bin, args, &[]);
        run.assert_pass(Some(server));
        let cuts = proxy.cuts();
        // The smallest programs end before the later cuts.
        assert!(cuts >= 1, "{name}: no cut struck");
        total_cuts += cuts;
        eprintln!("{name} {args:?} ({cudart}): passed through {cuts} cuts");
    }
    eprintln!("{} programs, {total_cuts} cuts", programs.len());
    assert!(
        total_cuts >= 3 * programs.len() as u64,
        "only {total_cuts} cuts over {} programs",
        programs.len()
    );
}

fn proxied_programs() -> Vec<(&'static str, &'static [&'static str])> {
    PROGRAMS
        .iter()
        .map(|&(name, args, _)| (name, args))
        .collect()
}

#[test]
fn every_program_rides_out_cuts_with_agent_processes() {
    let Some(env) = setup("every_program_rides_out_cuts_with_agent_processes") else {
        return;
    };
    // Agent processes are the server's default; two GPUs for k_multi.
    let server = Server::start_with(env, &["--emu-gpus", "2"]);
    programs_through_cuts(env, &server, &proxied_programs(), "shared");
}

#[test]
fn programs_ride_out_cuts_with_agent_threads_and_the_static_runtime() {
    let Some(env) = setup("programs_ride_out_cuts_with_agent_threads_and_the_static_runtime")
    else {
        return;
    };
    let server = Server::start_with(env, &["--isolation", "thread", "--emu-gpus", "2"]);
    let some: &[(&str, &[&str])] = &[
        ("memcpy", &[]),
        ("k_vector_add", &[]),
        ("k_streams", &[]),
        ("k_graphs", &[]),
        ("k_multi", &[]),
        ("bandwidth", &["4"]),
    ];
    programs_through_cuts(env, &server, some, "shared");
    programs_through_cuts(env, &server, some, "static");
}

#[test]
fn an_outage_past_the_budget_fails_with_a_clear_error_and_no_hang() {
    let Some(env) = setup("an_outage_past_the_budget_fails_with_a_clear_error_and_no_hang") else {
        return;
    };
    // Agent processes (the default), a short grace period, and metrics to
    // watch the session end.
    let metrics = format!("127.0.0.1:{}", common::free_port());
    let server = Server::start_with(env, &["--resume-grace", "1", "--metrics", &metrics]);
    let bin = common::build_program(env, "k_stress", "shared");
    let proxy = FaultProxy::start(server.addr).expect("start the proxy");
    // Well inside the program's stream of copies, the route goes away for
    // longer than the client waits.
    proxy.arm(Fault {
        direction: Direction::Up,
        after: 300_000,
        action: Action::Outage(Duration::from_secs(60)),
    });
    let started = Instant::now();
    let run = run_through(
        env,
        proxy.addr(),
        &bin,
        &["100", "7"],
        &[("RCUD_OUTAGE_BUDGET", "0.5")],
    );
    let took = started.elapsed();
    assert_eq!(proxy.cuts(), 1, "{}", run.transcript());
    assert!(!run.status.success(), "{}", run.transcript());
    assert!(
        run.stderr.contains("RCUD_OUTAGE_BUDGET") && run.stderr.contains("session lost"),
        "no clear message:\n{}",
        run.transcript()
    );
    assert!(
        run.stdout.contains("cudaErrorDevicesUnavailable")
            || run.stderr.contains("cudaErrorDevicesUnavailable"),
        "{}",
        run.transcript()
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
    // The client never comes back: its agent process frees everything once
    // the grace period is over.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = common::scrape(&metrics);
        let agents = common::sample(&text, "rcud_agent_processes");
        let expired = common::sample(&text, "rcud_sessions_total{event=\"expired\"}");
        if agents == 0.0 && expired == 1.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the session was not freed:\n{text}\n{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn programs_ride_out_broken_queue_pairs_over_csr_and_msr() {
    let Some(env) = setup("programs_ride_out_broken_queue_pairs_over_csr_and_msr") else {
        return;
    };
    let metrics = format!("127.0.0.1:{}", common::free_port());
    let server = Server::start_with(env, &["--metrics", &metrics]);
    let mut resumed_before = 0;
    for transport in ["csr", "msr"] {
        for (name, args) in [("memcpy", &[][..]), ("k_stress", &["100", "7"][..])] {
            let bin = common::build_program(env, name, "shared");
            for fault in ["qp-fatal-after-sends:25", "port-error-after-sends:200"] {
                let run = run_through(
                    env,
                    server.addr,
                    &bin,
                    args,
                    &[
                        ("RCUD_TRANSPORT", transport),
                        ("RCUD_SOFT_RDMA_FAULT", fault),
                    ],
                );
                run.assert_pass(Some(&server));
                let resumed = server.log_text().matches("session resumed").count();
                assert!(
                    resumed > resumed_before,
                    "{name} over {transport} with {fault}: no session was resumed\n{}",
                    server.log_text()
                );
                resumed_before = resumed;
                eprintln!("{name} over {transport} with {fault}: passed");
            }
        }
    }
    // Every break was ridden out, and the metrics say so.
    let text = common::scrape(&metrics);
    let count =
        |event: &str| common::sample(&text, &format!("rcud_sessions_total{{event=\"{event}\"}}"));
    assert_eq!(count("resumed"), resumed_before as f64, "{text}");
    assert_eq!(count("interrupted"), count("resumed"), "{text}");
    assert_eq!(count("expired"), 0.0, "{text}");
}
