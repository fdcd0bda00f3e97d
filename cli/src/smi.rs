//! `rcud smi`: an `nvidia-smi`-like table of the remote GPUs, from their
//! servers (`DeviceStatus`): memory, utilisation, the clients holding each
//! GPU, and the tenant the table is seen as.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use bytesize::ByteSize;
use rcud_client::config::parse_servers;
use rcud_client::Runtime;

/// Arguments of `rcud smi`.
#[derive(Debug, clap::Args)]
pub(crate) struct SmiArgs {
    /// Server(s) to ask, `host:port[#gpu]`, comma-separated.
    #[arg(long, env = "RCUD_SERVERS")]
    server: String,
    /// Redraw the table every SECS seconds (default 2) until interrupted.
    #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "2")]
    watch: Option<f64>,
}

pub(crate) fn smi(args: SmiArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let entries = parse_servers(&args.server)?;
    let rt = Runtime::connect(&entries, "rcud smi".into());
    if rt.devices().is_empty() {
        println!("no remote GPU found at {}", args.server);
        return Ok(ExitCode::FAILURE);
    }
    let Some(secs) = args.watch else {
        print!("{}", table(&rt));
        return Ok(ExitCode::SUCCESS);
    };
    let period = Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|p| !p.is_zero())
        .ok_or("--watch needs a positive number of seconds")?;
    loop {
        // Home and clear, as `watch` does, then the new table.
        print!("\x1b[H\x1b[2J{}", table(&rt));
        std::thread::sleep(period);
    }
}

/// The table of every device of `rt`, then the processes holding them.
fn table(rt: &Runtime) -> String {
    let mut out = String::new();
    let mut processes = String::new();
    let _ = writeln!(
        out,
        "{:>3}  {:<28} {:<22} {:>23} {:>5} {:>5} {:>7}  Tenant",
        "GPU", "Name", "Server", "Memory used / total", "GPU%", "Mem%", "Clients"
    );
    for (i, dev) in rt.devices().iter().enumerate() {
        let server = format!("{}#{}", dev.server, dev.gpu);
        let status = match rt.device_status(i as i32) {
            Ok(s) => s,
            Err(e) => {
                let _ = writeln!(
                    out,
                    "{i:>3}  {:<28} {server:<22} no answer: {e}",
                    dev.props.name
                );
                continue;
            }
        };
        let memory = format!(
            "{} / {}",
            ByteSize(status.memory_used),
            ByteSize(status.memory_total)
        );
        let tenant = if status.tenant.is_empty() {
            "-"
        } else {
            status.tenant.as_str()
        };
        let _ = writeln!(
            out,
            "{i:>3}  {:<28} {server:<22} {memory:>23} {:>4}% {:>4}% {:>7}  {tenant}",
            dev.props.name,
            status.utilisation_gpu,
            status.utilisation_memory,
            status.processes.len(),
        );
        for p in &status.processes {
            // Clients of other tenants show their memory only.
            let pid = if p.pid == 0 {
                "-".to_string()
            } else {
                p.pid.to_string()
            };
            let tenant = if p.tenant.is_empty() {
                "-"
            } else {
                p.tenant.as_str()
            };
            let client = if p.client.is_empty() {
                "(another tenant's client)"
            } else {
                p.client.as_str()
            };
            let _ = writeln!(
                processes,
                "{i:>3}  {pid:>8}  {:>10}  {tenant:<12} {client}",
                ByteSize(p.memory).to_string()
            );
        }
    }
    let _ = writeln!(out, "\nProcesses:");
    if processes.is_empty() {
        let _ = writeln!(out, "  none");
    } else {
        let _ = writeln!(
            out,
            "{:>3}  {:>8}  {:>10}  {:<12} Client",
            "GPU", "PID", "Memory", "Tenant"
        );
        out.push_str(&processes);
    }
    out
}
