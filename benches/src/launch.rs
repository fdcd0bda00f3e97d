//! `rcud bench launch`: asynchronous launches of an empty kernel per second,
//! through the runtime API (`cudaLaunchKernel`, the path of `<<<...>>>`) and
//! the driver API (`cuLaunchKernel`), each as an application calls it: the
//! C functions of rcud's client library, loaded into a child process per
//! transport (`rcud bench launch-point`), whose environment names the server
//! and transport as `rcud run` would.
//!
//! The kernel is a few lines of PTX wrapped in a fat binary built here, so the
//! benchmark needs no CUDA compiler.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::process::ExitCode;
use std::time::Instant;

use libloading::Library;
use rcud_transport::bootstrap::TransportKind;
use serde::{Deserialize, Serialize};

use super::output::{emit, Table};
use super::{
    load_client_library, point_command, progress, run_point, BenchArgs, BenchResult, Setup,
};

const KERNEL: &CStr = c"rcud_bench_empty";

const PTX: &str = "\
.version 8.0
.target sm_80
.address_size 64

.visible .entry rcud_bench_empty()
{
\tret;
}
";

/// A fat binary holding `PTX` for compute capability 8.0.
fn fatbin() -> Vec<u8> {
    rcud_fatbin::image::wrap_ptx(PTX.as_bytes())
}

/// Rounds per measurement; the fastest counts.
const ROUNDS: u32 = 3;

/// Which C API launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Api {
    /// `cudaLaunchKernel` after nvcc-style registration.
    Runtime,
    /// `cuLaunchKernel` of a module loaded with `cuModuleLoadData`.
    Driver,
}

impl std::fmt::Display for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Api::Runtime => "runtime",
            Api::Driver => "driver",
        })
    }
}

/// What one child measures.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Point {
    asynchronous: f64,
    synchronized: f64,
}

#[derive(Debug, Serialize)]
struct LaunchRow {
    transport: String,
    api: String,
    mode: String,
    launches_per_s: f64,
    /// This API's rate over the runtime API's, in the same run.
    of_runtime: Option<f64>,
}

/// Arguments of the hidden `launch-point` subcommand.
#[derive(Debug, clap::Args)]
pub(crate) struct PointArgs {
    #[arg(long, value_enum)]
    api: Api,
    #[arg(long)]
    launches: u32,
    #[arg(long)]
    sync_every: u32,
}

