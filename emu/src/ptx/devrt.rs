//! The emulated device's own part of libcudadevrt: functions that Numba's
//! `cg.this_grid()` and older cooperative-groups headers call instead of
//! reading the grid workspace themselves. A module that declares one of
//! them `.extern` without defining it gets the definition from here, as the
//! device linker would take it from libcudadevrt (which rcud's `cuLink*`
//! accepts as a no-op, since it holds only machine code).
//!
//! The grid workspace of a cooperative launch is `{ u32 size; u32 barrier; }`
//! at the address in `%envreg1` (high half) and `%envreg2` (low half), 0
//! outside a cooperative launch. The barrier word flips its top bit each
//! time every block has arrived: block 0 adds `0x80000000 - (blocks - 1)`,
//! every other block adds 1.

/// `cudaCGGetIntrinsicHandle(scope)`: the grid workspace for
/// `cudaCGScopeGrid` (1), else 0.
const GET_INTRINSIC_HANDLE: &str = r#"
.visible .func (.param .b64 rcud_devrt_handle) cudaCGGetIntrinsicHandle(.param .b32 rcud_devrt_scope)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u32 %r1, [rcud_devrt_scope];
    mov.u32 %r2, %envreg1;
    mov.u32 %r3, %envreg2;
    cvt.u64.u32 %rd1, %r2;
    shl.b64 %rd1, %rd1, 32;
    cvt.u64.u32 %rd2, %r3;
    or.b64 %rd1, %rd1, %rd2;
    setp.ne.u32 %p1, %r1, 1;
    @%p1 mov.u64 %rd1, 0;
    st.param.b64 [rcud_devrt_handle], %rd1;
    ret;
}
"#;

/// `cudaCGSynchronize(handle, flags)`: a grid-wide barrier. Outside a
/// cooperative launch (no workspace) it traps, as the device runtime does.
const SYNCHRONIZE: &str = r#"
.visible .func (.param .b32 rcud_devrt_status) cudaCGSynchronize(.param .b64 rcud_devrt_ws, .param .b32 rcud_devrt_flags)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [rcud_devrt_ws];
    setp.eq.u64 %p1, %rd1, 0;
    @%p1 trap;
    bar.sync 0;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %tid.y;
    mov.u32 %r3, %tid.z;
    or.b32 %r4, %r1, %r2;
    or.b32 %r4, %r4, %r3;
    setp.ne.u32 %p2, %r4, 0;
    @%p2 bra $rcud_devrt_waited;
    mov.u32 %r5, %nctaid.x;
    mov.u32 %r6, %nctaid.y;
    mov.u32 %r7, %nctaid.z;
    mul.lo.u32 %r5, %r5, %r6;
    mul.lo.u32 %r5, %r5, %r7;
    mov.u32 %r8, %ctaid.x;
    mov.u32 %r9, %ctaid.y;
    mov.u32 %r10, %ctaid.z;
    or.b32 %r8, %r8, %r9;
    or.b32 %r8, %r8, %r10;
    setp.eq.u32 %p3, %r8, 0;
    sub.u32 %r11, 0x80000001, %r5;
    selp.u32 %r11, %r11, 1, %p3;
    add.u64 %rd2, %rd1, 4;
    atom.add.release.gpu.u32 %r12, [%rd2], %r11;
$rcud_devrt_spin:
    ld.acquire.gpu.u32 %r13, [%rd2];
    xor.b32 %r14, %r12, %r13;
    and.b32 %r14, %r14, 0x80000000;
    setp.eq.u32 %p2, %r14, 0;
    @%p2 bra $rcud_devrt_spin;
$rcud_devrt_waited:
    bar.sync 0;
    mov.u32 %r15, 0;
    st.param.b32 [rcud_devrt_status], %r15;
    ret;
}
"#;

/// `cudaCGSynchronizeGrid(handle, flags)`: the same barrier under the name
/// older cooperative-groups headers call.
const SYNCHRONIZE_GRID: &str = r#"
.visible .func (.param .b32 rcud_devrt_status) cudaCGSynchronizeGrid(.param .b64 rcud_devrt_ws, .param .b32 rcud_devrt_flags)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [rcud_devrt_ws];
    ld.param.u32 %r1, [rcud_devrt_flags];
    {
    .param .b64 rcud_devrt_arg0;
    .param .b32 rcud_devrt_arg1;
    .param .b32 rcud_devrt_ret;
    st.param.b64 [rcud_devrt_arg0], %rd1;
    st.param.b32 [rcud_devrt_arg1], %r1;
    call.uni (rcud_devrt_ret), cudaCGSynchronize, (rcud_devrt_arg0, rcud_devrt_arg1);
    ld.param.b32 %r1, [rcud_devrt_ret];
    }
    st.param.b32 [rcud_devrt_status], %r1;
    ret;
}
"#;

/// Each function: its name, the functions of this library it calls, and
/// its PTX.
const FUNCTIONS: &[(&str, &[&str], &str)] = &[
    ("cudaCGGetIntrinsicHandle", &[], GET_INTRINSIC_HANDLE),
    ("cudaCGSynchronize", &[], SYNCHRONIZE),
    (
        "cudaCGSynchronizeGrid",
        &["cudaCGSynchronize"],
        SYNCHRONIZE_GRID,
    ),
];

/// The PTX to append to a module that declares the functions `external`
/// without defining any of `defined`; `None` when it needs none of them.
pub(crate) fn completion<'a>(
    external: impl Iterator<Item = &'a str>,
    defined: impl Fn(&str) -> bool,
) -> Option<String> {
    let mut wanted: Vec<&str> = Vec::new();
    let add = |name: &str, wanted: &mut Vec<&'static str>| {
        if let Some(&(n, deps, _)) = FUNCTIONS.iter().find(|(n, _, _)| *n == name) {
            for d in deps.iter().chain(std::iter::once(&n)) {
                if !defined(d) && !wanted.contains(d) {
                    wanted.push(d);
                }
            }
        }
    };
    for name in external {
        add(name, &mut wanted);
    }
    if wanted.is_empty() {
        return None;
    }
    let mut text = String::new();
    for (name, _, ptx) in FUNCTIONS {
        if wanted.contains(name) {
            text.push_str(ptx);
        }
    }
    Some(text)
}
