//! Device printf, and kernels that fail: bad addresses, runaway loops,
//! traps, assertions, bad launch configurations, unsupported PTX.

mod common;

use std::time::{Duration, Instant};

use common::*;
use rcud_emu::kernel::KernelError;

#[test]
fn device_printf() {
    let mut d = Dev::load("printf.ptx");
    let out = d
        .launch("hello", [2, 1, 1], [4, 1, 1], 0, &[arg(3i32)])
        .unwrap();
    let e = ["0.000000e+00", "1.234568e+04", "2.469136e+04"];
    let g = ["0.0001", "0.0002", "0.0003"];
    let mut want = String::new();
    for b in 0..2 {
        for t in 0..3i64 {
            want += &format!(
                "thread {t} of 4: {:5.2}|{:<4}|{:04x}|{}|str|{}|{}|{}|%|18446744073709551615|ABCD|10|{:+}\n",
                t as f64 * 1.25,
                t,
                255 + t,
                (b'a' + t as u8) as char,
                -1234567890123i64 * (t + 1),
                e[t as usize],
                g[t as usize],
                t
            );
        }
        want += &format!("block {b} done 42    ab abc -7\n");
    }
    assert_eq!(out.printf, want);
}

#[test]
fn out_of_bounds_store_is_illegal_address() {
    let mut d = Dev::load("faults.ptx");
    let p = d.zeros::<i32>(64);
    let err = d
        .launch(
            "out_of_bounds",
            [1, 1, 1],
            [64, 1, 1],
            0,
            &[arg(p), arg(64i32)],
        )
        .unwrap_err();
    let KernelError::IllegalAddress(f) = &err else {
        panic!("{err}")
    };
    assert_eq!(f.kernel, "out_of_bounds");
    assert_eq!(f.address, p + 256);
    assert_eq!(f.space, "global");
    assert_eq!(f.size, 4);
    assert_eq!(f.thread, [0, 0, 0]);
    assert!(f.instruction.starts_with("st.global"), "{}", f.instruction);
    assert!(f.line > 0);
    let text = err.to_string();
    assert!(
        text.contains("illegal address") && text.contains("out_of_bounds"),
        "{text}"
    );
    // In bounds, the same kernel works.
    d.launch(
        "out_of_bounds",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[arg(p), arg(32i32)],
    )
    .unwrap();
    assert_eq!(d.read::<i32>(p + 128, 32), (0..32).collect::<Vec<_>>());
}

#[test]
fn null_and_freed_pointers_are_illegal() {
    let mut d = Dev::load("faults.ptx");
    let out = d.zeros::<i32>(32);
    let err = d
        .launch(
            "read_null",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[arg(0u64), arg(out)],
        )
        .unwrap_err();
    assert!(
        matches!(&err, KernelError::IllegalAddress(f) if f.address == 0),
        "{err}"
    );
    let p = d.alloc(&[1i32; 32]);
    d.mem.free(p).unwrap();
    let err = d
        .launch("read_null", [1, 1, 1], [32, 1, 1], 0, &[arg(p), arg(out)])
        .unwrap_err();
    assert!(matches!(err, KernelError::IllegalAddress(_)), "{err}");
}

#[test]
fn shared_out_of_bounds() {
    let mut d = Dev::load("faults.ptx");
    let out = d.zeros::<i32>(32);
    d.launch(
        "shared_oob",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[arg(out), arg(5i32)],
    )
    .unwrap();
    assert_eq!(d.read::<i32>(out, 32), vec![5; 32]);
    let err = d
        .launch(
            "shared_oob",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[arg(out), arg(1000i32)],
        )
        .unwrap_err();
    let KernelError::IllegalAddress(f) = &err else {
        panic!("{err}")
    };
    assert_eq!(f.space, "shared");
    assert_eq!(f.address, 4000);
}

#[test]
fn infinite_loop_times_out_on_every_worker() {
    let mut d = Dev::load("faults.ptx");
    d.limits.timeout = Duration::from_millis(300);
    d.limits.threads = 2;
    let flag = d.zeros::<i32>(1);
    let t0 = Instant::now();
    let err = d
        .launch("spin", [64, 1, 1], [64, 1, 1], 0, &[arg(flag)])
        .unwrap_err();
    assert!(
        matches!(&err, KernelError::Timeout(k) if &**k == "spin"),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(5));
    // With the flag set, the same kernel finishes.
    d.alloc(&[0i32]);
    d.mem
        .slice_mut(flag, 4)
        .unwrap()
        .copy_from_slice(&1i32.to_le_bytes());
    d.launch("spin", [64, 1, 1], [64, 1, 1], 0, &[arg(flag)])
        .unwrap();
}

