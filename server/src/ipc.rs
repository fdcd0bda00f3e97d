//! CUDA IPC between clients of one server (`cudaIpcGetMemHandle`,
//! `cudaIpcOpenMemHandle`, `cudaIpcCloseMemHandle`): two processes on a
//! client host, each with its own connection (and agent), share one
//! allocation.
//!
//! The exported allocation's bytes move into a memory file (`memfd`). The
//! exporting agent keeps the files it exported and hands them, from a
//! thread of its own, to agents of the same server instance that present a
//! handle's ticket on its Unix-domain socket in Linux's abstract namespace
//! (`rcud-ipc/<instance>/<random>`), passing the file descriptor itself
//! (`SCM_RIGHTS`). The opening agent maps the file at a new device address:
//! both clients read and write the same pages, as two processes sharing a
//! GPU allocation do. Both ends check that the other runs as the same user,
//! and an exporter hands a file only to an agent of its own tenant, so a
//! handle is worth nothing to another tenant or another server.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use rcud_proto::ops::Failure;
use rcud_proto::CudaError;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use crate::peer::{self, InstanceId};

/// Bytes of `cudaIpcMemHandle_t`.
pub const HANDLE_BYTES: usize = 64;
const HANDLE_MAGIC: [u8; 4] = *b"rIPC";
/// Opens an opening agent's request.
const REQUEST_MAGIC: [u8; 4] = *b"rIPQ";
/// Longest tenant name a request carries.
const MAX_TENANT: usize = 512;
/// How often the serving thread looks whether its agent is gone.
const STOP_POLL: Duration = Duration::from_millis(100);

/// rcud's `cudaIpcMemHandle_t`: the exporting agent's socket and the
/// ticket of one exported allocation.
///
/// | offset | field |
/// |---|---|
/// | 0 | magic `rIPC` |
/// | 4 | reserved, 0 |
/// | 8 | server instance (16 bytes) |
/// | 24 | port: the random part of the socket name (8 bytes) |
/// | 32 | ticket (16 bytes) |
/// | 48 | the allocation's length, `u64` little-endian |
/// | 56 | reserved, 0 |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemHandle {
    instance: InstanceId,
    port: [u8; 8],
    ticket: [u8; 16],
    len: u64,
}

impl MemHandle {
    /// The handle's bytes.
    pub fn encode(&self) -> [u8; HANDLE_BYTES] {
        let mut b = [0u8; HANDLE_BYTES];
        b[..4].copy_from_slice(&HANDLE_MAGIC);
        b[8..24].copy_from_slice(&self.instance.0);
        b[24..32].copy_from_slice(&self.port);
        b[32..48].copy_from_slice(&self.ticket);
        b[48..56].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Reads a handle; `None` for bytes no rcud server made.
    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != HANDLE_BYTES || b[..4] != HANDLE_MAGIC {
            return None;
        }
        let mut instance = [0u8; 16];
        instance.copy_from_slice(&b[8..24]);
        let mut port = [0u8; 8];
        port.copy_from_slice(&b[24..32]);
        let mut ticket = [0u8; 16];
        ticket.copy_from_slice(&b[32..48]);
        let mut len = [0u8; 8];
        len.copy_from_slice(&b[48..56]);
        Some(Self {
            instance: InstanceId(instance),
            port,
            ticket,
            len: u64::from_le_bytes(len),
        })
    }

    fn endpoint(&self) -> String {
        endpoint_name(self.instance, &self.port)
    }
}

fn endpoint_name(instance: InstanceId, port: &[u8; 8]) -> String {
    format!("rcud-ipc/{instance}/{}", peer::hex(port))
}

/// One exported allocation.
struct Export {
    ptr: u64,
    memory: File,
    len: u64,
    tenant: String,
}

type Exports = Arc<Mutex<HashMap<[u8; 16], Export>>>;

fn lock(exports: &Exports) -> std::sync::MutexGuard<'_, HashMap<[u8; 16], Export>> {
    exports.lock().unwrap_or_else(|p| p.into_inner())
}

