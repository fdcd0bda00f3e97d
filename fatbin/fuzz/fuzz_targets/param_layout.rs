//! Any cubin or PTX text gives a parameter layout or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rcud_fatbin::{nvinfo, ptx};

fuzz_target!(|data: &[u8]| {
    let _ = nvinfo::cubin_param_layout(data, "_Z1kPfi1Sc");
    if let Ok(attrs) = nvinfo::parse_attributes(data) {
        let _ = nvinfo::layout_from_attributes(&attrs);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ptx::entry_param_layout(text, "_Z1kPfi1Sc");
    }
});
