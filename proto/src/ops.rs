//! The table of operations: one request and one reply per CUDA operation.
//!
//! Everything about an operation — its id, its request fields, its reply fields,
//! and whether a bulk payload travels with the request or the reply — is declared
//! once in the [`ops!`] table below; the request enum, the codec and the
//! dispatch helpers are generated from it. Op ids are explicit and never reused.
//!
//! On the wire a reply body is a status (`u32`, a `cudaError_t`) followed by the
//! reply fields only when the status is `cudaSuccess`.

use crate::codec::{Blob, DecodeError, Reader, Wire, Writer};
use crate::cuda_error::CudaError;
use crate::device::DeviceProps;

/// `cudaFuncAttributeMaxDynamicSharedMemorySize`.
pub const ATTR_MAX_DYNAMIC_SHARED: i32 = 8;
/// `cudaFuncAttributePreferredSharedMemoryCarveout`.
pub const ATTR_CARVEOUT: i32 = 9;

/// `cudaLimitStackSize`.
pub const LIMIT_STACK_SIZE: i32 = 0;
/// `cudaLimitPrintfFifoSize`.
pub const LIMIT_PRINTF_FIFO_SIZE: i32 = 1;
/// `cudaLimitMallocHeapSize`.
pub const LIMIT_MALLOC_HEAP_SIZE: i32 = 2;

crate::wire_struct! {
    /// A client holding a GPU, as [`req::DeviceStatus`] reports it.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct ProcessStatus {
        /// The client's process id on its own host (0 if unknown or hidden).
        pub pid: u32,
        /// Device memory its context holds, in bytes.
        pub memory: u64,
        /// Its self-description, e.g. `python3 (pid 42)`; empty when hidden
        /// from a client of another tenant.
        pub client: String,
        /// Its tenant; empty without tenants or when hidden.
        pub tenant: String,
    }
}

crate::wire_struct! {
    /// What `cudaFuncGetAttributes` reports about a kernel.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct FuncAttributes {
        /// Static shared memory per block, in bytes.
        pub shared_size_bytes: u64,
        /// Constant memory the kernel uses, in bytes.
        pub const_size_bytes: u64,
        /// Local memory per thread, in bytes.
        pub local_size_bytes: u64,
        /// Largest block the kernel can be launched with.
        pub max_threads_per_block: i32,
        /// Registers per thread.
        pub num_regs: i32,
        /// PTX version the kernel was compiled for (e.g. 80).
        pub ptx_version: i32,
        /// Binary architecture (e.g. 80).
        pub binary_version: i32,
        /// Largest dynamic shared memory a launch may request.
        pub max_dynamic_shared_size_bytes: i32,
        /// Preferred shared-memory carveout, in percent (-1: no preference).
        pub preferred_shmem_carveout: i32,
    }
}

impl FuncAttributes {
    /// Blocks of `block_size` threads with `dynamic_smem` bytes of dynamic
    /// shared memory that one multiprocessor of `props` holds at once: what
    /// `cudaOccupancyMaxActiveBlocksPerMultiprocessor` reports and what a
    /// cooperative launch may have per multiprocessor.
    pub fn blocks_per_multiprocessor(
        &self,
        props: &DeviceProps,
        block_size: u32,
        dynamic_smem: u64,
    ) -> u32 {
        let warp = props.warp_size.max(1) as u64;
        let warps_per_block = u64::from(block_size.max(1)).div_ceil(warp);
        let by_threads =
            (props.max_threads_per_multi_processor.max(0) as u64 / warp) / warps_per_block;
        let shared = self.shared_size_bytes.saturating_add(dynamic_smem);
        let by_shared = match shared {
            0 => u64::MAX,
            s => props.shared_mem_per_multiprocessor / s,
        };
        let regs = (self.num_regs.max(1) as u64).saturating_mul(u64::from(block_size.max(1)));
        let by_regs = props.regs_per_multiprocessor.max(0) as u64 / regs;
        let blocks = by_threads
            .min(by_shared)
            .min(by_regs)
            .min(props.max_blocks_per_multi_processor.max(0) as u64);
        u32::try_from(blocks).unwrap_or(u32::MAX)
    }

