#![no_main]
libfuzzer_sys::fuzz_target!(|s: rcud_fuzz_targets::agent::Session| {
    rcud_fuzz_targets::agent::session(s)
});
