//! The structure-aware target: sessions of CUDA operations, built with
//! `arbitrary`, played against real agents (`rcud_server::agent::Agent`) on
//! the emulated backend over an in-memory channel.
//!
//! A [`Session`] is a list of [`Op`]s. Each op becomes one request frame,
//! built only when the agent asks for the next frame, so that it can use
//! what earlier replies said (the address `Malloc` returned, the module id
//! `ModuleLoad` returned). [`Op::Reconnect`] ends the client: its agent
//! returns and a new one serves the next ops, on the same backend. Every
//! reply is checked against a model of the client's device: allocations
//! and their contents, modules, functions, the sticky error; a reply that
//! contradicts the model panics.

mod catalog;
mod channel;
mod model;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use rcud_server::agent::Agent;
use rcud_server::backend::emu::EmuBackend;
use rcud_server::backend::{Backend, EmuSettings};
use rcud_server::tenants::ResourceLimits;

use channel::{MemChannel, Shared};

/// GPUs of the emulated backend.
pub const GPUS: u32 = 2;
/// Memory of each emulated GPU.
pub const GPU_MEMORY: u64 = 32 << 20;
/// Longest a kernel runs before the launch fails with a timeout.
pub const KERNEL_TIMEOUT: Duration = Duration::from_millis(100);
/// Ops of one session beyond this many are ignored.
pub const MAX_OPS: usize = 256;

/// One fuzzer input: the limits of each client and the clients'
/// operations, in order.
#[derive(Debug, Clone, Arbitrary)]
pub struct Session {
    /// What each client may hold (its tenant's limits); `None`: the
    /// defaults.
    pub limits: Option<Limits>,
    /// The operations.
    pub ops: Vec<Op>,
}

/// Small resource limits of a client.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub struct Limits {
    /// Device memory, in units of 64 KiB.
    pub memory: u16,
    /// Live allocations.
    pub allocations: u8,
    /// Loaded modules.
    pub modules: u8,
    /// Function lookups.
    pub functions: u8,
}

impl Limits {
    fn resource_limits(self) -> ResourceLimits {
        ResourceLimits {
            memory: Some(u64::from(self.memory) << 16),
            allocations: u64::from(self.allocations),
            modules: u32::from(self.modules),
            functions: u32::from(self.functions),
            ..ResourceLimits::default()
        }
    }
}

/// A device pointer as an op names it.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Ptr {
    /// An address inside, at the end of, or past one of the allocations
    /// this client was given (freed ones included; `index` wraps).
    Alloc {
        /// Which allocation.
        index: u8,
        /// Where in it.
        at: Offset,
    },
    /// The null pointer.
    Null,
    /// Any address.
    Raw(u64),
}

/// Where in an allocation.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Offset {
    /// Its first byte.
    Start,
    /// `n` bytes in.
    Forward(u16),
    /// `n` bytes before its end.
    FromEnd(u16),
    /// `n` bytes past its end.
    PastEnd(u16),
}

/// A length as an op names it.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Len {
    /// Up to 64 KiB.
    Small(u16),
    /// From the (first) pointer to the end of its allocation.
    Rest,
    /// Any length.
    Huge(u64),
}

/// A size for `Malloc`.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Size {
    /// Up to 64 KiB.
    Small(u16),
    /// `n` pages of 4 KiB.
    Pages(u8),
    /// Any size.
    Huge(u64),
}

/// A module image to ship.
#[derive(Debug, Clone, Arbitrary)]
pub enum Image {
    /// One of the catalog's images.
    Catalog(u8),
    /// A catalog image with bytes replaced (`(position, value)`, positions wrap).
    Mutated {
        /// Which image.
        base: u8,
        /// The edits.
        edits: Vec<(u16, u8)>,
    },
    /// PTX text, wrapped in a fatbin container.
    Ptx(String),
    /// Any bytes.
    Bytes(Vec<u8>),
}

