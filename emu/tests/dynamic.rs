//! Dynamic parallelism (emu/tests/ptx/dynamic_rdc.cu, built with
//! -rdc=true): kernels launching kernels through the device runtime, tail
//! launches after the rest, recursion to CUDA's depth limit, and launch
//! errors returned to the parent.

mod common;

use common::*;

#[test]
fn children_run_after_the_parent_and_tail_launches_last() {
    let mut d = Dev::load("dynamic_rdc.ptx");
    let (blocks, per_block) = (5, 70);
    let n = blocks * per_block;
    let a = d.zeros::<i32>(n);
    d.launch(
        "parent",
        [blocks as u32, 1, 1],
        [32, 1, 1],
        0,
        &[arg(a), arg(per_block as i32)],
    )
    .unwrap();
    assert_eq!(d.read::<i32>(a, n), vec![12; n]);
}

#[test]
fn recursion_runs_every_level_and_stops_at_the_depth_limit() {
    let mut d = Dev::load("dynamic_rdc.ptx");
    let count = d.zeros::<i32>(32);
    let errors = d.zeros::<i32>(32);
    // A tree: 3 children of one thread per grid, 4 levels below a root of
    // 4 threads.
    d.launch(
        "recurse",
        [1, 1, 1],
        [4, 1, 1],
        0,
        &[arg(count), arg(errors), arg(0i32), arg(4i32), arg(3i32)],
    )
    .unwrap();
    let c = d.read::<i32>(count, 6);
    assert_eq!(c, vec![4, 3, 9, 27, 81, 0], "3^depth grids at each depth");
    assert_eq!(d.read::<i32>(errors, 6), vec![0; 6]);

    // A chain deeper than CUDA allows: the launch from depth 23 fails with
    // cudaErrorLaunchMaxDepthExceeded, which that grid's thread sees.
    let count = d.zeros::<i32>(32);
    let errors = d.zeros::<i32>(32);
    d.launch(
        "recurse",
        [1, 1, 1],
        [1, 1, 1],
        0,
        &[arg(count), arg(errors), arg(0i32), arg(30i32), arg(1i32)],
    )
    .unwrap();
    let c = d.read::<i32>(count, 32);
    assert!(c[..24].iter().all(|&v| v == 1), "{c:?}");
    assert!(c[24..].iter().all(|&v| v == 0), "{c:?}");
    let e = d.read::<i32>(errors, 32);
    assert_eq!(e[23], 1, "{e:?}");
    assert_eq!(e.iter().sum::<i32>(), 1, "{e:?}");
}

#[test]
fn child_printf_follows_the_parents() {
    let mut d = Dev::load("dynamic_rdc.ptx");
    let out = d
        .launch("hello_parent", [2, 1, 1], [1, 1, 1], 0, &[])
        .unwrap();
    assert_eq!(
        out.printf,
        "parent block 0\nparent block 1\nchild of block 0\nchild of block 1\n"
    );
}

#[test]
fn a_bad_child_configuration_is_the_parents_error_to_see() {
    let mut d = Dev::load("dynamic_rdc.ptx");
    let out = d.zeros::<i32>(2);
    d.launch("bad_child_config", [1, 1, 1], [1, 1, 1], 0, &[arg(out)])
        .unwrap();
    // cudaErrorInvalidConfiguration; the child never ran.
    assert_eq!(d.read::<i32>(out, 2), vec![0, 9]);
}

#[test]
fn device_memcpy_and_memset_run_in_order_with_the_launches() {
    let mut d = Dev::load("dynamic_rdc.ptx");
    // The child is one block of 64 threads.
    let n = 64;
    let a = d.zeros::<i32>(n);
    let b = d.zeros::<i32>(n);
    d.launch(
        "copy_after_child",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[arg(a), arg(b), arg(n as i32)],
    )
    .unwrap();
    assert_eq!(
        d.read::<i32>(b, n),
        vec![7; n],
        "the copy follows the child"
    );
    let got = d.read::<i32>(a, n);
    assert!(
        got[..n / 2].iter().all(|&v| v == 0),
        "the memset follows the copy"
    );
    assert!(got[n / 2..].iter().all(|&v| v == 7));
}

#[test]
fn device_error_strings_are_device_memory() {
    let mut d = Dev::load("dynamic_rdc.ptx");
    let out = d.zeros::<u8>(64);
    d.launch("error_string", [1, 1, 1], [1, 1, 1], 0, &[arg(out)])
        .unwrap();
    let bytes = d.read::<u8>(out, 64);
    let text: Vec<u8> = bytes.into_iter().take_while(|&b| b != 0).collect();
    assert_eq!(String::from_utf8_lossy(&text), "invalid argument");
}
