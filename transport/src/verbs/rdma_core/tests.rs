//! The generated bindings against the stand-in libraries of the integration
//! tests (`tests/fake_ibverbs.c`, and `tests/fake_rdmacm.c` which includes
//! it), which declare the libibverbs and librdmacm structs themselves: if
//! the two disagree on a size or offset, the stand-ins would test nothing,
//! so these tests pin them together.

use std::mem::{offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;

use super::sys::*;

/// `tests/<source>` built next to the test executable as `<lib>`, or `None`
/// (with the reason printed) when no C compiler is at hand.
fn build_fake(source: &str, lib: &str) -> Option<PathBuf> {
    let source = format!("{}/tests/{source}", env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::current_exe()
        .ok()?
        .parent()?
        .join("rcud-fake-ibverbs-unit");
    std::fs::create_dir_all(&dir).ok()?;
    let out = dir.join(lib);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    match Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&out)
        .arg(&source)
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
    let Some(lib) = build_fake("fake_ibverbs.c", "libibverbs.so.1") else {
        return;
    };
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
    compare(&lib, b"fake_ibv_layout", &expected);
    // Written by hand from verbs.h (see `events`).
    use super::events::ibv_async_event;
    compare(
        &lib,
        b"fake_ibv_layout",
        &[
            ("sizeof ibv_async_event", size_of::<ibv_async_event>()),
            (
                "ibv_async_event.event_type",
                offset_of!(ibv_async_event, event_type),
            ),
        ],
    );
    // The offsets of the ops table are what the inline verbs rely on.
    assert_eq!(offset_of!(ibv_context_ops, poll_cq), 11 * 8);
    assert_eq!(offset_of!(ibv_context_ops, post_send), 25 * 8);
}

/// Asks the stand-in's `query` (`long f(const char *name)`) for each entry
/// of `expected` and asserts that all agree.
fn compare(lib: &PathBuf, query: &[u8], expected: &[(&str, usize)]) {
    // SAFETY: the stand-in's initialisers do nothing.
    let lib = unsafe { libloading::Library::new(lib) }.unwrap();
    // SAFETY: the prototype of the stand-in's layout queries.
    let query = unsafe {
        lib.get::<unsafe extern "C" fn(*const std::ffi::c_char) -> std::ffi::c_long>(query)
    }
    .unwrap();
    let mut wrong = Vec::new();
    for (name, ours) in expected {
        let c_name = std::ffi::CString::new(*name).unwrap();
        // SAFETY: a NUL-terminated string that outlives the call.
        let theirs = unsafe { query(c_name.as_ptr()) };
        if theirs != *ours as std::ffi::c_long {
            wrong.push(format!("{name}: bindings {ours}, stand-in {theirs}"));
        }
    }
    assert!(wrong.is_empty(), "layouts differ:\n{}", wrong.join("\n"));
}

#[test]
fn cm_bindings_match_the_stand_in_layouts() {
    let Some(lib) = build_fake("fake_rdmacm.c", "libfakerdma.so") else {
        return;
    };
    let expected: Vec<(&str, usize)> = layout!(
        size rdma_event_channel, size rdma_route, size rdma_cm_id, size rdma_conn_param,
        size rdma_cm_event;
        off rdma_cm_id.verbs as "rdma_cm_id.verbs",
        off rdma_cm_id.channel as "rdma_cm_id.channel",
        off rdma_cm_id.qp as "rdma_cm_id.qp",
        off rdma_cm_id.route as "rdma_cm_id.route",
        off rdma_cm_id.ps as "rdma_cm_id.ps",
        off rdma_cm_id.port_num as "rdma_cm_id.port_num",
        off rdma_cm_id.qp_type as "rdma_cm_id.qp_type",
        off rdma_conn_param.private_data_len as "rdma_conn_param.private_data_len",
        off rdma_conn_param.responder_resources as "rdma_conn_param.responder_resources",
        off rdma_conn_param.retry_count as "rdma_conn_param.retry_count",
        off rdma_conn_param.rnr_retry_count as "rdma_conn_param.rnr_retry_count",
        off rdma_conn_param.qp_num as "rdma_conn_param.qp_num",
        off rdma_cm_event.id as "rdma_cm_event.id",
        off rdma_cm_event.listen_id as "rdma_cm_event.listen_id",
        off rdma_cm_event.event as "rdma_cm_event.event",
        off rdma_cm_event.status as "rdma_cm_event.status",
        off rdma_cm_event.param as "rdma_cm_event.param",
    );
    compare(&lib, b"fake_rdmacm_layout", &expected);
}

#[test]
fn raw_async_events_translate() {
    use super::events::*;
    use crate::verbs::AsyncEvent;
    // Queue-pair errors: all three affiliated errors are fatal to the QP.
    for ty in [
        IBV_EVENT_QP_FATAL,
        IBV_EVENT_QP_REQ_ERR,
        IBV_EVENT_QP_ACCESS_ERR,
    ] {
        assert_eq!(element_kind(ty), ElementKind::Qp);
        assert_eq!(
            translate(ty, Element::Qp(0x1234)),
            Some(AsyncEvent::QpFatal { qp_num: 0x1234 })
        );
        // An element of the wrong kind is no event (never a guess).
        assert_eq!(translate(ty, Element::Other), None);
    }
    let port_events = [
        (IBV_EVENT_PORT_ERR, AsyncEvent::PortError { port: 2 }),
        (IBV_EVENT_PORT_ACTIVE, AsyncEvent::PortActive { port: 2 }),
        (IBV_EVENT_LID_CHANGE, AsyncEvent::LidChange { port: 2 }),
    ];
    for (ty, want) in port_events {
        assert_eq!(element_kind(ty), ElementKind::Port);
        assert_eq!(translate(ty, Element::Port(2)), Some(want));
        // A port number out of range is dropped, not wrapped.
        assert_eq!(translate(ty, Element::Port(256)), None);
        assert_eq!(translate(ty, Element::Port(-1)), None);
    }
    assert_eq!(
        translate(IBV_EVENT_DEVICE_FATAL, Element::Other),
        Some(AsyncEvent::DeviceFatal)
    );
    // Events that change nothing here.
    for ty in [
        IBV_EVENT_CQ_ERR,
        IBV_EVENT_COMM_EST,
        IBV_EVENT_SQ_DRAINED,
        IBV_EVENT_PATH_MIG,
        IBV_EVENT_PATH_MIG_ERR,
        IBV_EVENT_PKEY_CHANGE,
        IBV_EVENT_SM_CHANGE,
        IBV_EVENT_QP_LAST_WQE_REACHED,
        IBV_EVENT_CLIENT_REREGISTER,
        IBV_EVENT_GID_CHANGE,
        14,
        15,
        19,
        1000,
    ] {
        let element = match element_kind(ty) {
            ElementKind::Qp => Element::Qp(5),
            ElementKind::Port => Element::Port(1),
            ElementKind::Other => Element::Other,
        };
        assert_eq!(translate(ty, element), None, "event type {ty}");
        assert!(!event_name(ty).is_empty());
    }
    assert_eq!(event_name(IBV_EVENT_PORT_ERR), "PORT_ERR");
}
