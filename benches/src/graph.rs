//! `rcud bench graph`: the same empty kernels launched one by one and as
//! one captured graph, in one run. A graph launch is one message whatever
//! its size, so the time `cudaGraphLaunch` takes to return does not grow
//! with the node count; the kernels themselves still run one after another
//! on the device. Measured through the client library's C functions in a
//! child process per transport (`rcud bench graph-point`), as `launch` does.

use std::ffi::{c_int, c_void};
use std::process::ExitCode;
use std::time::Instant;

use libloading::Library;
use rcud_transport::bootstrap::TransportKind;
use serde::{Deserialize, Serialize};

use super::launch::{check, RuntimeApi};
use super::output::{emit, Table};
use super::{
    load_client_library, point_command, progress, run_point, BenchArgs, BenchResult, Setup,
};

/// Rounds per measurement; the fastest counts.
const ROUNDS: u32 = 3;

/// Arguments of `rcud bench graph` and its hidden `graph-point`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct GraphArgs {
    /// Kernels per graph, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [10u32, 100, 1000])]
    nodes: Vec<u32>,
    /// Launches of each graph (and rounds of one-by-one launches) to time.
    #[arg(long, default_value_t = 20)]
    launches: u32,
}

/// One node count, as one child measured it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct GraphPoint {
    nodes: u32,
    /// Time for `nodes` kernels launched one by one and a synchronize, µs.
    one_by_one_us: f64,
    /// Time for one graph launch of them and a synchronize, µs.
    graph_us: f64,
    /// Time `cudaGraphLaunch` took to return, µs.
    graph_launch_call_us: f64,
}

#[derive(Debug, Serialize)]
struct GraphRow {
    transport: String,
    #[serde(flatten)]
    point: GraphPoint,
    /// One by one over graph: how much faster the graph is.
    speedup: f64,
}

