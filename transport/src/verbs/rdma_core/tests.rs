//! The generated bindings against the stand-in library of the integration
//! tests (`tests/fake_ibverbs.c`), which declares the libibverbs structs
//! itself: if the two disagree on a size or offset, the stand-in would test
//! nothing, so this test pins them together.

use std::mem::{offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;

use super::sys::*;

/// `fake_ibverbs.c` built next to the test executable, or `None` (with the
/// reason printed) when no C compiler is at hand.
fn build_fake() -> Option<PathBuf> {
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake_ibverbs.c");
    let dir = std::env::current_exe()
        .ok()?
        .parent()?
        .join("rcud-fake-ibverbs-unit");
    std::fs::create_dir_all(&dir).ok()?;
    let out = dir.join("libibverbs.so.1");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    match Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&out)
        .arg(source)
        .status()
    {
        Ok(s) if s.success() => Some(out),
        Ok(s) => panic!("{cc} failed to build {source}: {s}"),
        Err(e) => {
            eprintln!("skipped: no C compiler ({cc}: {e})");
            None
        }
    }
}

macro_rules! layout {
    ($(size $t:ident),* ; $(off $s:ident . $f:ident as $name:literal),* $(,)?) => {
        vec![
            $((concat!("sizeof ", stringify!($t)), size_of::<$t>()),)*
            $(($name, offset_of!($s, $f)),)*
        ]
    };
}