/// An agent's exported allocations and the thread that hands them out.
pub struct IpcPort {
    instance: InstanceId,
    port: [u8; 8],
    exports: Exports,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl IpcPort {
    /// Binds the agent's socket and starts serving it.
    pub fn open(instance: InstanceId) -> io::Result<Self> {
        let port: [u8; 8] = peer::random_bytes()?;
        let addr = SocketAddr::from_abstract_name(endpoint_name(instance, &port).as_bytes())?;
        let listener = UnixListener::bind_addr(&addr)?;
        listener.set_nonblocking(true)?;
        let exports: Exports = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new().name("rcud-ipc".into()).spawn({
            let (exports, stop) = (exports.clone(), stop.clone());
            move || serve(&listener, &exports, &stop)
        })?;
        Ok(Self {
            instance,
            port,
            exports,
            stop,
            thread: Some(thread),
        })
    }

    /// Exports an allocation (`ptr` its start) of `len` bytes in `memory`
    /// to agents of `tenant`: the handle that opens it.
    pub fn export(&self, ptr: u64, memory: File, len: u64, tenant: &str) -> io::Result<MemHandle> {
        let mut exports = lock(&self.exports);
        // One handle per allocation, as CUDA gives the same one each time.
        if let Some((ticket, e)) = exports.iter().find(|(_, e)| e.ptr == ptr) {
            return Ok(MemHandle {
                instance: self.instance,
                port: self.port,
                ticket: *ticket,
                len: e.len,
            });
        }
        let ticket = peer::random_bytes()?;
        exports.insert(
            ticket,
            Export {
                ptr,
                memory,
                len,
                tenant: tenant.to_string(),
            },
        );
        Ok(MemHandle {
            instance: self.instance,
            port: self.port,
            ticket,
            len,
        })
    }

    /// Whether `handle` is one of this port's.
    pub fn owns(&self, handle: &MemHandle) -> bool {
        handle.instance == self.instance && handle.port == self.port
    }

    /// The allocation at `ptr` is freed: its handle opens nothing more
    /// (those who opened it keep their mapping).
    pub fn forget(&self, ptr: u64) {
        lock(&self.exports).retain(|_, e| e.ptr != ptr);
    }
}

impl Drop for IpcPort {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The serving thread: answers each opening agent in turn until the
/// agent that owns the port is gone.
fn serve(listener: &UnixListener, exports: &Exports, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        let timeout = PollTimeout::try_from(STOP_POLL).unwrap_or(PollTimeout::MAX);
        match poll(&mut fds, timeout) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                tracing::warn!("CUDA IPC: the export socket failed: {e}");
                return;
            }
        }
        match listener.accept() {
            Ok((mut stream, _)) => {
                if let Err(e) = answer(&mut stream, exports) {
                    tracing::debug!("CUDA IPC: an opening agent was not served: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => tracing::debug!("CUDA IPC: accept: {e}"),
        }
    }
}

/// Reads one request and answers with a status, the length and, when the
/// ticket and tenant match, the memory file.
fn answer(stream: &mut UnixStream, exports: &Exports) -> io::Result<()> {
    peer::prepare(stream).map_err(io::Error::other)?;
    let mut head = [0u8; 22];
    stream.read_exact(&mut head)?;
    if head[..4] != REQUEST_MAGIC {
        return Err(io::Error::other("not an IPC request"));
    }
    let mut ticket = [0u8; 16];
    ticket.copy_from_slice(&head[4..20]);
    let tenant_len = usize::from(u16::from_le_bytes([head[20], head[21]]));
    if tenant_len > MAX_TENANT {
        return Err(io::Error::other("tenant name too long"));
    }
    let mut tenant = vec![0u8; tenant_len];
    stream.read_exact(&mut tenant)?;
    let exports = lock(exports);
    let export = exports
        .get(&ticket)
        .filter(|e| e.tenant.as_bytes() == tenant.as_slice());
    let Some(export) = export else {
        return reply(stream, CudaError::INVALID_RESOURCE_HANDLE, 0, None);
    };
    reply(stream, CudaError::SUCCESS, export.len, Some(&export.memory))
}

fn reply(
    stream: &mut UnixStream,
    status: CudaError,
    len: u64,
    memory: Option<&File>,
) -> io::Result<()> {
    let mut msg = [0u8; 12];
    msg[..4].copy_from_slice(&status.0.to_le_bytes());
    msg[4..].copy_from_slice(&len.to_le_bytes());
    let Some(memory) = memory else {
        return stream.write_all(&msg);
    };
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [memory.as_fd()];
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("control buffer too small"));
    }
    let sent = rustix::net::sendmsg(
        &*stream,
        &[IoSlice::new(&msg)],
        &mut control,
        SendFlags::empty(),
    )?;
    if sent != msg.len() {
        return Err(io::Error::other("short IPC reply"));
    }
    Ok(())
}

