//! What the fuzz targets found, kept as tests of the fixed behaviour. The
//! fuzzer's own reproducers are in `fuzz/artifacts-found/<target>/` and
//! replay with the corpora.

use rcud_emu::ptx::Module;
use rcud_emu::{DeviceMemory, EmuGpu};

/// Offsets and sizes of a kernel's parameters.
type Layout = Vec<(usize, usize)>;

/// The server's layout of kernel `name` and the client's, for PTX `text`.
fn layouts(text: &str, name: &str) -> (Option<Layout>, Option<Layout>) {
    let server = Module::parse(text).ok().and_then(|m| m.kernel_params(name));
    let client = rcud_fatbin::ptx::entry_param_layout(text, name)
        .ok()
        .flatten()
        .map(|l| l.params.iter().map(|p| (p.offset, p.size)).collect());
    (server, client)
}

const HEAD: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

/// `fuzz/artifacts-found/ptx/param-vector-suffix-after-name.ptx`: a dot in
/// a parameter's name. The emulator's lexer reads `a.v2` as one name (an
/// 8-byte parameter); the client's reader reads `.v2` as a vector width (16
/// bytes). PTX names have no dots: the server refuses the text, so no
/// kernel is launched with the client's reading of it.
#[test]
fn a_dotted_parameter_name_is_refused() {
    let text = format!("{HEAD}.visible .entry k(\n\t.param .u64 a.v2\n)\n{{\n\tret;\n}}\n");
    let (server, client) = layouts(&text, "k");
    assert_eq!(server, None, "server {server:?}, client {client:?}");
    let error = Module::parse(&text).expect_err("a dotted name parses");
    assert!(error.to_string().contains("a.v2"), "{error}");
}

/// `fuzz/artifacts-found/ptx/duplicate-entry.ptx`: two entries of one
/// name. The emulator keeps the last (its kernel table is a map), the
/// client's reader the first, so the client packs the arguments of one
/// signature and the server reads them as the other's. ptxas refuses a
/// duplicate definition, and so does the emulator.
#[test]
fn a_duplicate_entry_is_refused() {
    let text = format!(
        "{HEAD}.visible .entry k(.param .u64 a)\n{{\n\tret;\n}}\n\
         .visible .entry k(.param .u32 a)\n{{\n\tret;\n}}\n"
    );
    let (server, client) = layouts(&text, "k");
    assert!(
        Module::parse(&text).is_err(),
        "accepted; server layout {server:?}, client layout {client:?}"
    );
}

/// `fuzz/artifacts-found/agent_ops/`: the device heap of kernels' `malloc`
/// is made with `DeviceMemory::malloc`, so it is an allocation like the
/// client's own: host copies and memsets reach it at an address no
/// `cudaMalloc` returned, and `cudaFree` of that address frees it under the
/// kernels' allocator. CUDA keeps the device heap out of the runtime API's
/// reach.
#[test]
fn the_device_heap_is_not_host_memory() {
    let gpu = EmuGpu::new(0, 64 << 20);
    let mut memory = DeviceMemory::new(gpu, 0);
    let mine = memory.malloc(6).expect("malloc");
    // What the first launch of a kernel that calls malloc does.
    memory.ensure_heap(1 << 20).expect("heap");
    let candidates: Vec<u64> = (1..8192u64).map(|k| mine + k * 256).collect();
    let reachable: Vec<u64> = candidates
        .iter()
        .copied()
        .filter(|&p| memory.check(p, 16).is_ok())
        .collect();
    assert!(
        reachable.is_empty(),
        "host copies reach {} device-heap addresses, from {:#x}",
        reachable.len(),
        reachable[0]
    );
    let freed: Vec<u64> = candidates
        .into_iter()
        .filter(|&p| memory.free(p).is_ok())
        .collect();
    assert!(freed.is_empty(), "cudaFree freed {freed:#x?}");
    assert!(memory.check(mine, 6).is_ok(), "the client's own allocation");
}

/// `fuzz/artifacts-found/agent_ops/`: `cudaFree` takes the address of a
/// module variable (as `cudaGetSymbolAddress` gives it) and frees it; the
/// module's kernels then fault on their own variable
/// (`cudaErrorIllegalAddress`, which poisons the context). CUDA refuses to
/// free what `cudaMalloc` did not return (`cudaErrorInvalidValue`).
#[test]
fn a_module_variable_cannot_be_freed() {
    use rcud_server::backend::emu::EmuBackend;
    use rcud_server::backend::{Backend, EmuSettings};
    let image = rcud_fatbin::image::wrap_ptx(include_str!("../ptx/misc.ptx").as_bytes());
    let backend = EmuBackend::new(&EmuSettings::default());
    let mut ctx = backend.open(0, 0).expect("a context");
    let (module, _) = ctx
        .load_module("finding", rcud_fatbin::content_hash(&image), Some(image))
        .expect("the module loads");
    let (ptr, _) = ctx.get_global(module, "say_format").expect("the variable");
    assert_eq!(
        ctx.free(ptr),
        Err(rcud_proto::CudaError::INVALID_VALUE),
        "cudaFree of module variable say_format at {ptr:#x}"
    );
    assert!(
        ctx.check(ptr, 1).is_ok(),
        "host copies still reach the variable"
    );
}