pub(crate) fn run(
    setup: &Setup,
    transports: &[TransportKind],
    args: &GraphArgs,
    bench: &BenchArgs,
) -> BenchResult<ExitCode> {
    let bar = progress(transports.len() as u64, bench.format);
    let nodes: Vec<String> = args.nodes.iter().map(u32::to_string).collect();
    let mut rows = Vec::new();
    for &kind in transports {
        bar.set_message(kind.to_string());
        let mut cmd = point_command(Some(&setup.servers), bench.pin, kind)?;
        cmd.args(["graph-point", "--nodes", &nodes.join(",")])
            .args(["--launches", &args.launches.to_string()]);
        let points: Vec<GraphPoint> = run_point(cmd, &kind.to_string())?;
        for point in points {
            rows.push(GraphRow {
                transport: kind.to_string(),
                speedup: point.one_by_one_us / point.graph_us,
                point,
            });
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    emit(bench.format, &rows, || {
        let mut t = Table::new(&[
            "transport",
            "kernels",
            "one by one + sync (µs)",
            "graph + sync (µs)",
            "speedup",
            "cudaGraphLaunch returns (µs)",
        ]);
        for r in &rows {
            t.push(vec![
                r.transport.clone(),
                r.point.nodes.to_string(),
                format!("{:.0}", r.point.one_by_one_us),
                format!("{:.0}", r.point.graph_us),
                format!("{:.2}", r.speedup),
                format!("{:.1}", r.point.graph_launch_call_us),
            ]);
        }
        t
    })?;
    Ok(ExitCode::SUCCESS)
}

type StreamFn = unsafe extern "C" fn(*mut c_void) -> c_int;

/// The runtime API's stream and graph functions.
struct GraphApi {
    kernels: RuntimeApi,
    stream: *mut c_void,
    begin: unsafe extern "C" fn(*mut c_void, c_int) -> c_int,
    end: unsafe extern "C" fn(*mut c_void, *mut *mut c_void) -> c_int,
    instantiate: unsafe extern "C" fn(*mut *mut c_void, *mut c_void, u64) -> c_int,
    launch: unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int,
    synchronize: StreamFn,
    exec_destroy: StreamFn,
    destroy: StreamFn,
}

const API: &str = "runtime API";

impl GraphApi {
    fn new(lib: &Library) -> BenchResult<Self> {
        let kernels = RuntimeApi::new(lib)?;
        // SAFETY: the library's functions, with cuda_runtime_api.h's
        // signatures, and a valid output pointer.
        unsafe {
            let create: libloading::Symbol<unsafe extern "C" fn(*mut *mut c_void) -> c_int> =
                lib.get(b"cudaStreamCreate\0")?;
            let mut stream = std::ptr::null_mut();
            check(API, "cudaStreamCreate", create(&mut stream))?;
            Ok(Self {
                kernels,
                stream,
                begin: *lib.get(b"cudaStreamBeginCapture\0")?,
                end: *lib.get(b"cudaStreamEndCapture\0")?,
                instantiate: *lib.get(b"cudaGraphInstantiate\0")?,
                launch: *lib.get(b"cudaGraphLaunch\0")?,
                synchronize: *lib.get(b"cudaStreamSynchronize\0")?,
                exec_destroy: *lib.get(b"cudaGraphExecDestroy\0")?,
                destroy: *lib.get(b"cudaGraphDestroy\0")?,
            })
        }
    }

    fn synchronize(&self) -> BenchResult<()> {
        // SAFETY: a stream of this library.
        check(API, "cudaStreamSynchronize", unsafe {
            (self.synchronize)(self.stream)
        })
    }

    fn one_by_one(&self, nodes: u32) -> BenchResult<()> {
        for _ in 0..nodes {
            self.kernels.launch_on(self.stream)?;
        }
        self.synchronize()
    }

    /// A graph of `nodes` kernels in a chain, captured from the stream.
    fn capture(&self, nodes: u32) -> BenchResult<(*mut c_void, *mut c_void)> {
        let (mut graph, mut exec) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: the library's functions on its own stream and handles,
        // with valid output pointers.
        unsafe {
            check(API, "cudaStreamBeginCapture", (self.begin)(self.stream, 0))?;
            for _ in 0..nodes {
                self.kernels.launch_on(self.stream)?;
            }
            check(
                API,
                "cudaStreamEndCapture",
                (self.end)(self.stream, &mut graph),
            )?;
            check(
                API,
                "cudaGraphInstantiate",
                (self.instantiate)(&mut exec, graph, 0),
            )?;
        }
        Ok((graph, exec))
    }
}

/// `rcud bench graph-point`: measures in this process and prints JSON.
pub(crate) fn point(setup: &Setup, kind: TransportKind, args: &GraphArgs) -> BenchResult<ExitCode> {
    let lib = load_client_library(setup, kind)?;
    let api = GraphApi::new(&lib)?;
    api.one_by_one(1)?;
    let launches = args.launches.max(1);
    let mut points = Vec::new();
    for &nodes in &args.nodes {
        let (graph, exec) = api.capture(nodes)?;
        let (mut one, mut whole, mut call) = (f64::MAX, f64::MAX, f64::MAX);
        for _ in 0..ROUNDS {
            let start = Instant::now();
            for _ in 0..launches {
                api.one_by_one(nodes)?;
            }
            one = one.min(start.elapsed().as_secs_f64() / f64::from(launches));
            let (mut total, mut calls) = (0.0, 0.0);
            for _ in 0..launches {
                let start = Instant::now();
                // SAFETY: an executable graph of this library, on its stream.
                check(API, "cudaGraphLaunch", unsafe {
                    (api.launch)(exec, api.stream)
                })?;
                calls += start.elapsed().as_secs_f64();
                api.synchronize()?;
                total += start.elapsed().as_secs_f64();
            }
            whole = whole.min(total / f64::from(launches));
            call = call.min(calls / f64::from(launches));
        }
        // SAFETY: handles made above, destroyed once.
        unsafe {
            check(API, "cudaGraphExecDestroy", (api.exec_destroy)(exec))?;
            check(API, "cudaGraphDestroy", (api.destroy)(graph))?;
        }
        points.push(GraphPoint {
            nodes,
            one_by_one_us: one * 1e6,
            graph_us: whole * 1e6,
            graph_launch_call_us: call * 1e6,
        });
    }
    println!("{}", serde_json::to_string(&points)?);
    Ok(ExitCode::SUCCESS)
}