/// The opening side: fetches the memory file of `handle` from its
/// exporter, an agent of server `instance`, for an agent of `tenant`.
pub fn fetch(
    handle: &MemHandle,
    instance: InstanceId,
    tenant: &str,
) -> Result<(File, u64), Failure> {
    let invalid = |why: &str| {
        Failure::new(
            CudaError::INVALID_RESOURCE_HANDLE,
            format!("cudaIpcOpenMemHandle: {why}"),
        )
    };
    if instance.is_none() || handle.instance != instance {
        return Err(invalid("the handle comes from another server"));
    }
    if tenant.len() > MAX_TENANT {
        return Err(invalid("tenant name too long"));
    }
    let gone = |e: io::Error| {
        Failure::new(
            CudaError::INVALID_RESOURCE_HANDLE,
            format!("cudaIpcOpenMemHandle: the exporting process is gone or did not answer ({e})"),
        )
    };
    let addr = SocketAddr::from_abstract_name(handle.endpoint().as_bytes()).map_err(gone)?;
    let mut stream = UnixStream::connect_addr(&addr).map_err(gone)?;
    peer::prepare(&stream).map_err(|e| gone(io::Error::other(e)))?;
    let mut request = Vec::with_capacity(22 + tenant.len());
    request.extend_from_slice(&REQUEST_MAGIC);
    request.extend_from_slice(&handle.ticket);
    request.extend_from_slice(&(tenant.len() as u16).to_le_bytes());
    request.extend_from_slice(tenant.as_bytes());
    stream.write_all(&request).map_err(gone)?;

    let mut msg = [0u8; 12];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        &stream,
        &mut [IoSliceMut::new(&mut msg)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|e| gone(e.into()))?;
    let memory = control.drain().find_map(|m| match m {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    });
    if got.bytes < 4 {
        return Err(gone(io::ErrorKind::UnexpectedEof.into()));
    }
    let status = CudaError(u32::from_le_bytes([msg[0], msg[1], msg[2], msg[3]]));
    if got.bytes == 4 || status != CudaError::SUCCESS {
        return Err(invalid(
            "no allocation of this tenant has this handle (freed, or never exported)",
        ));
    }
    if got.bytes < msg.len() {
        return Err(gone(io::ErrorKind::UnexpectedEof.into()));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&msg[4..12]);
    let memory = memory.ok_or_else(|| invalid("the exporter sent no memory"))?;
    Ok((File::from(memory), u64::from_le_bytes(len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_foreign_bytes_are_refused() {
        let h = MemHandle {
            instance: InstanceId([7; 16]),
            port: [1, 2, 3, 4, 5, 6, 7, 8],
            ticket: [9; 16],
            len: 4096,
        };
        assert_eq!(MemHandle::decode(&h.encode()), Some(h));
        assert_eq!(MemHandle::decode(&[0u8; 64]), None);
        assert_eq!(MemHandle::decode(&h.encode()[..63]), None);
    }

    #[test]
    fn an_exported_file_reaches_an_agent_of_the_same_tenant_only() {
        let instance = InstanceId::random().expect("random");
        let port = IpcPort::open(instance).expect("port");
        let file = tempfile::tempfile().expect("file");
        file.set_len(8192).expect("len");
        let handle = port.export(0x1000, file, 8192, "tenant a").expect("export");
        assert_eq!(
            port.export(
                0x1000,
                tempfile::tempfile().expect("file"),
                8192,
                "tenant a"
            )
            .ok(),
            Some(handle)
        );
        let (memory, len) = fetch(&handle, instance, "tenant a").expect("fetch");
        assert_eq!((len, memory.metadata().expect("meta").len()), (8192, 8192));
        let other = fetch(&handle, instance, "tenant b").expect_err("other tenant");
        assert_eq!(other.code, CudaError::INVALID_RESOURCE_HANDLE);
        let elsewhere = fetch(&handle, InstanceId([1; 16]), "tenant a").expect_err("other server");
        assert_eq!(elsewhere.code, CudaError::INVALID_RESOURCE_HANDLE);
        port.forget(0x1000);
        assert!(fetch(&handle, instance, "tenant a").is_err(), "freed");
        drop(port);
        assert!(
            fetch(&handle, instance, "tenant a").is_err(),
            "exporter gone"
        );
    }
}