    /// The most blocks a cooperative launch of this kernel may have on a
    /// device of `props`: all of them resident at once.
    pub fn max_cooperative_blocks(
        &self,
        props: &DeviceProps,
        block_size: u32,
        dynamic_smem: u64,
    ) -> u64 {
        u64::from(self.blocks_per_multiprocessor(props, block_size, dynamic_smem))
            * props.multi_processor_count.max(0) as u64
    }
}

/// Operation id carried in every frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpId(pub u16);

/// Which side of an operation carries a bulk payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bulk {
    /// Neither request nor reply.
    None,
    /// The request carries the bytes (host to device).
    Request,
    /// The reply carries the bytes (device to host).
    Reply,
}

/// A request type of the table, tied to its id and reply.
pub trait Op: Wire + Into<Request> {
    /// Wire id.
    const ID: OpId;
    /// Where this operation's bulk payload goes.
    const BULK: Bulk;
    /// The fields of a successful reply.
    type Reply: Wire;
}

macro_rules! ops {
    ($(
        $(#[$doc:meta])*
        $id:literal $name:ident { $($field:ident : $ty:ty),* $(,)? }
            -> { $($rfield:ident : $rty:ty),* $(,)? } bulk $bulk:ident;
    )*) => {
        /// Request bodies, one struct per operation.
        pub mod req {
            #[allow(unused_imports)]
            use super::*;
            $(
                crate::wire_struct! {
                    $(#[$doc])*
                    #[derive(Debug, Clone, PartialEq, Eq)]
                    pub struct $name { $(#[allow(missing_docs)] pub $field: $ty),* }
                }
                impl super::Op for $name {
                    const ID: super::OpId = super::OpId($id);
                    const BULK: super::Bulk = super::Bulk::$bulk;
                    type Reply = super::rep::$name;
                }
                impl From<$name> for super::Request {
                    fn from(r: $name) -> Self { super::Request::$name(r) }
                }
            )*
        }

        /// Successful reply bodies, one struct per operation.
        pub mod rep {
            #[allow(unused_imports)]
            use super::*;
            $(
                crate::wire_struct! {
                    #[doc = concat!("Reply to [`req::", stringify!($name), "`](super::req::", stringify!($name), ").")]
                    #[derive(Debug, Clone, PartialEq)]
                    pub struct $name { $(#[allow(missing_docs)] pub $rfield: $rty),* }
                }
            )*
        }

        /// Any request of the table.
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[allow(missing_docs)]
        pub enum Request { $($name(req::$name)),* }

        impl Request {
            /// The operation's wire id.
            pub fn op(&self) -> OpId {
                match self { $(Request::$name(_) => OpId($id)),* }
            }

            /// Where the operation's bulk payload travels.
            pub fn bulk(&self) -> Bulk {
                match self { $(Request::$name(_) => Bulk::$bulk),* }
            }

            /// The operation's name, for logs.
            pub fn name(&self) -> &'static str {
                match self { $(Request::$name(_) => stringify!($name)),* }
            }

            /// Appends the request body (not the header).
            pub fn encode(&self, w: &mut Writer<'_>) {
                match self { $(Request::$name(r) => r.encode(w)),* }
            }

            /// Decodes the body of a request whose header named `op`.
            pub fn decode(op: u16, body: &[u8]) -> Result<Self, DecodeError> {
                let mut r = Reader::new(body);
                let req = match op {
                    $($id => Request::$name(req::$name::decode(&mut r)?),)*
                    _ => return Err(DecodeError::Invalid("operation id")),
                };
                r.finish()?;
                Ok(req)
            }
        }
    };
}

ops! {
    /// Bind this connection to one GPU of the server; memory operations need it.
    0x0001 Attach { gpu: u32, window: u32 } -> {} bulk None;
    /// Properties and attribute table of one GPU (no attach needed).
    0x0002 GetDeviceInfo { gpu: u32 } -> { props: DeviceProps, attributes: Vec<(i32, i32)> } bulk None;
    /// Free and total memory of the attached GPU.
    0x0003 MemGetInfo {} -> { free: u64, total: u64 } bulk None;
    /// Wait for all work of this client on the attached GPU.
    0x0004 DeviceSynchronize {} -> {} bulk None;
    /// Release everything this client holds on the attached GPU.
    0x0005 DeviceReset {} -> {} bulk None;
    /// What `rcud smi` and NVML show of one GPU (no attach needed): memory
    /// used by the server's clients and the device's total, utilisation in
    /// percent over the last second, the clients attached to it, and the
    /// asking client's tenant.
    0x0006 DeviceStatus { gpu: u32 } -> {
        memory_used: u64,
        memory_total: u64,
        utilisation_gpu: u32,
        utilisation_memory: u32,
        processes: Vec<ProcessStatus>,
        tenant: String
    } bulk None;
    /// Names this session so that it can be resumed on a new connection
    /// after this one breaks: a random id and the secret that proves
    /// ownership (sent only over the established channel, TLS when the
    /// server speaks it). All zeros: the server does not keep sessions.
    0x0008 SessionOpen {} -> { session: [u8; 16], secret: [u8; 32] } bulk None;
    /// First request on a connection that resumes a session: `proof` is the
    /// HMAC of the new connection's session key under the session's secret,
    /// `last_reply` the id of the last reply the client received whole. The
    /// server answers with the id of the last request it executed, then
    /// sends again every reply after `last_reply`.
    0x0009 SessionResume { proof: [u8; 32], last_reply: u32 } -> { last_executed: u32 } bulk None;
    /// Allocate device memory.
    0x0010 Malloc { size: u64 } -> { ptr: u64 } bulk None;
    /// Free device memory; `ptr` must be the start of an allocation.
    0x0011 Free { ptr: u64 } -> {} bulk None;
    /// Copy `len` bytes, sent as the bulk payload, to device address `dst`.
    0x0012 MemcpyHtoD { dst: u64, len: u64 } -> {} bulk Request;
    /// Copy `len` bytes from device address `src`; they come back as the bulk payload.
    0x0013 MemcpyDtoH { src: u64, len: u64 } -> {} bulk Reply;
    /// Copy between two device addresses of the attached GPU.
    0x0014 MemcpyDtoD { dst: u64, src: u64, len: u64 } -> {} bulk None;
    /// Fill `len` bytes at `dst` with the low byte of `value`.
    0x0015 Memset { dst: u64, value: u8, len: u64 } -> {} bulk None;
    /// Copy `height` rows of `width` bytes, sent packed as the bulk payload,
    /// to rows `dpitch` bytes apart at `dst`.
    0x0016 Memcpy2DHtoD { dst: u64, dpitch: u64, width: u64, height: u64 } -> {} bulk Request;
    /// Copy `height` rows of `width` bytes, `spitch` apart at `src`; they come
    /// back packed as the bulk payload.
    0x0017 Memcpy2DDtoH { src: u64, spitch: u64, width: u64, height: u64 } -> {} bulk Reply;
    /// Copy rows between two pitched regions of the attached GPU.
    0x0018 Memcpy2DDtoD { dst: u64, dpitch: u64, src: u64, spitch: u64, width: u64, height: u64 } -> {} bulk None;
    /// Fill `height` rows of `width` bytes, `pitch` apart.
    0x0019 Memset2D { dst: u64, pitch: u64, value: u8, width: u64, height: u64 } -> {} bulk None;
    /// Load a fat binary the server already holds, by content hash; fails with
    /// `cudaErrorInvalidValue` when the server does not have it.
    0x0020 ModuleLoadCached { hash: [u8; 32] } -> { module: u32 } bulk None;
    /// Load a fat binary image of `len` bytes, sent as the bulk payload.
    0x0021 ModuleLoad { hash: [u8; 32], len: u64 } -> { module: u32 } bulk Request;
    /// Look up a kernel of a loaded module by its mangled name.
    0x0022 ModuleGetFunction { module: u32, name: String } -> { function: u32, attributes: FuncAttributes } bulk None;
    /// Device address and size of a module-scope variable.
    0x0023 ModuleGetGlobal { module: u32, name: String } -> { ptr: u64, size: u64 } bulk None;
    /// `cudaFuncSetAttribute`.
    0x0024 FuncSetAttribute { function: u32, attr: i32, value: i32 } -> {} bulk None;
    /// Record an event: the reply carries the server's monotonic clock, in
    /// nanoseconds, at the moment the work before it completed.
    0x0030 EventRecord {} -> { timestamp_ns: u64 } bulk None;
    /// Launch a kernel; `params` are packed at the kernel's parameter offsets.
    /// The reply carries the kernel's device `printf` output.
    0x0025 LaunchKernel { function: u32, grid: [u32; 3], block: [u32; 3], shared_mem: u32, stream: u64, params: Blob } -> { printf: Blob } bulk None;
    /// `cudaLaunchCooperativeKernel`: like [`req::LaunchKernel`], with every
    /// block resident at once and cooperative groups' `grid.sync()`
    /// available; a grid larger than the device can hold fails with
    /// `cudaErrorCooperativeLaunchTooLarge`.
    0x0054 LaunchCooperative { function: u32, grid: [u32; 3], block: [u32; 3], shared_mem: u32, stream: u64, params: Blob } -> { printf: Blob } bulk None;
    /// First step of a copy between two GPUs of one server: the agent of the
    /// destination GPU opens (once) its local rendezvous point and issues a
    /// single-use ticket for the next [`req::PeerReceive`].
    0x0040 PeerListen {} -> { endpoint: String, ticket: [u8; 16] } bulk None;
    /// The destination agent waits for the source agent named by `ticket` and
    /// receives `len` bytes from it into device address `dst`.
    0x0041 PeerReceive { dst: u64, len: u64, ticket: [u8; 16] } -> {} bulk None;
    /// The source agent sends the `len` device bytes at `src` to the
    /// destination agent listening at `endpoint` (an endpoint of the same
    /// server instance, from [`req::PeerListen`]), presenting `ticket`.
    0x0042 PeerSend { src: u64, len: u64, endpoint: String, ticket: [u8; 16] } -> {} bulk None;
    /// `cudaIpcGetMemHandle`: exports the allocation holding `ptr` to other
    /// clients of this server and tenant; the 64-byte handle opens it.
    0x0060 IpcGetMemHandle { ptr: u64 } -> { handle: Blob } bulk None;
    /// `cudaIpcOpenMemHandle`: maps another client's exported allocation;
    /// its address here and its length.
    0x0061 IpcOpenMemHandle { handle: Blob } -> { ptr: u64, len: u64 } bulk None;
    /// `cudaIpcCloseMemHandle`: unmaps what `IpcOpenMemHandle` mapped.
    0x0062 IpcCloseMemHandle { ptr: u64 } -> {} bulk None;
    /// `cudaDeviceSetLimit` of a limit the device applies (stack size,
    /// printf FIFO, malloc heap); the reply carries the value in force.
    0x0140 SetLimit { limit: i32, value: u64 } -> { value: u64 } bulk None;
    /// Fill `height` rows of `width` elements of `element` bytes (1, 2 or
    /// 4), `pitch` bytes apart, with the low `element` bytes of `value`
    /// (`cuMemsetD32`, a graph's memset node).
    0x0053 MemsetElements { dst: u64, pitch: u64, value: u32, element: u32, width: u64, height: u64 } -> {} bulk None;
    /// Keeps the device work of an instantiated graph on the server: each
    /// step is a request of a device-only operation ([`GraphStep`]), and
    /// [`req::GraphLaunch`] runs them all, in order, as one message.
    0x0050 GraphUpload { steps: Vec<GraphStep> } -> { graph: u32 } bulk None;
    /// Runs an uploaded graph. The reply carries the kernels' `printf`
    /// output and one timestamp per event-record step, in step order.
    0x0051 GraphLaunch { graph: u32 } -> { printf: Blob, timestamps: Vec<u64> } bulk None;
    /// Forgets an uploaded graph.
    0x0052 GraphDestroy { graph: u32 } -> {} bulk None;
    /// A conditional node, as a step of an uploaded graph: the server reads
    /// the `u32` condition at device address `cond` and runs uploaded graph
    /// `bodies[i]` as [`cond_kind`] says (an IF, a WHILE or a SWITCH). The
    /// bodies are uploaded before the graph naming them.
    0x0055 GraphConditional { cond: u64, kind: u32, bodies: Vec<u32> } -> {} bulk None;
    /// `cuMemCreate`: a physical allocation of `size` bytes (a multiple of
    /// the allocation granularity); its handle on this connection.
    0x0080 MemCreate { size: u64 } -> { handle: u64 } bulk None;
    /// `cuMemRelease`: forgets a physical allocation's handle; the memory
    /// lives on while mapped.
    0x0081 MemRelease { handle: u64 } -> {} bulk None;
    /// `cuMemAddressReserve`: `size` bytes of device addresses aligned to
    /// `alignment` (0: the granularity), mapped to nothing.
    0x0082 MemAddressReserve { size: u64, alignment: u64 } -> { ptr: u64 } bulk None;
    /// `cuMemAddressFree`: gives back a whole reservation.
    0x0083 MemAddressFree { ptr: u64, size: u64 } -> {} bulk None;
    /// `cuMemMap`: maps physical allocation `handle` (from `offset`) at
    /// `ptr`, inaccessible until [`req::MemSetAccess`].
    0x0084 MemMap { ptr: u64, size: u64, offset: u64, handle: u64 } -> {} bulk None;
    /// `cuMemUnmap`: unmaps whole mappings.
    0x0085 MemUnmap { ptr: u64, size: u64 } -> {} bulk None;
    /// `cuMemSetAccess` for the attached GPU: `flags` is a
    /// `CUmemAccess_flags` (`PROT_NONE` or `PROT_READWRITE`).
    0x0086 MemSetAccess { ptr: u64, size: u64, flags: u32 } -> {} bulk None;
    /// `cuMemExportToShareableHandle`: shares a physical allocation with
    /// other clients of this server and tenant; the 64-byte token (an IPC
    /// memory handle) imports it.
    0x0087 MemExport { handle: u64 } -> { token: Blob } bulk None;
    /// `cuMemImportFromShareableHandle`: another client's shared physical
    /// allocation under a handle of this connection, and its size.
    0x0088 MemImport { token: Blob } -> { handle: u64, size: u64 } bulk None;
    /// `cuStreamWriteValue32/64`: writes the low `size` (4 or 8) bytes of
    /// `value` at `addr`, in stream order.
    0x0089 StreamWriteValue { addr: u64, value: u64, size: u32 } -> {} bulk None;
    /// `cuStreamWaitValue32/64`: waits until the `size`-byte value at `addr`
    /// satisfies `flags`' comparison (`CUstreamWaitValue_flags`) with
    /// `value`; fails with `cudaErrorTimeout` after the server's operation
    /// time limit.
    0x008a StreamWaitValue { addr: u64, value: u64, size: u32, flags: u32 } -> {} bulk None;
    /// One call of a math library ([`crate::math`]): `library` is a
    /// [`crate::math::Library`], `call` that library's encoded `Call`. The
    /// reply carries the library's status and the call's output bytes.
    0x0070 MathCall { library: u8, call: Blob } -> { status: i32, out: Blob } bulk None;
}

/// `cudaGraphConditionalNodeType`: what [`req::GraphConditional`] does
/// with its condition.
pub mod cond_kind {
    /// `bodies[0]` when the condition is non-zero, else `bodies[1]` if any.
    pub const IF: u32 = 0;
    /// `bodies[0]` again and again while the condition is non-zero.
    pub const WHILE: u32 = 1;
    /// `bodies[n]` once, `n` the condition; none when it is past the end.
    pub const SWITCH: u32 = 2;
}

crate::wire_struct! {
    /// One step of an uploaded graph: the op id and encoded body of a
    /// request the server could run on its own (a kernel launch, a copy
    /// between device addresses, a memset or an event record).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct GraphStep {
        /// The request's op id.
        pub op: u16,
        /// Its encoded body.
        pub body: Blob,
    }
}

impl GraphStep {
    /// The step that runs `req`.
    pub fn of<O: Op>(req: &O) -> Self {
        let mut body = Vec::new();
        req.encode(&mut Writer::new(&mut body));
        Self {
            op: O::ID.0,
            body: Blob(body),
        }
    }

    /// The step's request, if it is one a graph may hold.
    pub fn request(&self) -> Result<Request, DecodeError> {
        let req = Request::decode(self.op, &self.body.0)?;
        match req {
            Request::LaunchKernel(_)
            | Request::LaunchCooperative(_)
            | Request::MemcpyDtoD(_)
            | Request::Memcpy2DDtoD(_)
            | Request::Memset(_)
            | Request::Memset2D(_)
            | Request::MemsetElements(_)
            | Request::EventRecord(_)
            | Request::MathCall(_)
            | Request::GraphConditional(_) => Ok(req),
            _ => Err(DecodeError::Invalid("operation in a graph")),
        }
    }
}

/// A failed operation as the server reports it: the CUDA error and, when the
/// server has more to say (an unsupported instruction, a faulting address), a
/// message for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The error the CUDA call returns.
    pub code: CudaError,
    /// Details, or empty.
    pub message: String,
}

impl From<CudaError> for Failure {
    fn from(code: CudaError) -> Self {
        Self {
            code,
            message: String::new(),
        }
    }
}

impl Failure {
    /// A failure with a message.
    pub fn new(code: CudaError, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.message.is_empty() {
            write!(f, "{}", self.code)
        } else {
            write!(f, "{}: {}", self.code, self.message)
        }
    }
}

/// Encodes a reply body: status `cudaSuccess` and the fields, or the error
/// status and its message.
pub fn encode_reply<R: Wire>(result: Result<&R, &Failure>, out: &mut Vec<u8>) {
    let mut w = Writer::new(out);
    match result {
        Ok(reply) => {
            CudaError::SUCCESS.0.encode(&mut w);
            reply.encode(&mut w);
        }
        Err(failure) => {
            failure.code.0.encode(&mut w);
            failure.message.encode(&mut w);
        }
    }
}

/// Decodes a reply body into `Ok(fields)` or `Err(failure)`.
pub fn decode_reply<R: Wire>(body: &[u8]) -> Result<Result<R, Failure>, DecodeError> {
    let mut r = Reader::new(body);
    let code = CudaError(u32::decode(&mut r)?);
    let result = if code == CudaError::SUCCESS {
        Ok(R::decode(&mut r)?)
    } else {
        let message = String::decode(&mut r)?;
        Err(Failure { code, message })
    };
    r.finish()?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::to_vec;

    #[test]
    fn requests_round_trip_through_their_op_id() {
        let reqs: Vec<Request> = vec![
            req::Attach { gpu: 3, window: 5 }.into(),
            req::Malloc { size: 1 << 30 }.into(),
            req::MemcpyDtoD {
                dst: 0x7000_0000_0100,
                src: 0x7000_0000_0000,
                len: 17,
            }
            .into(),
            req::Memset {
                dst: 1,
                value: 0xAB,
                len: 9,
            }
            .into(),
            req::LaunchKernel {
                function: 2,
                grid: [4, 2, 1],
                block: [128, 1, 1],
                shared_mem: 4096,
                stream: 0,
                params: Blob(vec![1, 2, 3]),
            }
            .into(),
            req::ModuleGetFunction {
                module: 1,
                name: "_Z6vecAddPfS_S_i".into(),
            }
            .into(),
            req::PeerListen {}.into(),
            req::PeerReceive {
                dst: 0x7100_0000_0000,
                len: (64 << 20) + 1,
                ticket: [0x5A; 16],
            }
            .into(),
            req::PeerSend {
                src: 0x7000_0000_0010,
                len: 3,
                endpoint: "rcud-peer/00112233445566778899aabbccddeeff/0123456789abcdef".into(),
                ticket: *b"0123456789abcdef",
            }
            .into(),
        ];
        for req in reqs {
            let mut body = Vec::new();
            req.encode(&mut Writer::new(&mut body));
            assert_eq!(Request::decode(req.op().0, &body), Ok(req));
        }
    }

    /// Random bodies for every op id decode to a value or an error, never a
    /// panic, and whatever decodes re-encodes to the same bytes (the cargo-fuzz
    /// target in proto/fuzz explores this further).
    #[test]
    fn random_bodies_never_panic() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let op = (next() % 0x60) as u16;
            let len = (next() % 96) as usize;
            let body: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if let Ok(req) = Request::decode(op, &body) {
                let mut again = Vec::new();
                req.encode(&mut Writer::new(&mut again));
                assert_eq!(again, body);
            }
            let _ = decode_reply::<rep::GetDeviceInfo>(&body);
            let _ = decode_reply::<rep::LaunchKernel>(&body);
            let _ = decode_reply::<rep::PeerListen>(&body);
            let _ = decode_reply::<rep::GraphLaunch>(&body);
        }
    }

    #[test]
    fn graph_steps_hold_device_work_only() {
        let launch = req::LaunchKernel {
            function: 1,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared_mem: 0,
            stream: 0,
            params: Blob(vec![9; 8]),
        };
        let step = GraphStep::of(&launch);
        assert_eq!(step.request(), Ok(Request::LaunchKernel(launch.clone())));
        let cooperative = req::LaunchCooperative {
            function: launch.function,
            grid: launch.grid,
            block: launch.block,
            shared_mem: launch.shared_mem,
            stream: launch.stream,
            params: launch.params,
        };
        assert_eq!(
            GraphStep::of(&cooperative).request(),
            Ok(Request::LaunchCooperative(cooperative))
        );
        let upload = req::GraphUpload {
            steps: vec![step, GraphStep::of(&req::EventRecord {})],
        };
        let body = to_vec(&upload);
        assert_eq!(
            Request::decode(0x0050, &body),
            Ok(Request::GraphUpload(upload))
        );
        // A graph cannot carry host data, allocate, or nest graphs.
        for bad in [
            GraphStep::of(&req::Malloc { size: 4 }),
            GraphStep::of(&req::MemcpyHtoD { dst: 0, len: 4 }),
            GraphStep::of(&req::GraphLaunch { graph: 1 }),
        ] {
            assert!(bad.request().is_err());
        }
    }

    #[test]
    fn unknown_ops_and_trailing_bytes_are_rejected() {
        assert_eq!(
            Request::decode(0xFFFF, &[]),
            Err(DecodeError::Invalid("operation id"))
        );
        let mut body = to_vec(&req::Free { ptr: 5 });
        body.push(0);
        assert_eq!(
            Request::decode(0x0011, &body),
            Err(DecodeError::Trailing(1))
        );
    }

    #[test]
    fn replies_carry_fields_only_on_success() {
        let mut ok = Vec::new();
        encode_reply(Ok(&rep::Malloc { ptr: 42 }), &mut ok);
        assert_eq!(
            decode_reply::<rep::Malloc>(&ok),
            Ok(Ok(rep::Malloc { ptr: 42 }))
        );
        let mut err = Vec::new();
        let failure = Failure::new(CudaError::ILLEGAL_ADDRESS, "kernel k read 0x10");
        encode_reply::<rep::Malloc>(Err(&failure), &mut err);
        assert_eq!(decode_reply::<rep::Malloc>(&err), Ok(Err(failure)));
        let mut bare = Vec::new();
        encode_reply::<rep::Malloc>(Err(&CudaError::MEMORY_ALLOCATION.into()), &mut bare);
        assert_eq!(bare.len(), 8);
    }

    #[test]
    fn peer_replies_round_trip() {
        let listen = rep::PeerListen {
            endpoint: "rcud-peer/00112233445566778899aabbccddeeff/0123456789abcdef".into(),
            ticket: [7; 16],
        };
        let mut body = Vec::new();
        encode_reply(Ok(&listen), &mut body);
        assert_eq!(decode_reply::<rep::PeerListen>(&body), Ok(Ok(listen)));
        let mut body = Vec::new();
        let failure = Failure::new(CudaError::DEVICES_UNAVAILABLE, "the source agent went away");
        encode_reply::<rep::PeerReceive>(Err(&failure), &mut body);
        assert_eq!(decode_reply::<rep::PeerReceive>(&body), Ok(Err(failure)));
        // A ticket is exactly 16 bytes: a short one does not decode.
        let mut short = to_vec(&req::PeerReceive {
            dst: 1,
            len: 2,
            ticket: [1; 16],
        });
        short.pop();
        assert!(Request::decode(0x0041, &short).is_err());
    }
}
