//! `rcud bench launch`: asynchronous launches of an empty kernel per second.
//!
//! The kernel is a few lines of PTX wrapped in a fat binary built here, so the
//! benchmark needs no CUDA compiler; it goes through the same registration and
//! launch path as a program's `<<<...>>>`.

use std::process::ExitCode;
use std::time::Instant;

use rcud_client::runtime::LaunchConfig;
use rcud_client::Runtime;
use rcud_transport::bootstrap::TransportKind;
use serde::Serialize;

use super::output::{emit, Format, Table};
use super::{progress, BenchResult, Setup};

const KERNEL: &str = "rcud_bench_empty";

const PTX: &str = "\
.version 8.0
.target sm_80
.address_size 64

.visible .entry rcud_bench_empty()
{
\tret;
}
";

/// A one-entry fat binary holding `PTX` for compute capability 8.0.
fn fatbin() -> Vec<u8> {
    const ENTRY_HEADER: usize = 64;
    let mut payload = PTX.as_bytes().to_vec();
    payload.resize(PTX.len().div_ceil(8) * 8, 0);
    let mut entry = vec![0u8; ENTRY_HEADER];
    entry[0..2].copy_from_slice(&1u16.to_le_bytes()); // PTX
    entry[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
    entry[4..8].copy_from_slice(&(ENTRY_HEADER as u32).to_le_bytes());
    entry[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    entry[24..26].copy_from_slice(&0u16.to_le_bytes()); // PTX ISA minor
    entry[26..28].copy_from_slice(&8u16.to_le_bytes()); // and major
    entry[28..32].copy_from_slice(&80u32.to_le_bytes());
    entry[40..48].copy_from_slice(&0x11u64.to_le_bytes()); // 64-bit, Linux
    let size = (entry.len() + payload.len()) as u64;
    let mut out = Vec::new();
    out.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&entry);
    out.extend_from_slice(&payload);
    out
}

#[derive(Debug, Serialize)]
struct LaunchRow {
    transport: String,
    mode: String,
    launches_per_s: f64,
}

pub(crate) fn run(
    setup: &Setup,
    transports: &[TransportKind],
    launches: u32,
    sync_every: u32,
    format: Format,
) -> BenchResult<ExitCode> {
    let bar = progress(transports.len() as u64, format);
    let mut rows = Vec::new();
    for &kind in transports {
        bar.set_message(kind.to_string());
        let (free, synced) = measure(setup.runtime(kind)?, launches, sync_every)?;
        rows.push(LaunchRow {
            transport: kind.to_string(),
            mode: "asynchronous".into(),
            launches_per_s: free,
        });
        rows.push(LaunchRow {
            transport: kind.to_string(),
            mode: format!("synchronize every {sync_every}"),
            launches_per_s: synced,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    emit(format, &rows, || {
        let mut t = Table::new(&["transport", "empty kernel <<<1,1>>>", "launches/s"]);
        for r in &rows {
            t.push(vec![
                r.transport.clone(),
                r.mode.clone(),
                format!("{:.0}", r.launches_per_s),
            ]);
        }
        t
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Launches per second: `(all asynchronous, with a synchronize every `sync_every`)`.
fn measure(rt: &'static Runtime, launches: u32, sync_every: u32) -> BenchResult<(f64, f64)> {
    let module = rt.register_module(fatbin());
    // Any address unique in this process names the kernel, as a host stub
    // does (one per runtime: each has its own registry).
    static STUB: u8 = 0;
    let stub = std::ptr::addr_of!(STUB) as u64;
    rt.register_kernel(module, stub, KERNEL.into());
    let config = LaunchConfig {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_mem: 0,
        stream: 0,
    };
    let mut no_args = |_: usize, _: &mut [u8]| {};
    rt.launch(stub, &config, &mut no_args)?;
    rt.synchronize()?;
    let run = |every: u32, no_args: &mut dyn FnMut(usize, &mut [u8])| -> BenchResult<f64> {
        let start = Instant::now();
        for i in 1..=launches {
            rt.launch(stub, &config, no_args)?;
            if every > 0 && i % every == 0 {
                rt.synchronize()?;
            }
        }
        rt.synchronize()?;
        Ok(f64::from(launches) / start.elapsed().as_secs_f64())
    };
    let free_running = run(0, &mut no_args)?;
    let synced = run(sync_every, &mut no_args)?;
    Ok((free_running, synced))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_fatbin_parses_and_names_the_kernel() {
        let fb = rcud_fatbin::FatBinary::parse(&fatbin()).unwrap();
        assert!(fb.ptx_for(80).unwrap().contains(KERNEL));
        assert_eq!(fb.param_layout(KERNEL).unwrap().total_size, 0);
    }
}