#[test]
fn trap_and_assert() {
    let mut d = Dev::load("faults.ptx");
    d.launch("do_trap", [2, 1, 1], [32, 1, 1], 0, &[arg(2i32)])
        .unwrap();
    let err = d
        .launch("do_trap", [2, 1, 1], [32, 1, 1], 0, &[arg(3i32)])
        .unwrap_err();
    assert!(
        matches!(&err, KernelError::Trap(f) if f.kernel == "do_trap"),
        "{err}"
    );
    d.launch("do_assert", [1, 1, 1], [8, 1, 1], 0, &[arg(2i32)])
        .unwrap();
    let err = d
        .launch("do_assert", [1, 1, 1], [8, 1, 1], 0, &[arg(3i32)])
        .unwrap_err();
    let KernelError::Assert(f) = &err else {
        panic!("{err}")
    };
    assert!(
        f.message.contains("Assertion `x != 3` failed"),
        "{}",
        f.message
    );
    assert!(f.message.contains("faults.cu"), "{}", f.message);
}

#[test]
fn invalid_configurations() {
    let mut d = Dev::load("reduce.ptx");
    let x = d.zeros::<f32>(1024);
    let o = d.zeros::<f32>(64);
    let args = || [arg(x), arg(o), arg(1024i32)];
    for (grid, block, dynamic) in [
        ([1, 1, 1], [1025, 1, 1], 32),
        ([1, 1, 1], [32, 32, 2], 32),
        ([1, 1, 1], [1, 1, 65], 32),
        ([1, 1, 1], [0, 1, 1], 32),
        ([0, 1, 1], [32, 1, 1], 32),
        ([1, 65536, 1], [32, 1, 1], 32),
        ([1, 1, 65536], [32, 1, 1], 32),
        ([1, 1, 1], [32, 1, 1], 49 * 1024),
    ] {
        let err = d
            .launch("reduce_sum", grid, block, dynamic, &args())
            .unwrap_err();
        assert!(
            matches!(err, KernelError::InvalidConfiguration(_)),
            "{grid:?} {block:?} {dynamic}: {err}"
        );
    }
    // Raising the kernel's dynamic shared limit allows up to 163 KiB.
    d.limits.max_dynamic_shared = 100 * 1024;
    d.launch("reduce_sum", [2, 1, 1], [64, 1, 1], 100 * 1024, &args())
        .unwrap();
    let err = d
        .launch("reduce_sum", [2, 1, 1], [64, 1, 1], 100 * 1024 + 4, &args())
        .unwrap_err();
    assert!(matches!(err, KernelError::InvalidConfiguration(_)), "{err}");
    // Too few parameter bytes.
    let params = vec![0u8; 8];
    let err = rcud_emu::kernel::launch(
        &d.module,
        "reduce_sum",
        &rcud_emu::kernel::LaunchConfig {
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_shared: 0,
            cooperative: false,
        },
        &params,
        &d.symbols,
        &mut d.mem,
        &d.limits,
    )
    .unwrap_err();
    assert!(matches!(err, KernelError::InvalidValue(_)), "{err}");
}

const UNSUPPORTED: &str = r#"
.version 9.5
.target sm_80
.address_size 64

.visible .entry ok(.param .u64 p)
{
	ret;
}

.visible .entry _Z3fooPi(.param .u64 p)
{
	.reg .b32 %r<3>;
	mov.u32 %r1, 1;
	xyz.abc.u32 %r2, %r1;
	ret;
}
"#;

#[test]
fn unsupported_instruction_names_kernel_line_and_opcode() {
    let mut d = Dev::from_text(UNSUPPORTED);
    let errs: Vec<String> = d.module.errors().map(|e| e.to_string()).collect();
    assert_eq!(
        errs,
        vec!["unsupported PTX instruction 'xyz.abc.u32' in kernel _Z3fooPi (line 15)"]
    );
    d.launch("ok", [1, 1, 1], [1, 1, 1], 0, &[arg(0u64)])
        .unwrap();
    let err = d
        .launch("_Z3fooPi", [1, 1, 1], [1, 1, 1], 0, &[arg(0u64)])
        .unwrap_err();
    assert_eq!(
        err,
        KernelError::Unsupported(
            "unsupported PTX instruction 'xyz.abc.u32' in kernel _Z3fooPi (line 15)".into()
        )
    );
}

#[test]
fn syntax_errors_name_the_line() {
    let err = rcud_emu::ptx::Module::parse(".version 9.5\n.visible .entry k(\n{\n ret;\n}\n")
        .unwrap_err();
    assert!(err.to_string().contains("line"), "{err}");
    assert!(rcud_emu::ptx::Module::parse("garbage ~").is_err());
}