/// The hash a module is shipped or asked for under.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Hash {
    /// The content hash of the image shipped (for `ModuleLoadCached`: of
    /// catalog image 0).
    Content,
    /// The content hash of catalog image `n`.
    Catalog(u8),
    /// 32 bytes of `n`.
    Fixed(u8),
}

/// A module as an op names it.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum ModuleRef {
    /// One this client loaded (`index` wraps).
    Loaded(u8),
    /// Any id.
    Raw(u32),
}

/// A function as an op names it.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum FunctionRef {
    /// One this client looked up (`index` wraps).
    Known(u8),
    /// Any id.
    Raw(u32),
}

/// A kernel or variable name.
#[derive(Debug, Clone, Arbitrary)]
pub enum Name {
    /// A kernel of the module named (of the whole catalog when the module
    /// is not a catalog image; `index` wraps).
    Kernel(u8),
    /// A name of the catalog, kernel or variable (`index` wraps).
    Catalog(u8),
    /// Any text.
    Text(String),
}

/// Grid or block dimensions.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Dims {
    /// Small, valid dimensions.
    Small(u8, u8, u8),
    /// One of a few invalid shapes (zero, too large).
    Invalid(u8),
}

/// Kernel arguments.
#[derive(Debug, Clone, Arbitrary)]
pub enum Args {
    /// Packed at the kernel's parameter offsets: 8-byte parameters take
    /// `pointers` in order, 4-byte ones `words`, others zeros.
    Typed {
        /// Pointer arguments.
        pointers: [Ptr; 2],
        /// 32-bit arguments.
        words: [u32; 2],
    },
    /// Any bytes as the parameter buffer.
    Raw(Vec<u8>),
}

/// Which function attribute `FuncSetAttribute` sets.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Attribute {
    /// `cudaFuncAttributeMaxDynamicSharedMemorySize`.
    MaxDynamicShared,
    /// `cudaFuncAttributePreferredSharedMemoryCarveout`.
    Carveout,
    /// Any attribute number.
    Other(i32),
}

/// One operation of a client.
#[derive(Debug, Clone, Arbitrary)]
#[allow(missing_docs)]
pub enum Op {
    Attach {
        gpu: u8,
        window: u8,
    },
    GetDeviceInfo {
        gpu: u8,
    },
    MemGetInfo,
    Synchronize,
    Reset,
    EventRecord,
    Malloc {
        size: Size,
    },
    Free {
        ptr: Ptr,
    },
    HtoD {
        dst: Ptr,
        len: Len,
        seed: u8,
    },
    DtoH {
        src: Ptr,
        len: Len,
    },
    DtoD {
        dst: Ptr,
        src: Ptr,
        len: Len,
    },
    Memset {
        dst: Ptr,
        value: u8,
        len: Len,
    },
    HtoD2D {
        dst: Ptr,
        pitch: u16,
        width: u16,
        height: u8,
        seed: u8,
    },
    DtoH2D {
        src: Ptr,
        pitch: u16,
        width: u16,
        height: u8,
    },
    DtoD2D {
        dst: Ptr,
        dpitch: u16,
        src: Ptr,
        spitch: u16,
        width: u16,
        height: u8,
    },
    Memset2D {
        dst: Ptr,
        pitch: u16,
        value: u8,
        width: u16,
        height: u8,
    },
    ModuleLoad {
        image: Image,
        hash: Hash,
    },
    /// Loads catalog image `image` under its own hash and looks up its
    /// kernel `kernel` (indices wrap): two requests.
    LoadKernel {
        image: u8,
        kernel: u8,
    },
    ModuleLoadCached {
        hash: Hash,
    },
    GetFunction {
        module: ModuleRef,
        name: Name,
    },
    GetGlobal {
        module: ModuleRef,
        name: Name,
    },
    SetAttribute {
        function: FunctionRef,
        attribute: Attribute,
        value: i32,
    },
    Launch {
        function: FunctionRef,
        grid: Dims,
        block: Dims,
        shared: u16,
        args: Args,
    },
    PeerListen,
    PeerSend {
        src: Ptr,
        len: Len,
        endpoint: String,
    },
    PeerReceive {
        dst: Ptr,
        len: Len,
        ticket: u8,
    },
    /// Any request: an op id, its body and its payload, correctly framed.
    Raw {
        op: u16,
        body: Vec<u8>,
        bulk: Vec<u8>,
    },
    /// A frame header of any 24 bytes, then `rest` as its body.
    Garbage {
        header: [u8; 24],
        rest: Vec<u8>,
    },
    /// The client disconnects; a new one goes on.
    Reconnect,
}

