//! Texture and surface references (non-unified mode): a module-scope
//! `.texref`/`.surfref` is a variable (`texref.<name>`, `surfref.<name>`)
//! holding the handle of the object the driver bound to it.

mod common;

use common::*;
use rcud_emu::kernel::KernelError;
use rcud_emu::ptx::opaque_var_name;
use rcud_proto::texture::{AddressMode, ChannelKind, Filter, ImageDescriptor, Shape};

const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.global .texref tex1;
.global .texref tex2;
.global .surfref surf1;

.visible .entry fetch(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tex1, {%r1}];
    cvt.rn.f32.u32 %f5, %r1;
    add.f32 %f5, %f5, 0f3F000000;
    mov.f32 %f6, 0f3F000000;
    tex.2d.v4.f32.f32 {%f2, %f3, %f4, %f7}, [tex2, {%f5, %f6}];
    add.f32 %f1, %f1, %f2;
    txq.width.b32 %r2, [tex2];
    cvt.rn.f32.u32 %f3, %r2;
    add.f32 %f1, %f1, %f3;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.f32 [%rd3], %f1;
    shl.b32 %r3, %r1, 2;
    mov.b32 %r4, %f1;
    sust.b.1d.b32.trap [surf1, {%r3}], {%r4};
    suq.width.b32 %r5, [surf1];
    st.global.u32 [%rd1+64], %r5;
    ret;
}
"#;

fn desc(shape: Shape, surface: bool, base: u64, w: u32, h: u32) -> ImageDescriptor {
    ImageDescriptor {
        surface,
        shape,
        channels: 1,
        bits: 32,
        kind: ChannelKind::Float,
        base,
        width: w,
        height: h,
        depth: 1,
        layers: 0,
        pitch: u64::from(w) * 4,
        slice_pitch: u64::from(w * h) * 4,
        address: [AddressMode::Clamp; 3],
        filter: Filter::Point,
        read_normalized: false,
        normalized_coords: false,
        srgb: false,
        border: [0.0; 4],
        levels: 1,
        mipmap_filter: Filter::Point,
        lod_bias: 0.0,
        min_lod: 0.0,
        max_lod: 0.0,
    }
}

#[test]
fn references_are_module_variables_holding_handles() {
    let mut dev = Dev::from_text(PTX);
    for name in ["texref.tex1", "texref.tex2", "surfref.surf1"] {
        let g = dev.module.globals().iter().find(|g| g.name == name);
        let g = g.unwrap_or_else(|| panic!("no variable {name}"));
        assert_eq!((g.size, g.align), (8, 8), "{name}");
    }
    assert_eq!(opaque_var_name("texref", "tex1"), "texref.tex1");
    let n = 4usize;
    let out = dev.zeros::<f32>(17);
    // Launched before anything is bound: the null handle faults.
    let r = dev.launch("fetch", [1, 1, 1], [n as u32, 1, 1], 0, &[arg(out)]);
    assert!(matches!(r, Err(KernelError::IllegalAddress(_))), "{r:?}");

    let lin = dev.alloc(&[1.0f32, 2.0, 3.0, 4.0]);
    let t1 = dev.alloc(&desc(Shape::Linear, false, lin, 4, 1).encode());
    let img = dev.alloc(&[10.0f32, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0]);
    let t2 = dev.alloc(&desc(Shape::Array2D, false, img, 8, 1).encode());
    let surf_mem = dev.zeros::<f32>(n);
    let s1 = dev.alloc(&desc(Shape::Array1D, true, surf_mem, n as u32, 1).encode());
    dev.write_symbol("texref.tex1", &[t1]);
    dev.write_symbol("texref.tex2", &[t2]);
    dev.write_symbol("surfref.surf1", &[s1]);
    dev.launch("fetch", [1, 1, 1], [n as u32, 1, 1], 0, &[arg(out)])
        .unwrap();
    let want: Vec<f32> = (0..n)
        .map(|i| (i + 1) as f32 + 10.0 * (i + 1) as f32 + 8.0)
        .collect();
    assert_eq!(dev.read::<f32>(out, n), want);
    assert_eq!(dev.read::<f32>(surf_mem, n), want);
    assert_eq!(dev.read::<u32>(out + 64, 1), [n as u32]);
}

#[test]
fn unknown_and_misused_references_are_refused() {
    // An initialized sampler or texture reference is not supported.
    let init = ".version 7.0\n.target sm_70\n.address_size 64\n\
                .global .samplerref s = { filter_mode = nearest };\n";
    let e = rcud_emu::Module::parse(init).unwrap_err();
    assert!(e.to_string().contains("samplerref"), "{e}");
    // `tex` on a name that is no reference (nor register, nor parameter),
    // and `suld` on a texture reference: the kernel does not translate.
    for body in [
        "tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [nothing, {%r1}];",
        "suld.b.1d.b32.trap {%r2}, [tex1, {%r1}];",
    ] {
        let text = format!(
            ".version 7.0\n.target sm_70\n.address_size 64\n.global .texref tex1;\n\
             .visible .entry k()\n{{\n.reg .b32 %r<4>;\n.reg .f32 %f<5>;\nmov.u32 %r1, 0;\n{body}\nret;\n}}\n"
        );
        let failed = match rcud_emu::Module::parse(&text) {
            Err(_) => true,
            Ok(m) => {
                let mut dev = Dev::from_text(&text);
                drop(m);
                dev.launch("k", [1, 1, 1], [1, 1, 1], 0, &[]).is_err()
            }
        };
        assert!(failed, "{body}");
    }
}
