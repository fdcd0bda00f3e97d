//! libibverbs and librdmacm, opened at run time with every entry point the
//! provider calls resolved up front. A host without rdma-core gets an
//! [`Unavailable`] value naming the library and what to install, never a
//! panic or a failure to start.
//!
//! `ibv_post_send`, `ibv_post_recv`, `ibv_poll_cq` and `ibv_req_notify_cq` are
//! `static inline` in verbs.h (dlsym cannot find them): the provider calls them
//! through the context's ops table, as the header does.

use std::ffi::{c_char, c_int, c_uint, c_void, OsString};
use std::sync::OnceLock;

use libc::sockaddr;

use super::events::ibv_async_event;
use super::sys::*;
use super::Unavailable;

/// The file name rdma-core installs libibverbs under.
pub(super) const IBVERBS_LIBRARY: &str = "libibverbs.so.1";
/// The file name rdma-core installs librdmacm under.
pub(super) const RDMACM_LIBRARY: &str = "librdmacm.so.1";
/// Overrides the path of libibverbs (a build of rdma-core elsewhere, or a
/// stand-in in tests).
pub(super) const IBVERBS_ENV: &str = "RCUD_IBVERBS_LIBRARY";
/// Overrides the path of librdmacm.
pub(super) const RDMACM_ENV: &str = "RCUD_RDMACM_LIBRARY";

/// The entry points of libibverbs the provider uses; prototypes as in verbs.h.
pub(super) struct Ibverbs {
    pub(super) get_device_list: unsafe extern "C" fn(*mut c_int) -> *mut *mut ibv_device,
    pub(super) free_device_list: unsafe extern "C" fn(*mut *mut ibv_device),
    pub(super) get_device_name: unsafe extern "C" fn(*mut ibv_device) -> *const c_char,
    pub(super) open_device: unsafe extern "C" fn(*mut ibv_device) -> *mut ibv_context,
    pub(super) close_device: unsafe extern "C" fn(*mut ibv_context) -> c_int,
    pub(super) query_device: unsafe extern "C" fn(*mut ibv_context, *mut ibv_device_attr) -> c_int,
    /// The exported `ibv_query_port` (the header's macro falls back to it):
    /// declared for the compat attribute struct, which is a prefix of
    /// `ibv_port_attr`; the provider always passes a zeroed full struct.
    pub(super) query_port: unsafe extern "C" fn(*mut ibv_context, u8, *mut ibv_port_attr) -> c_int,
    pub(super) query_gid: unsafe extern "C" fn(*mut ibv_context, u8, c_int, *mut ibv_gid) -> c_int,
    pub(super) alloc_pd: unsafe extern "C" fn(*mut ibv_context) -> *mut ibv_pd,
    pub(super) dealloc_pd: unsafe extern "C" fn(*mut ibv_pd) -> c_int,
    /// The exported `ibv_reg_mr` (the header's macro calls it when no
    /// optional access flag is given, as here).
    pub(super) reg_mr: unsafe extern "C" fn(*mut ibv_pd, *mut c_void, usize, c_int) -> *mut ibv_mr,
    pub(super) dereg_mr: unsafe extern "C" fn(*mut ibv_mr) -> c_int,
    pub(super) create_comp_channel: unsafe extern "C" fn(*mut ibv_context) -> *mut ibv_comp_channel,
    pub(super) destroy_comp_channel: unsafe extern "C" fn(*mut ibv_comp_channel) -> c_int,
    pub(super) create_cq: unsafe extern "C" fn(
        *mut ibv_context,
        c_int,
        *mut c_void,
        *mut ibv_comp_channel,
        c_int,
    ) -> *mut ibv_cq,
    pub(super) destroy_cq: unsafe extern "C" fn(*mut ibv_cq) -> c_int,
    pub(super) get_cq_event:
        unsafe extern "C" fn(*mut ibv_comp_channel, *mut *mut ibv_cq, *mut *mut c_void) -> c_int,
    pub(super) ack_cq_events: unsafe extern "C" fn(*mut ibv_cq, c_uint),
    pub(super) create_qp: unsafe extern "C" fn(*mut ibv_pd, *mut ibv_qp_init_attr) -> *mut ibv_qp,
    pub(super) modify_qp: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int) -> c_int,
    pub(super) query_qp:
        unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int, *mut ibv_qp_init_attr) -> c_int,
    pub(super) destroy_qp: unsafe extern "C" fn(*mut ibv_qp) -> c_int,
    pub(super) get_async_event:
        unsafe extern "C" fn(*mut ibv_context, *mut ibv_async_event) -> c_int,
    pub(super) ack_async_event: unsafe extern "C" fn(*mut ibv_async_event),
    _library: libloading::Library,
}

