//! Malformed and mutated PTX never panics the parser or the interpreter:
//! it is an error value, or a kernel that fails cleanly.

mod common;

use std::time::Duration;

use common::*;
use rcud_emu::kernel::{self, LaunchConfig, Limits};
use rcud_emu::ptx::Module;
use rcud_emu::{DeviceMemory, EmuGpu};

/// Every checked-in PTX file.
fn files() -> Vec<String> {
    let dir = ptx_path("");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ptx"))
        .collect();
    v.sort();
    assert!(v.len() >= 10);
    v
}

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.next() % 3 {
        if lines.is_empty() {
            break;
        }
        let n = lines.len() as u64;
        let i = (rng.next() % n) as usize;
        match rng.next() % 7 {
            0 => {
                lines.remove(i);
            }
            1 => {
                let j = (rng.next() % n) as usize;
                lines.swap(i, j);
            }
            2 => {
                let dup = lines[i].clone();
                lines.insert(i, dup);
            }
            3 => {
                // Replace the first number on the line with an extreme one.
                let big = [
                    "4294967295",
                    "0",
                    "99999999999",
                    "-1",
                    "65536",
                    "0xffffffffffffffff",
                ];
                let l = &mut lines[i];
                if let Some(p) = l.find(|c: char| c.is_ascii_digit()) {
                    let end = l[p..]
                        .find(|c: char| !c.is_ascii_alphanumeric())
                        .map_or(l.len(), |e| p + e);
                    l.replace_range(p..end, big[(rng.next() % big.len() as u64) as usize]);
                }
            }
            4 => {
                let l = &mut lines[i];
                let cut = (rng.next() as usize) % (l.len() + 1);
                let mut c = cut;
                while !l.is_char_boundary(c) {
                    c -= 1;
                }
                l.truncate(c);
            }
            5 => {
                let junk = [
                    "{",
                    "}",
                    ";",
                    "[",
                    "%r1",
                    ".reg .b32 %q<99999999>;",
                    "@%p1",
                    "{{{{{{{{",
                ];
                lines.insert(
                    i,
                    junk[(rng.next() % junk.len() as u64) as usize].to_string(),
                );
            }
            _ => {
                // Swap the opcode of this line with another line's.
                let j = (rng.next() % n) as usize;
                let a = lines[i].split_whitespace().next().map(str::to_string);
                let b = lines[j].split_whitespace().next().map(str::to_string);
                if let (Some(a), Some(b)) = (a, b) {
                    lines[i] = lines[i].replacen(&a, &b, 1);
                }
            }
        }
    }
    lines.join("\n")
}

#[test]
fn mutated_ptx_never_panics() {
    let seed = std::env::var("RCUD_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let mut rng = Rng(seed);
    let mut launched = 0;
    let limits = Limits {
        timeout: Duration::from_millis(50),
        threads: 1,
        ..Limits::default()
    };
    // RCUD_FUZZ_ROUNDS=N runs longer.
    let rounds = std::env::var("RCUD_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    for round in 0..rounds {
        for f in files() {
            let text = std::fs::read_to_string(ptx_path(&f)).unwrap();
            let m = mutate(&text, &mut rng);
            let Ok(module) = Module::parse(&m) else {
                continue;
            };
            for e in module.errors() {
                assert!(!e.to_string().is_empty());
            }
            if round % 4 != 0 {
                continue;
            }
            // Launch every kernel with a zeroed buffer as every pointer.
            let mut mem = DeviceMemory::new(EmuGpu::new(0, 1 << 26), 0);
            let buf = mem.malloc(1 << 16).unwrap();
            let mut symbols = std::collections::HashMap::new();
            for g in module.globals() {
                symbols.insert(
                    g.name.clone(),
                    mem.malloc(g.size.clamp(1, 1 << 20)).unwrap(),
                );
            }
            for k in module.kernel_names() {
                let layout = module.kernel_params(&k).unwrap();
                let size = layout
                    .iter()
                    .map(|(o, s)| o + s)
                    .max()
                    .unwrap_or(0)
                    .min(4096);
                let mut params = vec![0u8; size];
                for &(o, s) in &layout {
                    if s == 8 && o + 8 <= params.len() {
                        params[o..o + 8].copy_from_slice(&buf.to_le_bytes());
                    } else if s == 4 && o + 4 <= params.len() {
                        params[o..o + 4].copy_from_slice(&16u32.to_le_bytes());
                    }
                }
                let cfg = LaunchConfig {
                    grid: [2, 1, 1],
                    block: [40, 1, 1],
                    dynamic_shared: 256,
                    cooperative: false,
                };
                let _ = kernel::launch(&module, &k, &cfg, &params, &symbols, &mut mem, &limits);
                launched += 1;
            }
        }
    }
    assert!(launched > 20, "only {launched} launches");
}

#[test]
fn hostile_text() {
    let cases = [
        "",
        ".version",
        ".entry",
        ".visible .entry k(",
        ".visible .entry k() { ",
        ".global .b8 x[99999999999999];",
        ".global .b8 x[2] = {1, {2, {3, {4}}}};",
        &format!(".global .b8 x[2] = {};", "{".repeat(100_000)),
        &format!(
            ".visible .entry k() {{ mov.b32 %r1, {}; }}",
            "{".repeat(100_000)
        ),
        ".visible .entry k() { .reg .b32 %r<4294967295>; mov.b32 %r4294967294, 1; ret; }",
        ".visible .entry k() .maxntid 4294967295, 4294967295, 4294967295 { ret; }",
        ".visible .entry k() { bra NOWHERE; }",
        ".visible .entry k() { .local .b8 d[4000000000]; ret; }",
        ".visible .entry k() { ld.global.b128 %r1, [0]; }",
        ".visible .entry k(.param .b8 p[18446744073709551615]) { ret; }",
        "\u{fffd}\u{0}",
        ".visible .entry k() { call.uni nothing, (); }",
        ".visible .entry k() { .reg .b32 %r<2>; call.uni (%r1), %r1, (%r1), proto; }",
    ];
    for c in cases {
        if let Ok(m) = Module::parse(c) {
            for k in m.kernel_names() {
                let mut mem = DeviceMemory::new(EmuGpu::new(0, 1 << 20), 0);
                let cfg = LaunchConfig {
                    grid: [1, 1, 1],
                    block: [32, 1, 1],
                    dynamic_shared: 0,
                    cooperative: false,
                };
                let params = vec![0u8; 64];
                let r = kernel::launch(
                    &m,
                    &k,
                    &cfg,
                    &params,
                    &Default::default(),
                    &mut mem,
                    &Limits {
                        timeout: Duration::from_millis(50),
                        threads: 1,
                        ..Limits::default()
                    },
                );
                let _ = r.map_err(|e| e.to_string());
            }
        }
    }
}