pub(crate) fn run(
    setup: &Setup,
    transports: &[TransportKind],
    apis: &[Api],
    launches: u32,
    sync_every: u32,
    bench: &BenchArgs,
) -> BenchResult<ExitCode> {
    let bar = progress((transports.len() * apis.len()) as u64, bench.format);
    let mut rows = Vec::new();
    for &kind in transports {
        let mut runtime_rates = None;
        for &api in apis {
            bar.set_message(format!("{kind} {api} API"));
            let mut cmd = point_command(Some(&setup.servers), bench.pin, kind)?;
            cmd.args(["launch-point", "--api", &api.to_string()])
                .args(["--launches", &launches.to_string()])
                .args(["--sync-every", &sync_every.to_string()]);
            let p: Point = run_point(cmd, &format!("{kind} {api} API"))?;
            let of_runtime = |rate: f64, base: Option<f64>| base.map(|b| rate / b);
            let (base_async, base_sync) = match runtime_rates {
                Some((a, s)) => (Some(a), Some(s)),
                None => (None, None),
            };
            rows.push(LaunchRow {
                transport: kind.to_string(),
                api: api.to_string(),
                mode: "asynchronous".into(),
                launches_per_s: p.asynchronous,
                of_runtime: of_runtime(p.asynchronous, base_async),
            });
            rows.push(LaunchRow {
                transport: kind.to_string(),
                api: api.to_string(),
                mode: format!("synchronize every {sync_every}"),
                launches_per_s: p.synchronized,
                of_runtime: of_runtime(p.synchronized, base_sync),
            });
            if api == Api::Runtime {
                runtime_rates = Some((p.asynchronous, p.synchronized));
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    emit(bench.format, &rows, || {
        let mut t = Table::new(&[
            "transport",
            "API",
            "empty kernel <<<1,1>>>",
            "launches/s",
            "of runtime API",
        ]);
        for r in &rows {
            t.push(vec![
                r.transport.clone(),
                r.api.clone(),
                r.mode.clone(),
                format!("{:.0}", r.launches_per_s),
                r.of_runtime.map_or(String::new(), |x| format!("{x:.2}")),
            ]);
        }
        t
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `rcud bench launch-point`: measures one API of the client library in
/// this process and prints the rates as JSON.
pub(crate) fn point(setup: &Setup, kind: TransportKind, args: &PointArgs) -> BenchResult<ExitCode> {
    let lib = load_client_library(setup, kind)?;
    let launcher: Box<dyn Launcher> = match args.api {
        Api::Runtime => Box::new(RuntimeApi::new(&lib)?),
        Api::Driver => Box::new(DriverApi::new(&lib)?),
    };
    launcher.launch()?;
    launcher.synchronize()?;
    let rate = |every: u32| -> BenchResult<f64> {
        let start = Instant::now();
        for i in 1..=args.launches {
            launcher.launch()?;
            if every > 0 && i % every == 0 {
                launcher.synchronize()?;
            }
        }
        launcher.synchronize()?;
        Ok(f64::from(args.launches) / start.elapsed().as_secs_f64())
    };
    // The best of a few rounds: on a shared machine, the slower rounds
    // measure the neighbours.
    let best = |every: u32| -> BenchResult<f64> {
        let mut top: f64 = 0.0;
        for _ in 0..ROUNDS {
            top = top.max(rate(every)?);
        }
        Ok(top)
    };
    let point = Point {
        asynchronous: best(0)?,
        synchronized: best(args.sync_every)?,
    };
    println!("{}", serde_json::to_string(&point)?);
    Ok(ExitCode::SUCCESS)
}

trait Launcher {
    fn launch(&self) -> BenchResult<()>;
    fn synchronize(&self) -> BenchResult<()>;
}

pub(super) fn check(api: &str, what: &str, status: c_int) -> BenchResult<()> {
    match status {
        0 => Ok(()),
        e => Err(format!("{api}: {what} failed with error {e}").into()),
    }
}

/// `dim3`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Dim3 {
    x: c_uint,
    y: c_uint,
    z: c_uint,
}

type RegisterFatBinary = unsafe extern "C" fn(*const c_void) -> *mut *mut c_void;
type RegisterFunction = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_char,
    *const c_char,
    *const c_char,
    c_int,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    *mut c_int,
);
type LaunchKernel =
    unsafe extern "C" fn(*const c_void, Dim3, Dim3, *mut *mut c_void, usize, *mut c_void) -> c_int;
type NoArgs = unsafe extern "C" fn() -> c_int;

/// The runtime API, registered the way nvcc's start-up code registers a
/// program's kernels.
pub(super) struct RuntimeApi {
    launch: LaunchKernel,
    synchronize: NoArgs,
    stub: *const c_void,
}

/// `__fatBinC_Wrapper_t`.
#[repr(C)]
struct Wrapper {
    magic: u32,
    version: u32,
    data: *const u8,
    filename: *const c_void,
}

impl RuntimeApi {
    pub(super) fn new(lib: &Library) -> BenchResult<Self> {
        // The registered fat binary and its wrapper live as long as the
        // process, as a program's do.
        let image: &'static [u8] = Box::leak(fatbin().into_boxed_slice());
        let wrapper: &'static Wrapper = Box::leak(Box::new(Wrapper {
            magic: rcud_fatbin::WRAPPER_MAGIC,
            version: 1,
            data: image.as_ptr(),
            filename: std::ptr::null(),
        }));
        static STUB: u8 = 0;
        let stub = std::ptr::addr_of!(STUB) as *const c_void;
        // SAFETY: the library's functions, with the signatures nvcc's
        // generated code calls them with.
        unsafe {
            let register: libloading::Symbol<RegisterFatBinary> =
                lib.get(b"__cudaRegisterFatBinary\0")?;
            let function: libloading::Symbol<RegisterFunction> =
                lib.get(b"__cudaRegisterFunction\0")?;
            let end: libloading::Symbol<unsafe extern "C" fn(*mut *mut c_void)> =
                lib.get(b"__cudaRegisterFatBinaryEnd\0")?;
            let handle = register(wrapper as *const Wrapper as *const c_void);
            let null = std::ptr::null_mut();
            function(
                handle,
                stub as *const c_char,
                KERNEL.as_ptr(),
                KERNEL.as_ptr(),
                -1,
                null,
                null,
                null,
                null,
                std::ptr::null_mut(),
            );
            end(handle);
            Ok(Self {
                launch: *lib.get::<LaunchKernel>(b"cudaLaunchKernel\0")?,
                synchronize: *lib.get::<NoArgs>(b"cudaDeviceSynchronize\0")?,
                stub,
            })
        }
    }
}

impl RuntimeApi {
    /// Launches the empty kernel on `stream`.
    pub(super) fn launch_on(&self, stream: *mut c_void) -> BenchResult<()> {
        let one = Dim3 { x: 1, y: 1, z: 1 };
        // SAFETY: a registered kernel without parameters, on a stream of
        // this library or the default stream.
        let status = unsafe { (self.launch)(self.stub, one, one, std::ptr::null_mut(), 0, stream) };
        check("runtime API", "cudaLaunchKernel", status)
    }
}

impl Launcher for RuntimeApi {
    fn launch(&self) -> BenchResult<()> {
        self.launch_on(std::ptr::null_mut())
    }

    fn synchronize(&self) -> BenchResult<()> {
        // SAFETY: no arguments.
        check("runtime API", "cudaDeviceSynchronize", unsafe {
            (self.synchronize)()
        })
    }
}

type CuLaunchKernel = unsafe extern "C" fn(
    u64,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> c_int;

/// The driver API: a module loaded from the fat binary in the device's
/// primary context.
struct DriverApi {
    launch: CuLaunchKernel,
    synchronize: NoArgs,
    function: u64,
}

impl DriverApi {
    fn new(lib: &Library) -> BenchResult<Self> {
        let image = fatbin();
        let api = "driver API";
        // SAFETY: the library's functions, with cuda.h's signatures, and
        // valid output pointers.
        unsafe {
            let init: libloading::Symbol<unsafe extern "C" fn(c_uint) -> c_int> =
                lib.get(b"cuInit\0")?;
            check(api, "cuInit", init(0))?;
            let retain: libloading::Symbol<unsafe extern "C" fn(*mut u64, c_int) -> c_int> =
                lib.get(b"cuDevicePrimaryCtxRetain\0")?;
            let mut ctx = 0;
            check(api, "cuDevicePrimaryCtxRetain", retain(&mut ctx, 0))?;
            let set: libloading::Symbol<unsafe extern "C" fn(u64) -> c_int> =
                lib.get(b"cuCtxSetCurrent\0")?;
            check(api, "cuCtxSetCurrent", set(ctx))?;
            let load: libloading::Symbol<unsafe extern "C" fn(*mut u64, *const c_void) -> c_int> =
                lib.get(b"cuModuleLoadData\0")?;
            let mut module = 0;
            check(
                api,
                "cuModuleLoadData",
                load(&mut module, image.as_ptr() as *const c_void),
            )?;
            let get: libloading::Symbol<
                unsafe extern "C" fn(*mut u64, u64, *const c_char) -> c_int,
            > = lib.get(b"cuModuleGetFunction\0")?;
            let mut function = 0;
            check(
                api,
                "cuModuleGetFunction",
                get(&mut function, module, KERNEL.as_ptr()),
            )?;
            Ok(Self {
                launch: *lib.get::<CuLaunchKernel>(b"cuLaunchKernel\0")?,
                synchronize: *lib.get::<NoArgs>(b"cuCtxSynchronize\0")?,
                function,
            })
        }
    }
}

impl Launcher for DriverApi {
    fn launch(&self) -> BenchResult<()> {
        let (stream, none) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: a loaded kernel without parameters, default stream.
        let status =
            unsafe { (self.launch)(self.function, 1, 1, 1, 1, 1, 1, 0, stream, none, none) };
        check("driver API", "cuLaunchKernel", status)
    }

    fn synchronize(&self) -> BenchResult<()> {
        // SAFETY: no arguments.
        check("driver API", "cuCtxSynchronize", unsafe {
            (self.synchronize)()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_fatbin_parses_and_names_the_kernel() {
        let fb = rcud_fatbin::FatBinary::parse(&fatbin()).unwrap();
        let name = KERNEL.to_str().unwrap();
        assert!(fb.ptx_for(80).unwrap().contains(name));
        assert_eq!(fb.param_layout(name).unwrap().total_size, 0);
    }
}