/// The entry points of librdmacm the connection manager uses.
pub(super) struct Rdmacm {
    pub(super) create_event_channel: unsafe extern "C" fn() -> *mut rdma_event_channel,
    pub(super) destroy_event_channel: unsafe extern "C" fn(*mut rdma_event_channel),
    pub(super) create_id: unsafe extern "C" fn(
        *mut rdma_event_channel,
        *mut *mut rdma_cm_id,
        *mut c_void,
        rdma_port_space,
    ) -> c_int,
    pub(super) destroy_id: unsafe extern "C" fn(*mut rdma_cm_id) -> c_int,
    pub(super) bind_addr: unsafe extern "C" fn(*mut rdma_cm_id, *mut sockaddr) -> c_int,
    pub(super) listen: unsafe extern "C" fn(*mut rdma_cm_id, c_int) -> c_int,
    pub(super) resolve_addr:
        unsafe extern "C" fn(*mut rdma_cm_id, *mut sockaddr, *mut sockaddr, c_int) -> c_int,
    pub(super) resolve_route: unsafe extern "C" fn(*mut rdma_cm_id, c_int) -> c_int,
    pub(super) create_qp:
        unsafe extern "C" fn(*mut rdma_cm_id, *mut ibv_pd, *mut ibv_qp_init_attr) -> c_int,
    pub(super) destroy_qp: unsafe extern "C" fn(*mut rdma_cm_id),
    pub(super) connect: unsafe extern "C" fn(*mut rdma_cm_id, *mut rdma_conn_param) -> c_int,
    pub(super) accept: unsafe extern "C" fn(*mut rdma_cm_id, *mut rdma_conn_param) -> c_int,
    pub(super) reject: unsafe extern "C" fn(*mut rdma_cm_id, *const c_void, u8) -> c_int,
    pub(super) disconnect: unsafe extern "C" fn(*mut rdma_cm_id) -> c_int,
    pub(super) get_cm_event:
        unsafe extern "C" fn(*mut rdma_event_channel, *mut *mut rdma_cm_event) -> c_int,
    pub(super) ack_cm_event: unsafe extern "C" fn(*mut rdma_cm_event) -> c_int,
    pub(super) event_str: unsafe extern "C" fn(rdma_cm_event_type) -> *const c_char,
    pub(super) get_src_port: unsafe extern "C" fn(*mut rdma_cm_id) -> u16,
    pub(super) migrate_id: unsafe extern "C" fn(*mut rdma_cm_id, *mut rdma_event_channel) -> c_int,
    _library: libloading::Library,
}

/// A loader error with the messages of its sources.
fn loader_text(e: &libloading::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn open(default: &str, env: &str) -> Result<(libloading::Library, String), Unavailable> {
    let path: OsString = std::env::var_os(env).unwrap_or_else(|| default.into());
    let shown = path.to_string_lossy().into_owned();
    // SAFETY: opening a library runs its initialisers; rdma-core's libraries
    // are made to be opened by any process (the providers of libibverbs are
    // themselves loaded this way). A different library under that name is
    // outside what any program can defend against.
    match unsafe { libloading::Library::new(&path) } {
        Ok(lib) => Ok((lib, shown)),
        Err(e) => Err(Unavailable::Library {
            library: shown,
            reason: loader_text(&e),
            env: env.to_owned(),
        }),
    }
}

/// Resolves `name` in `lib` as a value of type `T`.
///
/// # Safety
///
/// `T` must be the `unsafe extern "C" fn` type of the C prototype of `name`,
/// and the result must not outlive `lib`.
unsafe fn symbol<T: Copy>(
    lib: &libloading::Library,
    library: &str,
    name: &'static str,
) -> Result<T, Unavailable> {
    // SAFETY: forwarded from the caller.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| Unavailable::Symbol {
            library: library.to_owned(),
            symbol: name,
            reason: loader_text(&e),
        })
}

