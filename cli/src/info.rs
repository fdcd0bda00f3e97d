//! `rcud info`: what a server offers.

use std::process::ExitCode;

use rcud_client::config::parse_servers;
use rcud_client::Runtime;
use rcud_server::backend::{BackendKind, EmuSettings};

/// Arguments of `rcud info`.
#[derive(Debug, clap::Args)]
pub(crate) struct InfoArgs {
    /// Server(s) to ask, `host:port[#gpu]`, comma-separated. Without it an
    /// embedded server shows what `rcud run` would use.
    #[arg(long, env = "RCUD_SERVERS")]
    server: Option<String>,
}

pub(crate) fn info(args: InfoArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let (servers, _embedded) = match args.server {
        Some(s) => (s, None),
        None => {
            let token = rcud_server::embedded::LocalToken::generate()?;
            token.export_here();
            let handle = rcud_server::embedded::spawn(
                BackendKind::Auto,
                &EmuSettings::default(),
                &token,
                None,
            )?;
            (handle.addr().to_string(), Some(handle))
        }
    };
    let entries = parse_servers(&servers)?;
    let rt = Runtime::connect(&entries, "rcud info".into());
    if rt.devices().is_empty() {
        println!("no remote GPU found at {servers}");
        return Ok(ExitCode::FAILURE);
    }
    println!(
        "{} remote GPU(s), driver version {}",
        rt.devices().len(),
        version(rt.driver_version())
    );
    for (i, d) in rt.devices().iter().enumerate() {
        let p = &d.props;
        println!();
        println!("device {i}: {}", p.name);
        println!(
            "  server:              {} (GPU #{}, backend {})",
            d.server, d.gpu, d.backend
        );
        println!("  compute capability:  {}.{}", p.major, p.minor);
        println!(
            "  global memory:       {}",
            bytesize::ByteSize(p.total_global_mem)
        );
        println!("  multiprocessors:     {}", p.multi_processor_count);
        println!("  max threads/block:   {}", p.max_threads_per_block);
        println!(
            "  shared memory/block: {}",
            bytesize::ByteSize(p.shared_mem_per_block)
        );
        println!("  warp size:           {}", p.warp_size);
        println!(
            "  L2 cache:            {}",
            bytesize::ByteSize(p.l2_cache_size as u64)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}
