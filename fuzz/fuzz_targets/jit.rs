#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| rcud_fuzz_targets::jit::jit(data));