impl Ibverbs {
    fn load() -> Result<Self, Unavailable> {
        let (library, shown) = open(IBVERBS_LIBRARY, IBVERBS_ENV)?;
        let (lib, n) = (&library, shown.as_str());
        // SAFETY: for every `symbol` call below, the type of the field it
        // initialises is the prototype of that entry point in verbs.h, and
        // the pointers are stored next to `library`, which outlives them.
        unsafe {
            Ok(Self {
                get_device_list: symbol(lib, n, "ibv_get_device_list")?,
                free_device_list: symbol(lib, n, "ibv_free_device_list")?,
                get_device_name: symbol(lib, n, "ibv_get_device_name")?,
                open_device: symbol(lib, n, "ibv_open_device")?,
                close_device: symbol(lib, n, "ibv_close_device")?,
                query_device: symbol(lib, n, "ibv_query_device")?,
                query_port: symbol(lib, n, "ibv_query_port")?,
                query_gid: symbol(lib, n, "ibv_query_gid")?,
                alloc_pd: symbol(lib, n, "ibv_alloc_pd")?,
                dealloc_pd: symbol(lib, n, "ibv_dealloc_pd")?,
                reg_mr: symbol(lib, n, "ibv_reg_mr")?,
                dereg_mr: symbol(lib, n, "ibv_dereg_mr")?,
                create_comp_channel: symbol(lib, n, "ibv_create_comp_channel")?,
                destroy_comp_channel: symbol(lib, n, "ibv_destroy_comp_channel")?,
                create_cq: symbol(lib, n, "ibv_create_cq")?,
                destroy_cq: symbol(lib, n, "ibv_destroy_cq")?,
                get_cq_event: symbol(lib, n, "ibv_get_cq_event")?,
                ack_cq_events: symbol(lib, n, "ibv_ack_cq_events")?,
                create_qp: symbol(lib, n, "ibv_create_qp")?,
                modify_qp: symbol(lib, n, "ibv_modify_qp")?,
                query_qp: symbol(lib, n, "ibv_query_qp")?,
                destroy_qp: symbol(lib, n, "ibv_destroy_qp")?,
                get_async_event: symbol(lib, n, "ibv_get_async_event")?,
                ack_async_event: symbol(lib, n, "ibv_ack_async_event")?,
                _library: library,
            })
        }
    }
}

impl Rdmacm {
    fn load() -> Result<Self, Unavailable> {
        let (library, shown) = open(RDMACM_LIBRARY, RDMACM_ENV)?;
        let (lib, n) = (&library, shown.as_str());
        // SAFETY: as in `Ibverbs::load`, with the prototypes of rdma_cma.h.
        unsafe {
            Ok(Self {
                create_event_channel: symbol(lib, n, "rdma_create_event_channel")?,
                destroy_event_channel: symbol(lib, n, "rdma_destroy_event_channel")?,
                create_id: symbol(lib, n, "rdma_create_id")?,
                destroy_id: symbol(lib, n, "rdma_destroy_id")?,
                bind_addr: symbol(lib, n, "rdma_bind_addr")?,
                listen: symbol(lib, n, "rdma_listen")?,
                resolve_addr: symbol(lib, n, "rdma_resolve_addr")?,
                resolve_route: symbol(lib, n, "rdma_resolve_route")?,
                create_qp: symbol(lib, n, "rdma_create_qp")?,
                destroy_qp: symbol(lib, n, "rdma_destroy_qp")?,
                connect: symbol(lib, n, "rdma_connect")?,
                accept: symbol(lib, n, "rdma_accept")?,
                reject: symbol(lib, n, "rdma_reject")?,
                disconnect: symbol(lib, n, "rdma_disconnect")?,
                get_cm_event: symbol(lib, n, "rdma_get_cm_event")?,
                ack_cm_event: symbol(lib, n, "rdma_ack_cm_event")?,
                event_str: symbol(lib, n, "rdma_event_str")?,
                get_src_port: symbol(lib, n, "rdma_get_src_port")?,
                migrate_id: symbol(lib, n, "rdma_migrate_id")?,
                _library: library,
            })
        }
    }
}

/// libibverbs, loaded on first use (once per process: the environment
/// override is read then).
pub(super) fn ibverbs() -> Result<&'static Ibverbs, Unavailable> {
    static LIB: OnceLock<Result<Ibverbs, Unavailable>> = OnceLock::new();
    LIB.get_or_init(|| {
        let r = Ibverbs::load();
        if let Err(e) = &r {
            tracing::debug!("rdma-core verbs provider unavailable: {e}");
        }
        r
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// librdmacm, loaded on first use.
pub(super) fn rdmacm() -> Result<&'static Rdmacm, Unavailable> {
    static LIB: OnceLock<Result<Rdmacm, Unavailable>> = OnceLock::new();
    LIB.get_or_init(Rdmacm::load).as_ref().map_err(Clone::clone)
}

/// The `errno` of the last failed call on this thread.
pub(super) fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// The error of a verbs call that returns 0 or an error number (most do;
/// some older providers return -1 and set `errno`).
pub(super) fn status_error(ret: c_int) -> std::io::Error {
    if ret > 0 {
        std::io::Error::from_raw_os_error(ret)
    } else {
        errno()
    }
}