#[test]
fn bindings_match_the_stand_in_layouts() {
    let Some(lib) = build_fake() else { return };
    let expected: Vec<(&str, usize)> = layout!(
        size ibv_context_ops, size ibv_context, size ibv_device_attr, size ibv_port_attr,
        size ibv_pd, size ibv_mr, size ibv_comp_channel, size ibv_cq, size ibv_qp,
        size ibv_qp_init_attr, size ibv_global_route, size ibv_ah_attr, size ibv_qp_attr,
        size ibv_sge, size ibv_send_wr, size ibv_recv_wr, size ibv_wc;
        off ibv_context_ops.poll_cq as "ibv_context_ops.poll_cq",
        off ibv_context_ops.req_notify_cq as "ibv_context_ops.req_notify_cq",
        off ibv_context_ops.post_send as "ibv_context_ops.post_send",
        off ibv_context_ops.post_recv as "ibv_context_ops.post_recv",
        off ibv_context.ops as "ibv_context.ops",
        off ibv_device_attr.max_mr_size as "ibv_device_attr.max_mr_size",
        off ibv_device_attr.max_qp_wr as "ibv_device_attr.max_qp_wr",
        off ibv_device_attr.max_cqe as "ibv_device_attr.max_cqe",
        off ibv_device_attr.max_mr as "ibv_device_attr.max_mr",
        off ibv_device_attr.phys_port_cnt as "ibv_device_attr.phys_port_cnt",
        off ibv_port_attr.active_mtu as "ibv_port_attr.active_mtu",
        off ibv_port_attr.gid_tbl_len as "ibv_port_attr.gid_tbl_len",
        off ibv_port_attr.max_msg_sz as "ibv_port_attr.max_msg_sz",
        off ibv_port_attr.lid as "ibv_port_attr.lid",
        off ibv_port_attr.link_layer as "ibv_port_attr.link_layer",
        off ibv_mr.addr as "ibv_mr.addr",
        off ibv_mr.lkey as "ibv_mr.lkey",
        off ibv_mr.rkey as "ibv_mr.rkey",
        off ibv_comp_channel.fd as "ibv_comp_channel.fd",
        off ibv_cq.context as "ibv_cq.context",
        off ibv_cq.channel as "ibv_cq.channel",
        off ibv_qp.context as "ibv_qp.context",
        off ibv_qp.qp_num as "ibv_qp.qp_num",
        off ibv_qp.state as "ibv_qp.state",
        off ibv_qp_init_attr.cap as "ibv_qp_init_attr.cap",
        off ibv_qp_init_attr.qp_type as "ibv_qp_init_attr.qp_type",
        off ibv_qp_init_attr.sq_sig_all as "ibv_qp_init_attr.sq_sig_all",
        off ibv_global_route.sgid_index as "ibv_global_route.sgid_index",
        off ibv_global_route.hop_limit as "ibv_global_route.hop_limit",
        off ibv_ah_attr.dlid as "ibv_ah_attr.dlid",
        off ibv_ah_attr.is_global as "ibv_ah_attr.is_global",
        off ibv_ah_attr.port_num as "ibv_ah_attr.port_num",
        off ibv_qp_attr.rq_psn as "ibv_qp_attr.rq_psn",
        off ibv_qp_attr.sq_psn as "ibv_qp_attr.sq_psn",
        off ibv_qp_attr.dest_qp_num as "ibv_qp_attr.dest_qp_num",
        off ibv_qp_attr.qp_access_flags as "ibv_qp_attr.qp_access_flags",
        off ibv_qp_attr.ah_attr as "ibv_qp_attr.ah_attr",
        off ibv_qp_attr.pkey_index as "ibv_qp_attr.pkey_index",
        off ibv_qp_attr.max_rd_atomic as "ibv_qp_attr.max_rd_atomic",
        off ibv_qp_attr.max_dest_rd_atomic as "ibv_qp_attr.max_dest_rd_atomic",
        off ibv_qp_attr.min_rnr_timer as "ibv_qp_attr.min_rnr_timer",
        off ibv_qp_attr.port_num as "ibv_qp_attr.port_num",
        off ibv_qp_attr.timeout as "ibv_qp_attr.timeout",
        off ibv_qp_attr.retry_cnt as "ibv_qp_attr.retry_cnt",
        off ibv_qp_attr.rnr_retry as "ibv_qp_attr.rnr_retry",
        off ibv_send_wr.next as "ibv_send_wr.next",
        off ibv_send_wr.sg_list as "ibv_send_wr.sg_list",
        off ibv_send_wr.num_sge as "ibv_send_wr.num_sge",
        off ibv_send_wr.opcode as "ibv_send_wr.opcode",
        off ibv_send_wr.send_flags as "ibv_send_wr.send_flags",
        off ibv_send_wr.__bindgen_anon_1 as "ibv_send_wr.imm_data",
        off ibv_send_wr.wr as "ibv_send_wr.wr",
        off ibv_recv_wr.num_sge as "ibv_recv_wr.num_sge",
        off ibv_wc.status as "ibv_wc.status",
        off ibv_wc.opcode as "ibv_wc.opcode",
        off ibv_wc.byte_len as "ibv_wc.byte_len",
        off ibv_wc.__bindgen_anon_1 as "ibv_wc.imm_data",
        off ibv_wc.qp_num as "ibv_wc.qp_num",
        off ibv_wc.wc_flags as "ibv_wc.wc_flags",
    );
    // SAFETY: the stand-in's initialisers do nothing.
    let lib = unsafe { libloading::Library::new(&lib) }.unwrap();
    // SAFETY: the prototype of the stand-in's `fake_ibv_layout`.
    let query = unsafe {
        lib.get::<unsafe extern "C" fn(*const std::ffi::c_char) -> std::ffi::c_long>(
            b"fake_ibv_layout",
        )
    }
    .unwrap();
    let mut wrong = Vec::new();
    for (name, ours) in &expected {
        let c_name = std::ffi::CString::new(*name).unwrap();
        // SAFETY: a NUL-terminated string that outlives the call.
        let theirs = unsafe { query(c_name.as_ptr()) };
        if theirs != *ours as std::ffi::c_long {
            wrong.push(format!("{name}: bindings {ours}, stand-in {theirs}"));
        }
    }
    assert!(wrong.is_empty(), "layouts differ:\n{}", wrong.join("\n"));
    // The offsets of the ops table are what the inline verbs rely on.
    assert_eq!(offset_of!(ibv_context_ops, poll_cq), 11 * 8);
    assert_eq!(offset_of!(ibv_context_ops, post_send), 25 * 8);
}
