//! PTX that JIT compilers (Numba's NVVM output, NVRTC with CUDA's headers)
//! produce and nvcc's ordinary output does not: calls through function
//! pointers, the device heap (`malloc`/`free`), `.reg.f32` written without
//! a space, `WARP_SZ`, and `fma.rn.relu` on bf16.

mod common;

use common::*;

const HEADER: &str = ".version 8.4\n.target sm_80\n.address_size 64\n";

/// `out[tid] = op(tid)` where `op` is called through a function pointer
/// that a kernel argument chooses (every lane calls the same function, as
/// when Numba's runtime calls a destructor).
#[test]
fn calls_through_function_pointers() {
    let ptx = format!(
        r#"{HEADER}
.func  (.param .b32 func_retval0) twice(.param .b32 twice_param_0)
{{
	.reg .b32 	%r<3>;
	ld.param.u32 	%r1, [twice_param_0];
	add.s32 	%r2, %r1, %r1;
	st.param.b32 	[func_retval0], %r2;
	ret;
}}
.func  (.param .b32 func_retval0) negate(.param .b32 negate_param_0)
{{
	.reg .b32 	%r<3>;
	ld.param.u32 	%r1, [negate_param_0];
	neg.s32 	%r2, %r1;
	st.param.b32 	[func_retval0], %r2;
	ret;
}}
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<6>;
	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u32 	%r5, [k_param_1];
	mov.u32 	%r1, %tid.x;
	mov.u64 	%rd2, twice;
	setp.ne.s32 	%p1, %r5, 0;
	@%p1 mov.u64 	%rd2, negate;
	{{
	.reg .b32 temp_param_reg;
	.param .b32 param0;
	st.param.b32 	[param0+0], %r1;
	.param .b32 retval0;
	prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
	call (retval0), %rd2, (param0), prototype_0;
	ld.param.b32 	%r2, [retval0+0];
	}}
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd1, %rd3;
	st.global.u32 	[%rd4], %r2;
	ret;
}}
"#
    );
    let mut d = Dev::from_text(&ptx);
    if let Some(e) = d.module.errors().next() {
        panic!("{e}");
    }
    let out = d.zeros::<i32>(64);
    d.launch("k", [1, 1, 1], [64, 1, 1], 0, &[arg(out), arg(0u32)])
        .expect("launch");
    let expect: Vec<i32> = (0..64).map(|i| 2 * i).collect();
    assert_eq!(d.read::<i32>(out, 64), expect);
    d.launch("k", [1, 1, 1], [64, 1, 1], 0, &[arg(out), arg(1u32)])
        .expect("launch");
    let expect: Vec<i32> = (0..64).map(|i| -i).collect();
    assert_eq!(d.read::<i32>(out, 64), expect);
}

/// Each thread mallocs 24 bytes, writes its id there, stores the pointer;
/// a second kernel reads the values back through the pointers and frees
/// them; a third mallocs again and gets memory back.
#[test]
fn malloc_and_free_use_a_device_heap_that_outlives_launches() {
    let ptx = format!(
        r#"{HEADER}
.extern .func  (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);
.extern .func free(.param .b64 free_param_0);
.visible .entry alloc(.param .u64 alloc_param_0)
{{
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<8>;
	ld.param.u64 	%rd1, [alloc_param_0];
	mov.u32 	%r1, %tid.x;
	{{
	.param .b64 param0;
	st.param.b64 	[param0+0], 24;
	.param .b64 retval0;
	call.uni (retval0), malloc, (param0);
	ld.param.b64 	%rd2, [retval0+0];
	}}
	st.u32 	[%rd2], %r1;
	mul.wide.u32 	%rd3, %r1, 8;
	add.s64 	%rd4, %rd1, %rd3;
	st.global.u64 	[%rd4], %rd2;
	ret;
}}
.visible .entry release(.param .u64 release_param_0, .param .u64 release_param_1)
{{
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<8>;
	ld.param.u64 	%rd1, [release_param_0];
	ld.param.u64 	%rd5, [release_param_1];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 8;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.u64 	%rd2, [%rd4];
	ld.u32 	%r2, [%rd2];
	mul.wide.u32 	%rd6, %r1, 4;
	add.s64 	%rd7, %rd5, %rd6;
	st.global.u32 	[%rd7], %r2;
	{{
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd2;
	call.uni free, (param0);
	}}
	ret;
}}
"#
    );
    let mut d = Dev::from_text(&ptx);
    if let Some(e) = d.module.errors().next() {
        panic!("{e}");
    }
    let ptrs = d.zeros::<u64>(32);
    let vals = d.zeros::<u32>(32);
    d.launch("alloc", [1, 1, 1], [32, 1, 1], 0, &[arg(ptrs)])
        .expect("alloc");
    let first: Vec<u64> = d.read(ptrs, 32);
    assert!(first.iter().all(|&p| p != 0 && p % 16 == 0), "{first:x?}");
    let mut sorted = first.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 32, "distinct blocks");
    d.launch("release", [1, 1, 1], [32, 1, 1], 0, &[arg(ptrs), arg(vals)])
        .expect("release");
    assert_eq!(d.read::<u32>(vals, 32), (0..32).collect::<Vec<u32>>());
    // Freed blocks are reused.
    d.launch("alloc", [1, 1, 1], [32, 1, 1], 0, &[arg(ptrs)])
        .expect("alloc again");
    let mut again: Vec<u64> = d.read(ptrs, 32);
    again.sort_unstable();
    assert_eq!(again, sorted);
}

#[test]
fn header_style_registers_warp_size_and_bf16_fma_relu() {
    let ptx = format!(
        r#"{HEADER}
.visible .entry k(.param .u64 k_param_0)
{{
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [k_param_0];
	mov.u32 	%r1, WARP_SZ;
	st.global.u32 	[%rd1], %r1;
	{{
	.reg.b16 a, b, c, d;
	.reg.f32 f;
	mov.b16 a, 0x4040;
	mov.b16 b, 0xC000;
	mov.b16 c, 0x3F80;
	fma.rn.relu.bf16 d, a, b, c;
	cvt.u32.u16 %r2, d;
	st.global.u32 	[%rd1+4], %r2;
	mov.b16 b, 0x4000;
	fma.rn.relu.bf16 d, a, b, c;
	cvt.u32.u16 %r3, d;
	st.global.u32 	[%rd1+8], %r3;
	}}
	ret;
}}
"#
    );
    let mut d = Dev::from_text(&ptx);
    if let Some(e) = d.module.errors().next() {
        panic!("{e}");
    }
    let out = d.zeros::<u32>(3);
    d.launch("k", [1, 1, 1], [1, 1, 1], 0, &[arg(out)])
        .expect("launch");
    let got: Vec<u32> = d.read(out, 3);
    // 3 * -2 + 1 = -5 clamps to +0; 3 * 2 + 1 = 7 is 0x40E0 in bf16.
    assert_eq!(got, vec![32, 0x0000, 0x40E0]);
}
