//! Unit tests of the module build: texture and surface references.

use super::{opaque_var_name, Module, PtxErrorKind, Space};

const HEAD: &str = ".version 7.0\n.target sm_70\n.address_size 64\n";

#[test]
fn texref_and_surfref_become_handle_variables() {
    let text = format!(
        "{HEAD}.global .texref tex1;\n.global .surfref surf1;\n.global .samplerref samp1;\n\
         .global .u64 plain;\n\
         .visible .entry k(.param .u64 out)\n{{\n.reg .b32 %r<4>;\n.reg .f32 %f<5>;\n\
         mov.u32 %r1, 0;\ntex.1d.v4.f32.s32 {{%f1, %f2, %f3, %f4}}, [tex1, {{%r1}}];\n\
         sust.b.1d.b32.trap [surf1, {{%r1}}], {{%r1}};\ntxq.width.b32 %r2, [tex1];\nret;\n}}\n"
    );
    let m = Module::parse(&text).unwrap();
    let names: Vec<&str> = m.globals().iter().map(|g| g.name.as_str()).collect();
    assert_eq!(
        names,
        ["texref.tex1", "surfref.surf1", "samplerref.samp1", "plain"]
    );
    for g in &m.globals()[..3] {
        assert_eq!((g.space, g.size, g.align), (Space::Global, 8, 8));
        assert!(g.init.is_empty());
    }
    assert_eq!(opaque_var_name("surfref", "surf1"), "surfref.surf1");
    assert!(m.errors.iter().all(Option::is_none), "{:?}", m.errors);
}

#[test]
fn reference_parameters_are_handles() {
    let text = format!(
        "{HEAD}.visible .entry k(.param .texref t)\n{{\n.reg .b32 %r<4>;\n.reg .f32 %f<5>;\n\
         mov.u32 %r1, 0;\ntex.1d.v4.f32.s32 {{%f1, %f2, %f3, %f4}}, [t, {{%r1}}];\nret;\n}}\n"
    );
    let m = Module::parse(&text).unwrap();
    assert!(m.globals().is_empty());
    assert!(m.errors.iter().all(Option::is_none), "{:?}", m.errors);
}

#[test]
fn misused_references_are_refused() {
    for decl in [
        ".global .texref t[2];",
        ".global .samplerref s = { filter_mode = nearest };",
    ] {
        let e = Module::parse(&format!("{HEAD}{decl}\n")).unwrap_err();
        assert_eq!(e.kind(), PtxErrorKind::Unsupported, "{decl}: {e}");
    }
    // A surface instruction on a texture reference, a texture one on an
    // unknown name: the function does not translate.
    for body in [
        "suld.b.1d.b32.trap {%r2}, [tex1, {%r1}];",
        "tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [nothing, {%r1}];",
    ] {
        let text = format!(
            "{HEAD}.global .texref tex1;\n.visible .entry k()\n{{\n.reg .b32 %r<4>;\n\
             .reg .f32 %f<5>;\nmov.u32 %r1, 0;\n{body}\nret;\n}}\n"
        );
        let failed = match Module::parse(&text) {
            Err(_) => true,
            Ok(m) => m.errors.iter().any(Option::is_some),
        };
        assert!(failed, "{body}");
    }
}