static OPERATIONS: AtomicU64 = AtomicU64::new(0);
static SESSIONS: AtomicU64 = AtomicU64::new(0);
pub(crate) static MODULES_LOADED: AtomicU64 = AtomicU64::new(0);
pub(crate) static KERNELS_RUN: AtomicU64 = AtomicU64::new(0);
pub(crate) static BYTES_CHECKED: AtomicU64 = AtomicU64::new(0);

/// What the sessions played so far in this process reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Sessions played.
    pub sessions: u64,
    /// Operations played (ops sent to an agent).
    pub operations: u64,
    /// Modules that loaded.
    pub modules_loaded: u64,
    /// Kernel launches that succeeded.
    pub kernels_run: u64,
    /// Device bytes read back and compared with the model's.
    pub bytes_checked: u64,
}

/// Counts of what the sessions played so far in this process reached.
pub fn stats() -> Stats {
    Stats {
        sessions: SESSIONS.load(Ordering::Relaxed),
        operations: OPERATIONS.load(Ordering::Relaxed),
        modules_loaded: MODULES_LOADED.load(Ordering::Relaxed),
        kernels_run: KERNELS_RUN.load(Ordering::Relaxed),
        bytes_checked: BYTES_CHECKED.load(Ordering::Relaxed),
    }
}

/// Plays `session`: a fresh emulated backend, one agent per client, every
/// reply checked against the model.
pub fn session(session: Session) {
    let backend: Arc<dyn Backend> = Arc::new(EmuBackend::new(&EmuSettings {
        gpus: GPUS,
        memory: GPU_MEMORY,
        kernel_timeout: KERNEL_TIMEOUT,
        ..EmuSettings::default()
    }));
    let limits = session
        .limits
        .map_or_else(ResourceLimits::default, Limits::resource_limits);
    let mut ops = session.ops;
    ops.truncate(MAX_OPS);
    let shared = Arc::new(Mutex::new(Shared::new(
        ops,
        session.limits.map(|_| limits.clone()),
    )));
    loop {
        let chan = MemChannel::new(shared.clone());
        let result = Agent::new(backend.clone(), Box::new(chan))
            .with_resource_limits(limits.clone())
            .run();
        let mut s = shared.lock().expect("driver state");
        let played = s.client_ended(result.map_err(|e| e.to_string()));
        OPERATIONS.fetch_add(played, Ordering::Relaxed);
        if !s.next_client() {
            break;
        }
    }
    let n = SESSIONS.fetch_add(1, Ordering::Relaxed) + 1;
    if std::env::var_os("RCUD_FUZZ_PROGRESS").is_some() && (n.is_power_of_two() || n % 1000 == 0) {
        eprintln!(
            "agent_ops: {n} sessions, {} operations",
            OPERATIONS.load(Ordering::Relaxed)
        );
    }
}

/// [`session`] on raw fuzzer bytes, turned into a [`Session`] the way
/// cargo-fuzz turns them (`arbitrary_take_rest`); bytes that make no
/// session are skipped.
pub fn session_bytes(data: &[u8]) {
    if let Ok(s) = Session::arbitrary_take_rest(Unstructured::new(data)) {
        session(s);
    }
}
