//! `rcud bench resume`: what sessions that outlive the network cost when
//! nothing fails. The same calls go to two servers of this process, one
//! that keeps sessions (sequence numbers checked, replies retained until
//! acknowledged) and one that does not, interleaved so both see the same
//! load; the ratio is the overhead.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use rcud_client::security::Security;
use rcud_client::session::{Completion, HostDst, Session};
use rcud_proto::ops::req;
use rcud_server::backend::{BackendKind, EmuSettings};
use rcud_server::isolation::Limits;
use rcud_server::{select_backend, Server, ServerHandle};
use rcud_transport::bootstrap::TransportKind;
use serde::Serialize;

use super::output::{emit, Format, Table};
use super::{progress, BenchResult};

#[derive(Debug, clap::Args)]
pub(crate) struct ResumeArgs {
    /// Rounds of each workload (interleaved between the two servers).
    #[arg(long, default_value_t = 300)]
    rounds: u32,
}

#[derive(Debug, Serialize)]
struct ResumeRow {
    transport: String,
    workload: &'static str,
    /// Microseconds per round with resumable sessions.
    resumable_us: f64,
    /// Microseconds per round without.
    plain_us: f64,
    /// resumable over plain.
    ratio: f64,
}

/// A workload: one round of calls on a session attached to a GPU.
type Work = fn(&mut Session, u64) -> BenchResult<()>;

const WORKLOADS: [(&str, Work); 4] = [
    ("sync 4 B copy", sync_small),
    ("batch of 64 launches-sized ops", batch_small),
    ("async 128 KiB copy back (kept whole)", kept_reply),
    ("sync 8 MiB copy back", large_reply),
];

const BUFFER: u64 = 8 << 20;

fn server(grace: Duration) -> BenchResult<ServerHandle> {
    let emu = EmuSettings {
        gpus: 1,
        memory: 256 << 20,
        ..EmuSettings::default()
    };
    let backend = select_backend(BackendKind::Emu, &emu)?;
    Ok(Server::bind("127.0.0.1:0", backend)?
        .with_limits(Limits {
            resume_grace: grace,
            ..Limits::default()
        })
        .spawn()?)
}

fn session(
    server: &ServerHandle,
    kind: TransportKind,
    budget: Duration,
) -> BenchResult<(Session, u64)> {
    session_at(server.addr(), kind, budget)
}

fn session_at(
    addr: std::net::SocketAddr,
    kind: TransportKind,
    budget: Duration,
) -> BenchResult<(Session, u64)> {
    let mut s = Session::connect_resumable(
        &addr.to_string(),
        "rcud bench resume",
        kind,
        &Security::default(),
        budget,
    )?;
    ok(s.call(&req::Attach { gpu: 0, window: 0 }, &[], &mut [])?)?;
    let ptr = ok(s.call(&req::Malloc { size: BUFFER }, &[], &mut [])?)?.ptr;
    Ok((s, ptr))
}

