//! Any bytes given to the fatbin parser give a result or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rcud_fatbin::{containers_len, FatBinary, FatbinError};

fuzz_target!(|data: &[u8]| {
    match containers_len(data) {
        Ok(n) => assert!(n <= data.len()),
        Err(FatbinError::NeedMore(n)) => assert!(n > data.len()),
        Err(_) => {}
    }
    if let Ok(fb) = FatBinary::parse_with_limit(data, 64 << 20) {
        for arch in [75, 80, 90, 100, 120] {
            let _ = fb.ptx_for(arch);
            let _ = fb.cubin_for(arch);
        }
        for kernel in ["_Z1kPfi1Sc", "_Z8noparamsv", "_Z5mixedcsd6float4h3BigPx"] {
            let _ = fb.param_layout(kernel);
        }
    }
});
