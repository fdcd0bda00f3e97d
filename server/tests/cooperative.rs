//! Cooperative launches against the `rcud-server` binary: every block of
//! the grid resident at once so that `grid.sync()` works, and a grid larger
//! than the device can hold refused by the server itself, whatever the
//! client checked.

mod support;

use rcud_proto::codec::Blob;
use rcud_proto::ops::req;
use rcud_proto::CudaError;
use support::{Conn, ServerProc};

const PTX: &str = include_str!("../../emu/tests/ptx/cooperative.ptx");

fn load(c: &mut Conn, kernel: &str) -> (u32, rcud_proto::ops::FuncAttributes) {
    let image = rcud_fatbin::image::wrap_ptx(PTX.as_bytes());
    let hash = rcud_fatbin::content_hash(&image);
    let load = req::ModuleLoad {
        hash,
        len: image.len() as u64,
    };
    let module = c.call(&load, &image, &mut []).unwrap().unwrap().module;
    let f = c
        .call(
            &req::ModuleGetFunction {
                module,
                name: kernel.into(),
            },
            &[],
            &mut [],
        )
        .unwrap()
        .unwrap();
    (f.function, f.attributes)
}

fn params(values: &[u64]) -> Blob {
    Blob(values.iter().flat_map(|v| v.to_le_bytes()).collect())
}

#[test]
fn grid_sync_works_and_too_large_grids_are_refused() {
    let server = ServerProc::start(&["--emu-memory", "64MiB"]);
    let mut c = Conn::attached(server.addr(), "cooperative");
    let (function, attributes) = load(&mut c, "grid_info");
    let out = c.malloc(24);
    let launch = |grid: u32| req::LaunchCooperative {
        function,
        grid: [grid, 1, 1],
        block: [64, 1, 1],
        shared_mem: 0,
        stream: 0,
        // grid_info(unsigned long long *out, int do_sync = 1)
        params: params(&[out, 1]),
    };
    c.call(&launch(12), &[], &mut []).unwrap().unwrap();
    let mut got = [0u8; 24];
    c.dtoh(out, &mut got);
    let words: Vec<u64> = got
        .chunks(8)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
        .collect();
    assert_eq!(words, [1, 12 * 64, 12]);

    let info = c
        .call(&req::GetDeviceInfo { gpu: 0 }, &[], &mut [])
        .unwrap()
        .unwrap();
    let most = attributes.max_cooperative_blocks(&info.props, 64, 0);
    assert!(most > 12);
    c.call(&launch(most as u32), &[], &mut []).unwrap().unwrap();
    let refused = c
        .call(&launch(most as u32 + 1), &[], &mut [])
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.code, CudaError::COOPERATIVE_LAUNCH_TOO_LARGE);
    assert!(refused.message.contains("resident"), "{}", refused.message);
}