pub(crate) fn run(
    args: &ResumeArgs,
    transports: &[TransportKind],
    format: Format,
) -> BenchResult<ExitCode> {
    let kept = server(rcud_server::resume::DEFAULT_RESUME_GRACE)?;
    let plain = server(Duration::ZERO)?;
    let bar = progress(
        (transports.len() * WORKLOADS.len()) as u64 * u64::from(args.rounds),
        format,
    );
    let mut rows = Vec::new();
    for &kind in transports {
        let (mut a, a_ptr) = session(&kept, kind, Duration::from_secs(3))?;
        let (mut b, b_ptr) = session(&plain, kind, Duration::ZERO)?;
        if !a.resumable() || b.resumable() {
            return Err("the two sessions differ in more than resumption".into());
        }
        for (workload, work) in WORKLOADS {
            bar.set_message(format!("{kind}: {workload}"));
            let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
            for round in 0..=args.rounds {
                // Each goes first on every other round.
                let first_a = round % 2 == 0;
                let t0 = Instant::now();
                if first_a {
                    work(&mut a, a_ptr)?;
                } else {
                    work(&mut b, b_ptr)?;
                }
                let t1 = Instant::now();
                if first_a {
                    work(&mut b, b_ptr)?;
                } else {
                    work(&mut a, a_ptr)?;
                }
                let t2 = Instant::now();
                let (da, db) = if first_a {
                    (t1 - t0, t2 - t1)
                } else {
                    (t2 - t1, t1 - t0)
                };
                // The first round warms up.
                if round > 0 {
                    ta += da;
                    tb += db;
                    bar.inc(1);
                }
            }
            let per = |t: Duration| t.as_secs_f64() * 1e6 / f64::from(args.rounds.max(1));
            rows.push(ResumeRow {
                transport: kind.to_string(),
                workload,
                resumable_us: per(ta),
                plain_us: per(tb),
                ratio: ta.as_secs_f64() / tb.as_secs_f64().max(1e-12),
            });
        }
        // How long a call takes that finds its connection reset: it
        // reconnects, resumes and runs; beside the same call through the
        // same proxy without a cut. The proxy sits on TCP only (the RDMA
        // modules' queue pairs bypass it).
        if kind != TransportKind::Tcp {
            continue;
        }
        let proxy = rcud_transport::fault_proxy::FaultProxy::start(kept.addr())?;
        let (mut c, c_ptr) = session_at(proxy.addr(), kind, Duration::from_secs(3))?;
        let cuts = args.rounds.clamp(1, 50);
        let (mut tc, mut tn) = (Duration::ZERO, Duration::ZERO);
        for round in 0..=cuts {
            let t0 = Instant::now();
            sync_small(&mut c, c_ptr)?;
            let t1 = Instant::now();
            proxy.cut_now();
            // The proxy's pumps notice the cut within their poll interval.
            std::thread::sleep(Duration::from_millis(30));
            let t2 = Instant::now();
            sync_small(&mut c, c_ptr)?;
            let t3 = Instant::now();
            if round > 0 {
                tn += t1 - t0;
                tc += t3 - t2;
            }
        }
        let per = |t: Duration| t.as_secs_f64() * 1e6 / f64::from(cuts);
        rows.push(ResumeRow {
            transport: kind.to_string(),
            workload: "sync 4 B copy via a proxy: after a cut / without",
            resumable_us: per(tc),
            plain_us: per(tn),
            ratio: tc.as_secs_f64() / tn.as_secs_f64().max(1e-12),
        });
    }
    bar.finish_and_clear();
    emit(format, &rows, || {
        let mut t = Table::new(&["transport", "workload", "resumable µs", "plain µs", "ratio"]);
        for r in &rows {
            t.push(vec![
                r.transport.clone(),
                r.workload.into(),
                format!("{:.1}", r.resumable_us),
                format!("{:.1}", r.plain_us),
                format!("{:.3}", r.ratio),
            ]);
        }
        t
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A CUDA failure the server reported, as a benchmark error.
fn ok<T>(r: Result<T, rcud_proto::ops::Failure>) -> BenchResult<T> {
    r.map_err(|f| f.to_string().into())
}

fn sync_small(s: &mut Session, ptr: u64) -> BenchResult<()> {
    let mut word = [0u8; 4];
    ok(s.call(&req::MemcpyDtoH { src: ptr, len: 4 }, &[], &mut word)?)?;
    Ok(())
}

fn batch_small(s: &mut Session, ptr: u64) -> BenchResult<()> {
    for i in 0..64u64 {
        s.enqueue(
            &req::Memset {
                dst: ptr + i * 64,
                value: i as u8,
                len: 64,
            },
            &[],
            Completion::Status,
        );
    }
    match s.flush()?.first_error {
        None => Ok(()),
        Some(f) => Err(f.to_string().into()),
    }
}

struct Sink(Vec<u8>);

impl HostDst for Sink {
    fn bytes(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

fn kept_reply(s: &mut Session, ptr: u64) -> BenchResult<()> {
    let len = 128 << 10;
    s.enqueue(
        &req::MemcpyDtoH { src: ptr, len },
        &[],
        Completion::ToHost(Box::new(Sink(vec![0; len as usize]))),
    );
    s.expect_reply_bytes(len);
    match s.flush()?.first_error {
        None => Ok(()),
        Some(f) => Err(f.to_string().into()),
    }
}

fn large_reply(s: &mut Session, ptr: u64) -> BenchResult<()> {
    let mut out = vec![0u8; BUFFER as usize];
    ok(s.call(
        &req::MemcpyDtoH {
            src: ptr,
            len: BUFFER,
        },
        &[],
        &mut out,
    )?)?;
    Ok(())
}
