//! `rcud-server --metrics`: scraped while a real CUDA program runs under
//! `rcud run --server`, with process isolation (the agent process counts in
//! the listener's shared table), and after it.

mod common;

use std::time::{Duration, Instant};

use common::{build, free_port, rcud_run_within, sample, scrape, setup, Server};

const TCP_RECEIVED: &str = "rcud_transport_bytes_total{transport=\"tcp\",direction=\"received\"}";
const TCP_SENT: &str = "rcud_transport_bytes_total{transport=\"tcp\",direction=\"sent\"}";

#[test]
fn metrics_move_during_and_after_a_cuda_program() {
    let Some(env) = setup("metrics_move_during_and_after_a_cuda_program") else {
        return;
    };
    let bin = build(env, "k_stress");
    let metrics = format!("127.0.0.1:{}", free_port());
    let server = Server::start_with(env, &["--metrics", &metrics]);
    let before = scrape(&metrics);
    assert_eq!(sample(&before, "rcud_clients_connected"), 0.0);
    assert_eq!(sample(&before, "rcud_kernels_total"), 0.0);

    let run = std::thread::scope(|scope| {
        let program = scope.spawn(|| {
            rcud_run_within(
                env,
                Some(&server),
                &bin,
                &["300", "11"],
                Duration::from_secs(300),
            )
        });
        // Mid-run: the program's connection is counted, with its agent
        // process, and its traffic grows while it runs.
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut seen: Option<String> = None;
        while !program.is_finished() && Instant::now() < deadline {
            let text = scrape(&metrics);
            if sample(&text, "rcud_clients_connected") >= 1.0
                && sample(&text, "rcud_kernels_total") >= 1.0
            {
                seen = Some(text);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let run = program.join().expect("the program's thread");
        (run, seen)
    });
    let (run, during) = run;
    run.assert_pass(Some(&server));
    let during = during.unwrap_or_else(|| {
        panic!(
            "no scrape saw the program connected and running kernels\n{}",
            server.log_text()
        )
    });
    assert!(sample(&during, "rcud_agent_processes") >= 1.0);
    assert!(sample(&during, TCP_RECEIVED) > 0.0);
    assert!(sample(&during, "rcud_call_latency_seconds_count") > 0.0);

    // After: the client is gone, everything it did is counted.
    let deadline = Instant::now() + Duration::from_secs(20);
    let after = loop {
        let text = scrape(&metrics);
        if sample(&text, "rcud_clients_connected") == 0.0 || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(sample(&after, "rcud_clients_connected"), 0.0);
    assert_eq!(sample(&after, "rcud_agent_processes"), 0.0);
    assert_eq!(sample(&after, "rcud_admissions_total{tenant=\"-\"}"), 1.0);
    // k_stress copies megabytes each way and launches a kernel per round.
    assert!(sample(&after, TCP_RECEIVED) > sample(&during, TCP_RECEIVED));
    assert!(
        sample(&after, TCP_SENT) > 1e6,
        "{}",
        sample(&after, TCP_SENT)
    );
    let kernels = sample(&after, "rcud_kernels_total");
    assert!(kernels >= 100.0, "{kernels}");
    assert!(sample(&after, "rcud_kernel_time_seconds_total") > 0.0);
    let calls = sample(&after, "rcud_call_latency_seconds_count");
    assert!(calls > sample(&during, "rcud_call_latency_seconds_count"));
    assert_eq!(
        sample(&after, "rcud_call_latency_seconds_bucket{le=\"+Inf\"}"),
        calls
    );
    assert!(sample(&after, "rcud_call_latency_seconds_sum") > 0.0);
}
