//! Virtual functions: vtables are module variables initialised with
//! function addresses, and a warp whose lanes hold objects of different
//! classes calls each class's function in turn.

mod common;

use common::*;

#[test]
fn virtual_calls_go_through_vtables_with_divergent_lanes() {
    let mut d = Dev::load("virtual.ptx");
    if let Some(e) = d.module.errors().next() {
        panic!("{e}");
    }
    let out = d.zeros::<f32>(64);
    d.launch("make", [1, 1, 1], [64, 1, 1], 0, &[]).unwrap();
    d.launch("areas", [1, 1, 1], [64, 1, 1], 0, &[arg(out)])
        .unwrap();
    d.launch("destroy", [1, 1, 1], [64, 1, 1], 0, &[]).unwrap();
    let got: Vec<f32> = d.read(out, 64);
    for (i, a) in got.iter().enumerate() {
        let x = i as f32;
        let want = if i % 3 != 0 { x * x } else { 0.5 * x * 4.0 };
        assert_eq!(*a, want, "shape {i}");
    }
}

#[test]
fn module_variables_hold_function_addresses() {
    let d = Dev::load("virtual.ptx");
    let table = d.symbols["_ZTV6Square"];
    let words: Vec<u64> = d.read(table, 5);
    let area = d.module.function_address("_ZNK6Square4areaEv").unwrap();
    assert_eq!(words[4], area);
    assert!(d.module.function_address("no_such_function").is_none());
}
