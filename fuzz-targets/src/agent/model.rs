//! The driver of a session and its model of the client's device.
//!
//! The driver turns each [`Op`] into a request frame when the agent asks for
//! the next one, predicting from the model what the reply must be. When the
//! agent asks again (or its client ends), the reply to the request before is
//! checked against that prediction and the model is brought up to date.
//!
//! The model is exact where it can be and silent where it cannot: a reply is
//! only held against what the model knows for certain. It knows every
//! allocation the client made with `Malloc` and every variable of a catalog
//! module it loaded (the driver looks their addresses up itself), the bytes
//! of each allocation until a kernel may have written them, the modules and
//! functions the client holds, and the sticky error. An op that names an
//! address it made up (`Ptr::Raw`) gets no prediction about that address;
//! a `Raw` request makes the model stop predicting for the rest of that
//! client, since it may have changed anything.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;

use rcud_proto::codec::{to_vec, Blob, Wire, MAX_STRING};
use rcud_proto::frame::{FrameHeader, FrameKind, MAX_BULK};
use rcud_proto::ops::{self, rep, req, Failure, Op as WireOp};
use rcud_proto::CudaError;
use rcud_server::tenants::ResourceLimits;

use super::catalog::{self, Image as CatalogImage};
use super::channel::{pattern, Bulk, Frame};
use super::{
    Args, Attribute, Dims, FunctionRef, Hash, Image, Len, ModuleRef, Name, Offset, Op, Ptr, Size,
    GPUS, GPU_MEMORY,
};
use super::{BYTES_CHECKED, KERNELS_RUN, MODULES_LOADED};

/// Most shared memory a block may opt in to.
const OPTIN_SHARED: i64 = 163 << 10;

/// Allocations whose bytes the model keeps (larger ones are only tracked).
const SHADOW_LIMIT: u64 = 1 << 20;

/// One allocation of the client: by `Malloc`, or a module variable.
#[derive(Debug, Clone)]
struct Alloc {
    ptr: u64,
    size: u64,
    live: bool,
    /// Its bytes, while the model knows them.
    shadow: Option<Vec<u8>>,
}

impl Alloc {
    fn contains(&self, ptr: u64, len: u64) -> bool {
        self.live && ptr >= self.ptr && ptr.saturating_add(len) <= self.ptr + self.size
    }
}

/// A function the client looked up.
#[derive(Debug, Clone)]
struct Function {
    module: u32,
    name: String,
    static_shared: i64,
    max_dynamic: i64,
    /// The catalog kernel it is, when the model knows.
    kernel: Option<(usize, String)>,
}

/// What the backend's module cache holds under one hash for this client.
/// It is content-addressed (an image is refused under any hash but its
/// own) and a client may load by hash alone only what its owner (here:
/// its connection) shipped before; so what another client shipped never
/// matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cached {
    /// A catalog image.
    Catalog(usize),
    /// Something else that parsed.
    Other,
    /// Perhaps something, perhaps nothing.
    Maybe,
}

/// What the model knows of one client.
#[derive(Debug, Default)]
struct Model {
    /// False once the client sent a request the model cannot follow.
    trusted: bool,
    attached: bool,
    sticky: Option<CudaError>,
    /// Every allocation the client holds is in `allocs`.
    all_known: bool,
    /// Nothing allocated since the client attached or reset the device.
    fresh: bool,
    allocs: Vec<Alloc>,
    /// Catalog image of each loaded module, when known.
    modules: Vec<Option<usize>>,
    /// Addresses of the variables of each module, as looked up.
    globals: HashMap<(u32, String), u64>,
    /// What this client may load by hash alone.
    cache: HashMap<[u8; 32], Cached>,
    functions: Vec<Function>,
}

impl Model {
    fn new() -> Self {
        Self {
            trusted: true,
            all_known: true,
            fresh: true,
            ..Self::default()
        }
    }

    fn live_index(&self, ptr: u64, len: u64) -> Option<usize> {
        self.allocs.iter().position(|a| a.contains(ptr, len))
    }

    /// Whether `[ptr, ptr + len)` is device memory of this client: `Some`
    /// when the model knows. Zero lengths are not predicted.
    fn valid(&self, p: Resolved, len: u64) -> Option<bool> {
        if len == 0 {
            return None;
        }
        if self.live_index(p.addr, len).is_some() {
            return Some(true);
        }
        (p.derived && self.all_known).then_some(false)
    }

    fn forget_contents(&mut self) {
        for a in &mut self.allocs {
            a.shadow = None;
        }
    }

    fn reset(&mut self) {
        // The backend's cache keeps what the client shipped: `cache` stays.
        for a in &mut self.allocs {
            a.live = false;
            a.shadow = None;
        }
        self.modules.clear();
        self.globals.clear();
        self.functions.clear();
        self.all_known = true;
        self.fresh = true;
    }
}

/// A pointer of an op, resolved against the model.
#[derive(Debug, Clone, Copy)]
struct Resolved {
    addr: u64,
    /// Made from a known allocation (or null), not made up.
    derived: bool,
    /// Bytes from `addr` to the end of its allocation.
    rest: Option<u64>,
}

/// A change of device memory a successful request makes.
#[derive(Debug, Clone)]
enum Write {
    Pattern {
        dst: u64,
        len: u64,
        seed: u8,
        from: u64,
    },
    Fill {
        dst: u64,
        len: u64,
        value: u8,
    },
    Copy {
        dst: u64,
        src: u64,
        len: u64,
    },
    Words {
        dst: u64,
        count: u64,
        value: u32,
    },
}

/// What the reply to a request must be, and what it changes.
#[derive(Debug, Clone)]
enum Expect {
    /// Nothing known.
    Unknown,
    /// Success or failure as predicted, then `writes` on success.
    Status {
        ok: Option<bool>,
        writes: Vec<Write>,
    },
    Attach {
        ok: bool,
    },
    DeviceInfo {
        ok: bool,
    },
    MemInfo {
        ok: bool,
    },
    Reset,
    Malloc {
        size: u64,
        ok: Option<bool>,
    },
    Free {
        ptr: u64,
        ok: Option<bool>,
    },
    /// A device-to-host copy of these `(address, length)` rows.
    Read {
        rows: Vec<(u64, u64)>,
        ok: Option<bool>,
    },
    Load {
        key: [u8; 32],
        /// What the module will be: a catalog image, when known.
        served: Option<usize>,
        /// Must load (or fail for lack of memory only).
        must: bool,
        /// Must fail.
        must_fail: bool,
        /// The image shipped is a catalog image (`None`: unknown bytes;
        /// for a cached load, nothing shipped).
        shipped: Option<Option<usize>>,
        /// A kernel to look up in the module once it is loaded.
        then: Option<String>,
    },
    Function {
        module: u32,
        name: String,
        kernel: Option<(usize, String)>,
        ok: Option<bool>,
    },
    Global {
        module: u32,
        name: String,
        size: Option<u64>,
        ok: Option<bool>,
    },
    Attribute {
        function: Option<usize>,
        max_dynamic: Option<i64>,
        ok: Option<bool>,
    },
    Launch {
        ok: Option<bool>,
        /// The launch's effect on memory, when the model knows it exactly.
        writes: Option<Vec<Write>>,
        printf: Option<Vec<u8>>,
        heap: bool,
    },
}

/// The request in flight.
#[derive(Debug)]
struct InFlight {
    header: FrameHeader,
    bulk_len: u64,
    /// Sticky errors do not hold it back.
    exempt: bool,
    expect: Expect,
}

/// The reply the agent is sending.
#[derive(Debug)]
struct Reply {
    header: FrameHeader,
    body: Vec<u8>,
    bulk: Vec<u8>,
}

/// Why a client ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Still going.
    Running,
    /// `Op::Reconnect`.
    Reconnect,
    /// No ops left.
    Done,
}

/// The driver's state, shared by the channel of each agent in turn.
#[derive(Debug)]
pub(crate) struct Shared {
    ops: VecDeque<Op>,
    /// The clients' limits, when the session sets them.
    limits: Option<ResourceLimits>,
    model: Model,
    injected: VecDeque<Frame>,
    injected_expect: VecDeque<(bool, Expect)>,
    in_flight: Option<InFlight>,
    reply: Option<Reply>,
    next_id: u32,
    /// Ops of this client sent.
    played: u64,
    /// The client sent something that may end its connection.
    dirty: bool,
    end: End,
}

impl Shared {
    pub(crate) fn new(ops: Vec<Op>, limits: Option<ResourceLimits>) -> Self {
        Self {
            ops: ops.into(),
            limits,
            model: Model::new(),
            injected: VecDeque::new(),
            injected_expect: VecDeque::new(),
            in_flight: None,
            reply: None,
            next_id: 1,
            played: 0,
            dirty: false,
            end: End::Running,
        }
    }

    /// The agent finished the request in flight (if any, having taken
    /// `consumed` payload bytes) and wants the next one.
    pub(crate) fn next_frame(&mut self, consumed: u64) -> Option<Frame> {
        self.finish(consumed);
        if let Some(frame) = self.injected.pop_front() {
            let (exempt, expect) = self.injected_expect.pop_front().expect("injected");
            self.start(&frame, exempt, expect);
            return Some(frame);
        }
        if self.end != End::Running {
            return None;
        }
        loop {
            let Some(op) = self.ops.pop_front() else {
                self.end = End::Done;
                return None;
            };
            self.played += 1;
            if let Op::Reconnect = op {
                self.end = End::Reconnect;
                return None;
            }
            if let Some((frame, exempt, expect)) = self.build(op) {
                self.start(&frame, exempt, expect);
                return Some(frame);
            }
        }
    }

    fn start(&mut self, frame: &Frame, exempt: bool, expect: Expect) {
        let header = FrameHeader::from_bytes(&frame.header).ok();
        self.in_flight = header.map(|header| InFlight {
            header,
            bulk_len: frame.bulk.len(),
            exempt,
            expect,
        });
        if self.in_flight.is_none() {
            // The agent will not take this header.
            self.dirty = true;
        }
    }

    pub(crate) fn reply_started(&mut self, header: &FrameHeader, body: &[u8], bulk: &[u8]) {
        assert!(self.reply.is_none(), "a second reply to one request");
        assert_eq!(header.body_len as usize, body.len(), "reply body length");
        assert!(
            bulk.len() as u64 <= header.bulk_len,
            "reply payload too long"
        );
        self.reply = Some(Reply {
            header: *header,
            body: body.to_vec(),
            bulk: bulk.to_vec(),
        });
    }

    pub(crate) fn reply_continued(&mut self, bulk: &[u8]) {
        let reply = self.reply.as_mut().expect("payload before its reply");
        reply.bulk.extend_from_slice(bulk);
        assert!(
            reply.bulk.len() as u64 <= reply.header.bulk_len,
            "reply payload longer than its header says"
        );
    }

    /// The agent of this client returned. Returns how many ops it played.
    pub(crate) fn client_ended(&mut self, result: Result<(), String>) -> u64 {
        match result {
            Ok(()) => self.finish(self.in_flight.as_ref().map_or(0, |f| f.bulk_len)),
            Err(e) => {
                assert!(
                    self.dirty,
                    "the agent failed on a well-formed client: {e} (in flight: {:?})",
                    self.in_flight
                );
                self.in_flight = None;
                self.reply = None;
                // The connection is gone: the rest of this client's ops too.
                while let Some(op) = self.ops.pop_front() {
                    if let Op::Reconnect = op {
                        self.end = End::Reconnect;
                        break;
                    }
                }
                if self.end == End::Running {
                    self.end = End::Done;
                }
            }
        }
        self.injected.clear();
        self.injected_expect.clear();
        std::mem::take(&mut self.played)
    }

    /// Prepares the next client; false when there is none.
    pub(crate) fn next_client(&mut self) -> bool {
        if self.end != End::Reconnect || self.ops.is_empty() {
            return false;
        }
        self.model = Model::new();
        self.dirty = false;
        self.end = End::Running;
        true
    }

    /// A name the wire cannot carry whole (the encoder cuts it, perhaps
    /// inside a character): the agent may rightly refuse the request.
    fn note_string(&mut self, s: &str) {
        if s.len() > MAX_STRING {
            self.dirty = true;
        }
    }

    fn frame<R: WireOp>(&mut self, request: &R, bulk: Bulk) -> Frame {
        let body = to_vec(request);
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let header = FrameHeader {
            flags: 0,
            kind: FrameKind::REQUEST,
            op: R::ID.0,
            body_len: body.len() as u32,
            id,
            bulk_len: bulk.len(),
        };
        if bulk.len() > MAX_BULK {
            self.dirty = true;
        }
        Frame {
            header: header.to_bytes(),
            body,
            bulk,
        }
    }

    fn resolve(&self, p: Ptr) -> Resolved {
        match p {
            Ptr::Null => Resolved {
                addr: 0,
                derived: true,
                rest: None,
            },
            Ptr::Raw(addr) => Resolved {
                addr,
                derived: false,
                rest: None,
            },
            Ptr::Alloc { index, at } => {
                let allocs = &self.model.allocs;
                if allocs.is_empty() {
                    return Resolved {
                        addr: 0,
                        derived: true,
                        rest: None,
                    };
                }
                let a = &allocs[index as usize % allocs.len()];
                let off = match at {
                    Offset::Start => 0,
                    Offset::Forward(n) => u64::from(n).min(a.size),
                    Offset::FromEnd(n) => a.size.saturating_sub(u64::from(n)),
                    Offset::PastEnd(n) => a.size + u64::from(n),
                };
                Resolved {
                    addr: a.ptr + off,
                    derived: true,
                    rest: Some(a.size.saturating_sub(off)),
                }
            }
        }
    }

    fn len(&self, len: Len, base: Resolved) -> u64 {
        match len {
            Len::Small(n) => u64::from(n),
            Len::Rest => base.rest.unwrap_or(256),
            Len::Huge(n) => n,
        }
    }

    fn key(&self, hash: Hash, shipped: &[u8]) -> [u8; 32] {
        let images = catalog::images();
        match hash {
            Hash::Content => rcud_fatbin::content_hash(shipped),
            Hash::Catalog(i) => images[i as usize % images.len()].hash,
            Hash::Fixed(b) => [b; 32],
        }
    }

    /// A prediction that holds only while the client is attached, trusted
    /// and clear of a sticky error.
    fn gate(&self, ok: Option<bool>) -> Option<bool> {
        if !self.model.trusted {
            return None;
        }
        if !self.model.attached {
            return Some(false);
        }
        ok
    }

    fn both(a: Option<bool>, b: Option<bool>) -> Option<bool> {
        match (a, b) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        }
    }

    /// The frame for `op`, whether sticky errors spare it, and what its
    /// reply must be.
    fn build(&mut self, op: Op) -> Option<(Frame, bool, Expect)> {
        let none = Bulk::none;
        Some(match op {
            Op::Attach { gpu, window } => {
                let gpu = u32::from(gpu % (GPUS as u8 + 1));
                let ok = !self.model.attached && gpu < GPUS;
                let f = self.frame(
                    &req::Attach {
                        gpu,
                        window: u32::from(window),
                    },
                    none(),
                );
                (f, true, Expect::Attach { ok })
            }
            Op::GetDeviceInfo { gpu } => {
                let gpu = u32::from(gpu % (GPUS as u8 + 1));
                let f = self.frame(&req::GetDeviceInfo { gpu }, none());
                (f, true, Expect::DeviceInfo { ok: gpu < GPUS })
            }
            Op::MemGetInfo => {
                let f = self.frame(&req::MemGetInfo {}, none());
                let ok = self.model.attached;
                (f, false, Expect::MemInfo { ok })
            }
            Op::Synchronize => {
                let f = self.frame(&req::DeviceSynchronize {}, none());
                let ok = self.gate(Some(true));
                (f, false, Expect::Status { ok, writes: vec![] })
            }
            Op::EventRecord => {
                let f = self.frame(&req::EventRecord {}, none());
                let ok = self.gate(Some(true));
                (f, false, Expect::Status { ok, writes: vec![] })
            }
            Op::Reset => {
                let f = self.frame(&req::DeviceReset {}, none());
                (f, true, Expect::Reset)
            }
            Op::Malloc { size } => {
                let size = match size {
                    Size::Small(n) => u64::from(n),
                    Size::Pages(n) => u64::from(n) << 12,
                    Size::Huge(n) => n,
                };
                let over_limit = self
                    .limits
                    .as_ref()
                    .is_some_and(|l| l.memory.is_some_and(|m| size > m) || l.allocations == 0);
                let ok = if size == 0 || size > GPU_MEMORY || over_limit {
                    Some(false)
                } else {
                    None
                };
                let ok = self.gate(ok);
                let f = self.frame(&req::Malloc { size }, none());
                (f, false, Expect::Malloc { size, ok })
            }
            Op::Free { ptr } => {
                let p = self.resolve(ptr);
                let start = self.model.allocs.iter().any(|a| a.live && a.ptr == p.addr);
                // Module variables are the runtime's: cudaFree refuses them.
                let variable = self.model.globals.values().any(|&g| g == p.addr);
                let ok = if variable {
                    Some(false)
                } else if start {
                    Some(true)
                } else {
                    (p.derived && self.model.all_known).then_some(false)
                };
                let ok = self.gate(ok);
                let f = self.frame(&req::Free { ptr: p.addr }, none());
                (f, false, Expect::Free { ptr: p.addr, ok })
            }
            Op::HtoD { dst, len, seed } => {
                let d = self.resolve(dst);
                let len = self.len(len, d);
                let ok = self.gate(self.model.valid(d, len));
                let f = self.frame(
                    &req::MemcpyHtoD { dst: d.addr, len },
                    Bulk::Pattern { seed, len },
                );
                let writes = vec![Write::Pattern {
                    dst: d.addr,
                    len,
                    seed,
                    from: 0,
                }];
                (f, false, Expect::Status { ok, writes })
            }
            Op::DtoH { src, len } => {
                let s = self.resolve(src);
                let len = self.len(len, s);
                let ok = self.gate(self.model.valid(s, len));
                let f = self.frame(&req::MemcpyDtoH { src: s.addr, len }, none());
                let rows = vec![(s.addr, len)];
                (f, false, Expect::Read { rows, ok })
            }
            Op::DtoD { dst, src, len } => {
                let d = self.resolve(dst);
                let s = self.resolve(src);
                let len = self.len(len, d);
                let ok = self.gate(Self::both(
                    self.model.valid(d, len),
                    self.model.valid(s, len),
                ));
                let f = self.frame(
                    &req::MemcpyDtoD {
                        dst: d.addr,
                        src: s.addr,
                        len,
                    },
                    none(),
                );
                let writes = vec![Write::Copy {
                    dst: d.addr,
                    src: s.addr,
                    len,
                }];
                (f, false, Expect::Status { ok, writes })
            }
            Op::Memset { dst, value, len } => {
                let d = self.resolve(dst);
                let len = self.len(len, d);
                let ok = self.gate(self.model.valid(d, len));
                let f = self.frame(
                    &req::Memset {
                        dst: d.addr,
                        value,
                        len,
                    },
                    none(),
                );
                let writes = vec![Write::Fill {
                    dst: d.addr,
                    len,
                    value,
                }];
                (f, false, Expect::Status { ok, writes })
            }
            Op::HtoD2D {
                dst,
                pitch,
                width,
                height,
                seed,
            } => {
                let d = self.resolve(dst);
                let (pitch, width, height) =
                    (u64::from(pitch), u64::from(width), u64::from(height));
                let ok = self.pitched_ok(d, pitch, width, height);
                let len = width * height;
                let f = self.frame(
                    &req::Memcpy2DHtoD {
                        dst: d.addr,
                        dpitch: pitch,
                        width,
                        height,
                    },
                    Bulk::Pattern { seed, len },
                );
                let writes = rows(d.addr, pitch, width, height)
                    .enumerate()
                    .map(|(r, dst)| Write::Pattern {
                        dst,
                        len: width,
                        seed,
                        from: r as u64 * width,
                    })
                    .collect();
                (f, false, Expect::Status { ok, writes })
            }
            Op::DtoH2D {
                src,
                pitch,
                width,
                height,
            } => {
                let s = self.resolve(src);
                let (pitch, width, height) =
                    (u64::from(pitch), u64::from(width), u64::from(height));
                let ok = self.pitched_ok(s, pitch, width, height);
                let f = self.frame(
                    &req::Memcpy2DDtoH {
                        src: s.addr,
                        spitch: pitch,
                        width,
                        height,
                    },
                    none(),
                );
                let rows = rows(s.addr, pitch, width, height)
                    .map(|a| (a, width))
                    .collect();
                (f, false, Expect::Read { rows, ok })
            }
            Op::DtoD2D {
                dst,
                dpitch,
                src,
                spitch,
                width,
                height,
            } => {
                let d = self.resolve(dst);
                let s = self.resolve(src);
                let (dpitch, spitch) = (u64::from(dpitch), u64::from(spitch));
                let (width, height) = (u64::from(width), u64::from(height));
                let ok = Self::both(
                    self.pitched_ok(d, dpitch, width, height),
                    self.pitched_ok(s, spitch, width, height),
                );
                let f = self.frame(
                    &req::Memcpy2DDtoD {
                        dst: d.addr,
                        dpitch,
                        src: s.addr,
                        spitch,
                        width,
                        height,
                    },
                    none(),
                );
                let writes = rows(d.addr, dpitch, width, height)
                    .zip(rows(s.addr, spitch, width, height))
                    .map(|(dst, src)| Write::Copy {
                        dst,
                        src,
                        len: width,
                    })
                    .collect();
                (f, false, Expect::Status { ok, writes })
            }
            Op::Memset2D {
                dst,
                pitch,
                value,
                width,
                height,
            } => {
                let d = self.resolve(dst);
                let (pitch, width, height) =
                    (u64::from(pitch), u64::from(width), u64::from(height));
                let ok = self.pitched_ok(d, pitch, width, height);
                let f = self.frame(
                    &req::Memset2D {
                        dst: d.addr,
                        pitch,
                        value,
                        width,
                        height,
                    },
                    none(),
                );
                let writes = rows(d.addr, pitch, width, height)
                    .map(|dst| Write::Fill {
                        dst,
                        len: width,
                        value,
                    })
                    .collect();
                (f, false, Expect::Status { ok, writes })
            }
            Op::ModuleLoad { image, hash } => {
                let (bytes, shipped) = image_bytes(&image);
                let key = self.key(hash, &bytes);
                let matches = key == rcud_fatbin::content_hash(&bytes);
                let f = self.frame(
                    &req::ModuleLoad {
                        hash: key,
                        len: bytes.len() as u64,
                    },
                    Bulk::Bytes(bytes),
                );
                let expect = self.load_expect(key, Some((shipped, matches)));
                (f, false, expect)
            }
            Op::LoadKernel { image, kernel } => {
                let images = catalog::images();
                let i = image as usize % images.len();
                let img = &images[i];
                let name = img.kernels[kernel as usize % img.kernels.len()]
                    .name
                    .clone();
                let f = self.frame(
                    &req::ModuleLoad {
                        hash: img.hash,
                        len: img.fatbin.len() as u64,
                    },
                    Bulk::Bytes(img.fatbin.clone()),
                );
                let mut expect = self.load_expect(img.hash, Some((Some(i), true)));
                if let Expect::Load { then, .. } = &mut expect {
                    *then = Some(name);
                }
                (f, false, expect)
            }
            Op::ModuleLoadCached { hash } => {
                let images = catalog::images();
                let key = match hash {
                    Hash::Content => images[0].hash,
                    other => self.key(other, &[]),
                };
                let f = self.frame(&req::ModuleLoadCached { hash: key }, none());
                let expect = self.load_expect(key, None);
                (f, false, expect)
            }
            Op::GetFunction { module, name } => {
                let (module, image) = self.module(module);
                let name = name_text(&name, image);
                self.note_string(&name);
                let kernel = image.and_then(|i| {
                    catalog::images()[i]
                        .kernel(&name)
                        .map(|_| (i, name.clone()))
                });
                let ok = match image {
                    // A lookup limit may turn a lookup down.
                    Some(_) if kernel.is_some() && self.limits.is_some() => None,
                    Some(_) => Some(kernel.is_some()),
                    None if module as usize >= self.model.modules.len() => Some(false),
                    None => None,
                };
                let ok = self.gate(ok);
                let f = self.frame(
                    &req::ModuleGetFunction {
                        module,
                        name: name.clone(),
                    },
                    none(),
                );
                let expect = Expect::Function {
                    module,
                    name,
                    kernel,
                    ok,
                };
                (f, false, expect)
            }
            Op::GetGlobal { module, name } => {
                let (module, image) = self.module(module);
                let name = name_text(&name, image);
                self.note_string(&name);
                let size = image.and_then(|i| catalog::images()[i].global(&name));
                let (f, expect) = self.global_request(module, name, image.is_some(), size);
                (f, false, expect)
            }
            Op::SetAttribute {
                function,
                attribute,
                value,
            } => {
                let id = self.function(function);
                let attr = match attribute {
                    Attribute::MaxDynamicShared => ops::ATTR_MAX_DYNAMIC_SHARED,
                    Attribute::Carveout => ops::ATTR_CARVEOUT,
                    Attribute::Other(a) => a,
                };
                let known = self
                    .model
                    .functions
                    .get(id as usize)
                    .map(|f| f.static_shared);
                let (ok, max_dynamic) = match known {
                    None => (Some(false), None),
                    Some(static_shared) => match attr {
                        ops::ATTR_MAX_DYNAMIC_SHARED => {
                            let ok = value >= 0 && static_shared + i64::from(value) <= OPTIN_SHARED;
                            (Some(ok), ok.then_some(i64::from(value)))
                        }
                        ops::ATTR_CARVEOUT => (Some((-1..=100).contains(&value)), None),
                        _ => (Some(false), None),
                    },
                };
                let ok = self.gate(ok);
                let f = self.frame(
                    &req::FuncSetAttribute {
                        function: id,
                        attr,
                        value,
                    },
                    none(),
                );
                let function = known.map(|_| id as usize);
                let expect = Expect::Attribute {
                    function,
                    max_dynamic,
                    ok,
                };
                (f, false, expect)
            }
            Op::Launch {
                function,
                grid,
                block,
                shared,
                args,
            } => {
                let id = self.function(function);
                let (f, expect) = self.launch(id, grid, block, shared, &args);
                (f, false, expect)
            }
            Op::PeerListen => {
                // Agents without a server instance make no peer copies.
                let f = self.frame(&req::PeerListen {}, none());
                let ok = self.model.trusted.then_some(false);
                (f, false, Expect::Status { ok, writes: vec![] })
            }
            Op::PeerSend { src, len, endpoint } => {
                self.note_string(&endpoint);
                let s = self.resolve(src);
                let len = self.len(len, s);
                let f = self.frame(
                    &req::PeerSend {
                        src: s.addr,
                        len,
                        endpoint,
                        ticket: [0x11; 16],
                    },
                    none(),
                );
                let ok = self.model.trusted.then_some(false);
                (f, true, Expect::Status { ok, writes: vec![] })
            }
            Op::PeerReceive { dst, len, ticket } => {
                let d = self.resolve(dst);
                let len = self.len(len, d);
                let f = self.frame(
                    &req::PeerReceive {
                        dst: d.addr,
                        len,
                        ticket: [ticket; 16],
                    },
                    none(),
                );
                let ok = self.model.trusted.then_some(false);
                (f, true, Expect::Status { ok, writes: vec![] })
            }
            Op::Raw { op, body, bulk } => {
                self.model.trusted = false;
                self.dirty = true;
                let id = self.next_id;
                self.next_id = self.next_id.wrapping_add(1);
                let header = FrameHeader {
                    flags: 0,
                    kind: FrameKind::REQUEST,
                    op,
                    body_len: body.len() as u32,
                    id,
                    bulk_len: bulk.len() as u64,
                };
                let f = Frame {
                    header: header.to_bytes(),
                    body,
                    bulk: Bulk::Bytes(bulk),
                };
                (f, true, Expect::Unknown)
            }
            Op::Garbage { header, rest } => {
                self.model.trusted = false;
                self.dirty = true;
                let bulk = match FrameHeader::from_bytes(&header) {
                    Ok(h) => Bulk::Pattern {
                        seed: 0,
                        len: h.bulk_len,
                    },
                    Err(_) => Bulk::none(),
                };
                let f = Frame {
                    header,
                    body: rest,
                    bulk,
                };
                (f, true, Expect::Unknown)
            }
            Op::Reconnect => return None,
        })
    }

    /// The prediction for a pitched region: a bad pitch fails first, then
    /// the client must be attached, then the whole extent must be its.
    fn pitched_ok(&self, p: Resolved, pitch: u64, width: u64, height: u64) -> Option<bool> {
        if !self.model.trusted {
            return None;
        }
        if width > pitch && height > 1 {
            return Some(false);
        }
        if !self.model.attached {
            return Some(false);
        }
        if width == 0 || height == 0 {
            return None;
        }
        let extent = (height - 1) * pitch + width;
        self.model.valid(p, extent)
    }

    fn module(&self, m: ModuleRef) -> (u32, Option<usize>) {
        let modules = &self.model.modules;
        let id = match m {
            ModuleRef::Loaded(i) if !modules.is_empty() => i as usize % modules.len(),
            ModuleRef::Loaded(i) => usize::from(i),
            ModuleRef::Raw(id) => id as usize,
        };
        (id as u32, modules.get(id).copied().flatten())
    }

    fn function(&self, f: FunctionRef) -> u32 {
        let functions = &self.model.functions;
        match f {
            FunctionRef::Known(i) if !functions.is_empty() => (i as usize % functions.len()) as u32,
            FunctionRef::Known(i) => u32::from(i),
            FunctionRef::Raw(id) => id,
        }
    }

    /// What a load must do: `shipped` is the image sent (which catalog
    /// image it is, and whether it was sent under its own hash), `None`
    /// for a load by hash alone.
    fn load_expect(&self, key: [u8; 32], shipped: Option<(Option<usize>, bool)>) -> Expect {
        let cached = self.model.cache.get(&key).copied();
        let (served, refused) = match (shipped, cached) {
            // An image under another image's hash is refused.
            (Some((_, false)), _) => (None, true),
            (Some((image, true)), _) => (image, false),
            (None, Some(Cached::Catalog(i))) => (Some(i), false),
            (None, Some(_)) => (None, false),
            (None, None) => (None, true),
        };
        let m = &self.model;
        Expect::Load {
            key,
            served,
            must: m.trusted && m.attached && served.is_some(),
            must_fail: m.trusted && (!m.attached || refused),
            shipped: shipped.map(|(image, matches)| image.filter(|_| matches)),
            then: None,
        }
    }

    fn global_request(
        &mut self,
        module: u32,
        name: String,
        catalog_module: bool,
        size: Option<u64>,
    ) -> (Frame, Expect) {
        let ok = if catalog_module {
            Some(size.is_some())
        } else if module as usize >= self.model.modules.len() {
            Some(false)
        } else {
            None
        };
        let ok = self.gate(ok);
        let f = self.frame(
            &req::ModuleGetGlobal {
                module,
                name: name.clone(),
            },
            Bulk::none(),
        );
        let expect = Expect::Global {
            module,
            name,
            size,
            ok,
        };
        (f, expect)
    }

    fn launch(
        &mut self,
        id: u32,
        grid: Dims,
        block: Dims,
        shared: u16,
        args: &Args,
    ) -> (Frame, Expect) {
        let (grid, grid_ok) = dims(grid, true);
        let (block, block_ok) = dims(block, false);
        let function = self.model.functions.get(id as usize).cloned();
        let kernel = function.as_ref().and_then(|f| f.kernel.clone());
        let layout = kernel
            .as_ref()
            .and_then(|(i, name)| catalog::images()[*i].kernel(name).cloned());
        let mut ptrs = Vec::new();
        let mut words = Vec::new();
        let params = match args {
            Args::Raw(bytes) => bytes.clone(),
            Args::Typed { pointers, words: w } => {
                ptrs = pointers.iter().map(|&p| self.resolve(p)).collect();
                words = w.to_vec();
                pack(layout.as_ref(), &ptrs, &words)
            }
        };
        let shared_mem = u32::from(shared);
        let f = self.frame(
            &req::LaunchKernel {
                function: id,
                grid,
                block,
                shared_mem,
                stream: 0,
                params: Blob(params),
            },
            Bulk::none(),
        );
        let mut expect_writes = None;
        let mut printf = None;
        let config_ok = grid_ok && block_ok;
        let ok = match &function {
            None => Some(false),
            Some(_) if !config_ok => Some(false),
            Some(f) if i64::from(shared_mem) > f.max_dynamic.max(0) => Some(false),
            Some(_) => match (kernel.as_ref(), args) {
                (Some((_, name)), Args::Typed { .. }) => {
                    let threads_x = u64::from(grid[0]) * u64::from(block[0]);
                    let threads: u64 = grid.iter().chain(&block).map(|&d| u64::from(d)).product();
                    match name.as_str() {
                        "fill" => {
                            let out = ptrs[0];
                            let count = u64::from(words[0]).min(threads_x);
                            if count == 0 {
                                expect_writes = Some(vec![]);
                                Some(true)
                            } else {
                                let valid = self.model.valid(out, count * 4);
                                let aligned = out.addr % 4 == 0;
                                match valid {
                                    Some(true) if aligned => {
                                        expect_writes = Some(vec![Write::Words {
                                            dst: out.addr,
                                            count,
                                            value: words[1],
                                        }]);
                                        Some(true)
                                    }
                                    Some(false) => Some(false),
                                    _ => None,
                                }
                            }
                        }
                        "say" => {
                            let line = format!("x={}\n", words[0]);
                            printf = Some(line.repeat(threads as usize).into_bytes());
                            expect_writes = Some(vec![]);
                            Some(true)
                        }
                        "trap_if" => {
                            expect_writes = Some(vec![]);
                            Some(words[0] != 7)
                        }
                        _ => None,
                    }
                }
                _ => None,
            },
        };
        let heap = kernel.as_ref().is_none_or(|(_, n)| n == "heap");
        let ok = self.gate(ok);
        let expect = Expect::Launch {
            ok,
            writes: expect_writes,
            printf,
            heap,
        };
        (f, expect)
    }

    /// Checks the reply to the request in flight and updates the model.
    fn finish(&mut self, consumed: u64) {
        let reply = self.reply.take();
        let Some(flight) = self.in_flight.take() else {
            assert!(reply.is_none(), "a reply to no request");
            return;
        };
        let Some(reply) = reply else {
            // Only a client that broke the protocol goes unanswered, and
            // then its agent stops before asking for another frame.
            panic!("request {:?} got no reply", flight.header);
        };
        assert_eq!(
            consumed, flight.bulk_len,
            "the agent took {consumed} of the {} payload bytes of {:?}",
            flight.bulk_len, flight.header
        );
        assert_eq!(reply.header.kind, FrameKind::REPLY);
        assert_eq!(reply.header.id, flight.header.id, "reply id");
        assert_eq!(reply.header.op, flight.header.op, "reply op");
        assert_eq!(
            reply.bulk.len() as u64,
            reply.header.bulk_len,
            "reply payload length"
        );
        let code = status(&reply.body);
        let m = &mut self.model;
        if m.trusted && !flight.exempt {
            if let Some(sticky) = m.sticky {
                assert_eq!(code, sticky, "{:?} under a sticky error", flight.header);
                assert_eq!(reply.header.bulk_len, 0);
                return;
            }
        }
        if code != CudaError::SUCCESS {
            assert_eq!(reply.header.bulk_len, 0, "a failure with a payload");
        }
        self.check(flight, &reply, code);
        if code.is_sticky() {
            self.model.sticky = Some(code);
        }
    }

    fn check(&mut self, flight: InFlight, reply: &Reply, code: CudaError) {
        let ok = code == CudaError::SUCCESS;
        let trusted = self.model.trusted;
        let what = format!("{:?}: {code:?}", flight.expect);
        let predicted = |p: Option<bool>| {
            if let Some(p) = p {
                assert_eq!(ok, p, "prediction failed for {what}");
            }
        };
        match flight.expect {
            Expect::Unknown => {}
            Expect::Attach { ok: p } => {
                if trusted {
                    predicted(Some(p));
                }
                let _ = decode::<rep::Attach>(&reply.body);
                if ok {
                    self.model.attached = true;
                }
            }
            Expect::DeviceInfo { ok: p } => {
                if trusted {
                    predicted(Some(p));
                }
                if let Ok(info) = decode::<rep::GetDeviceInfo>(&reply.body) {
                    // A memory limit is the device's size, as in MemGetInfo.
                    let limit = self.limits.as_ref().and_then(|l| l.memory);
                    assert_eq!(
                        info.props.total_global_mem,
                        limit.map_or(GPU_MEMORY, |l| l.min(GPU_MEMORY))
                    );
                    assert!(!info.attributes.is_empty());
                }
            }
            Expect::MemInfo { ok: p } => {
                if trusted {
                    predicted(Some(p));
                }
                if let Ok(r) = decode::<rep::MemGetInfo>(&reply.body) {
                    let limit = self.limits.as_ref().and_then(|l| l.memory);
                    assert_eq!(r.total, limit.map_or(GPU_MEMORY, |l| l.min(GPU_MEMORY)));
                    assert!(r.free <= r.total);
                    if trusted && self.model.fresh {
                        // Nothing of this client's, nothing left by the
                        // clients before it.
                        assert_eq!(r.free, r.total, "device memory leaked");
                    }
                }
            }
            Expect::Reset => {
                let _ = decode::<rep::DeviceReset>(&reply.body);
                self.model.sticky = None;
                if trusted {
                    predicted(Some(self.model.attached));
                }
                if ok {
                    self.model.reset();
                }
            }
            Expect::Status { ok: p, writes } => {
                predicted(p);
                if ok && trusted {
                    for w in &writes {
                        self.apply(w);
                    }
                }
            }
            Expect::Malloc { size, ok: p } => {
                predicted(p);
                if let Ok(r) = decode::<rep::Malloc>(&reply.body) {
                    assert!(r.ptr != 0 && r.ptr % 256 == 0, "{:#x}", r.ptr);
                    let clash = self
                        .model
                        .allocs
                        .iter()
                        .any(|a| a.live && r.ptr < a.ptr + a.size && a.ptr < r.ptr + size);
                    assert!(
                        !clash || !trusted,
                        "allocation {:#x} overlaps another",
                        r.ptr
                    );
                    self.model.fresh = false;
                    self.model.allocs.push(Alloc {
                        ptr: r.ptr,
                        size,
                        live: true,
                        shadow: (size <= SHADOW_LIMIT).then(|| vec![0; size as usize]),
                    });
                }
            }
            Expect::Free { ptr, ok: p } => {
                predicted(p);
                if ok {
                    if let Some(a) = self
                        .model
                        .allocs
                        .iter_mut()
                        .find(|a| a.live && a.ptr == ptr)
                    {
                        a.live = false;
                        a.shadow = None;
                    }
                }
            }
            Expect::Read { rows, ok: p } => {
                predicted(p);
                if ok {
                    let total: u64 = rows.iter().map(|r| r.1).sum();
                    assert_eq!(reply.bulk.len() as u64, total, "copy length");
                    if trusted {
                        let mut at = 0usize;
                        for (addr, len) in rows {
                            let got = &reply.bulk[at..at + len as usize];
                            at += len as usize;
                            if let Some(want) = self.shadow(addr, len) {
                                assert!(got == want, "device bytes at {addr:#x}+{len} differ");
                                BYTES_CHECKED.fetch_add(len, Ordering::Relaxed);
                            }
                        }
                    }
                }
            }
            Expect::Load {
                key,
                served,
                must,
                must_fail,
                shipped,
                then,
            } => {
                let module = decode::<rep::ModuleLoad>(&reply.body).map(|r| r.module);
                if must {
                    assert!(
                        ok || code == CudaError::MEMORY_ALLOCATION,
                        "a catalog module failed to load: {what}"
                    );
                }
                if must_fail {
                    assert!(!ok, "loaded what the server cannot have: {what}");
                }
                self.update_cache(key, shipped, ok, code);
                if let Ok(id) = module {
                    MODULES_LOADED.fetch_add(1, Ordering::Relaxed);
                    self.model.fresh = false;
                    if trusted {
                        assert_eq!(id as usize, self.model.modules.len(), "module ids");
                    }
                    self.model.modules.push(served);
                    match served {
                        Some(image) => self.look_up_globals(id, image),
                        None => self.model.all_known = false,
                    }
                    if let Some(name) = then {
                        self.look_up_kernel(id, served, name);
                    }
                }
            }
            Expect::Function {
                module,
                name,
                kernel,
                ok: p,
            } => {
                predicted(p);
                if let Ok(r) = decode::<rep::ModuleGetFunction>(&reply.body) {
                    let a = &r.attributes;
                    assert!((1..=1024).contains(&a.max_threads_per_block), "{a:?}");
                    let functions = &mut self.model.functions;
                    let same = functions
                        .iter()
                        .position(|f| f.module == module && f.name == name);
                    if trusted {
                        assert_eq!(
                            r.function as usize,
                            same.unwrap_or(functions.len()),
                            "function ids"
                        );
                    }
                    if same.is_none() {
                        functions.push(Function {
                            module,
                            name,
                            static_shared: a.shared_size_bytes as i64,
                            max_dynamic: i64::from(a.max_dynamic_shared_size_bytes),
                            kernel,
                        });
                    }
                }
            }
            Expect::Global {
                module,
                name,
                size,
                ok: p,
            } => {
                predicted(p);
                if let Ok(r) = decode::<rep::ModuleGetGlobal>(&reply.body) {
                    if let Some(size) = size {
                        assert_eq!(r.size, size, "size of {name}");
                    }
                    let key = (module, name);
                    match self.model.globals.get(&key) {
                        Some(&addr) => assert_eq!(addr, r.ptr, "address of {}", key.1),
                        None => {
                            self.model.globals.insert(key, r.ptr);
                            self.model.allocs.push(Alloc {
                                ptr: r.ptr,
                                size: r.size,
                                live: true,
                                shadow: None,
                            });
                        }
                    }
                }
            }
            Expect::Attribute {
                function,
                max_dynamic,
                ok: p,
            } => {
                predicted(p);
                if ok {
                    if let (Some(f), Some(v)) = (function, max_dynamic) {
                        if let Some(f) = self.model.functions.get_mut(f) {
                            f.max_dynamic = v;
                        }
                    }
                }
            }
            Expect::Launch {
                ok: p,
                writes,
                printf,
                heap,
            } => {
                predicted(p);
                let out = decode::<rep::LaunchKernel>(&reply.body);
                if out.is_ok() {
                    KERNELS_RUN.fetch_add(1, Ordering::Relaxed);
                }
                if heap {
                    self.model.fresh = false;
                }
                match (out, writes) {
                    (Ok(out), Some(writes)) if trusted => {
                        if let Some(want) = printf {
                            assert!(out.printf.0 == want, "printf output");
                        }
                        for w in &writes {
                            self.apply(w);
                        }
                    }
                    // A launch predicted to fail failed before it ran, or
                    // faulted and poisoned the context until a reset.
                    (Err(_), Some(_)) if p == Some(false) => {}
                    _ => self.model.forget_contents(),
                }
            }
        }
    }

    fn update_cache(
        &mut self,
        key: [u8; 32],
        shipped: Option<Option<usize>>,
        ok: bool,
        code: CudaError,
    ) {
        let cache = &mut self.model.cache;
        let known = cache.get(&key).copied();
        if matches!(known, Some(Cached::Catalog(_) | Cached::Other)) {
            return;
        }
        let Some(shipped) = shipped else {
            if ok {
                cache.insert(key, Cached::Other);
            }
            return;
        };
        let entry = match (shipped, ok) {
            (Some(i), true) => Cached::Catalog(i),
            (None, true) => Cached::Other,
            // Refused before it was parsed (not attached, a limit), or
            // parsed and cached and then its variables did not fit.
            (_, false) if code == CudaError::MEMORY_ALLOCATION => Cached::Maybe,
            (_, false) => return,
        };
        cache.insert(key, entry);
    }

    /// Queues lookups of every variable of catalog `image`, loaded as
    /// module `id`, so the model knows all of the client's memory.
    fn look_up_globals(&mut self, id: u32, image: usize) {
        let img: &CatalogImage = &catalog::images()[image];
        for (name, size) in &img.globals {
            let (frame, expect) = self.global_request(id, name.clone(), true, Some(*size));
            self.injected.push_back(frame);
            self.injected_expect.push_back((false, expect));
        }
    }

    /// Queues the lookup of kernel `name` of module `id` (catalog image
    /// `image`, when known).
    fn look_up_kernel(&mut self, id: u32, image: Option<usize>, name: String) {
        let kernel = image.filter(|&i| catalog::images()[i].kernel(&name).is_some());
        let ok = match kernel {
            Some(_) if self.limits.is_some() => None,
            Some(_) => Some(true),
            None => None,
        };
        let ok = self.gate(ok);
        let frame = self.frame(
            &req::ModuleGetFunction {
                module: id,
                name: name.clone(),
            },
            Bulk::none(),
        );
        let expect = Expect::Function {
            module: id,
            kernel: kernel.map(|i| (i, name.clone())),
            name,
            ok,
        };
        self.injected.push_back(frame);
        self.injected_expect.push_back((false, expect));
    }

    /// The bytes at `[addr, addr + len)`, when the model knows them.
    fn shadow(&self, addr: u64, len: u64) -> Option<&[u8]> {
        let i = self.model.live_index(addr, len)?;
        let a = &self.model.allocs[i];
        let off = (addr - a.ptr) as usize;
        a.shadow.as_deref().map(|s| &s[off..off + len as usize])
    }

    fn apply(&mut self, w: &Write) {
        let allocs = &mut self.model.allocs;
        let target = |allocs: &mut Vec<Alloc>, dst: u64, len: u64| -> Option<(usize, usize)> {
            let i = allocs.iter().position(|a| a.contains(dst, len))?;
            Some((i, (dst - allocs[i].ptr) as usize))
        };
        match *w {
            Write::Pattern {
                dst,
                len,
                seed,
                from,
            } => {
                if let Some((i, off)) = target(allocs, dst, len) {
                    if let Some(s) = allocs[i].shadow.as_mut() {
                        for k in 0..len {
                            s[off + k as usize] = pattern(seed, from + k);
                        }
                    }
                }
            }
            Write::Fill { dst, len, value } => {
                if let Some((i, off)) = target(allocs, dst, len) {
                    if let Some(s) = allocs[i].shadow.as_mut() {
                        s[off..off + len as usize].fill(value);
                    }
                }
            }
            Write::Words { dst, count, value } => {
                if let Some((i, off)) = target(allocs, dst, count * 4) {
                    if let Some(s) = allocs[i].shadow.as_mut() {
                        for k in 0..count as usize {
                            s[off + 4 * k..off + 4 * k + 4].copy_from_slice(&value.to_le_bytes());
                        }
                    }
                }
            }
            Write::Copy { dst, src, len } => {
                let bytes = self.shadow(src, len).map(<[u8]>::to_vec);
                let allocs = &mut self.model.allocs;
                if let Some((i, off)) = target(allocs, dst, len) {
                    match (bytes, allocs[i].shadow.as_mut()) {
                        (Some(b), Some(s)) => s[off..off + len as usize].copy_from_slice(&b),
                        _ => allocs[i].shadow = None,
                    }
                }
            }
        }
    }
}

/// Row start addresses of a pitched region (none when it is empty).
fn rows(start: u64, pitch: u64, width: u64, height: u64) -> impl Iterator<Item = u64> {
    let n = if width == 0 { 0 } else { height };
    (0..n).map(move |r| start + r * pitch)
}

/// The dimensions and whether they are valid.
fn dims(d: Dims, grid: bool) -> ([u32; 3], bool) {
    match (d, grid) {
        (Dims::Small(x, y, z), true) => (
            [
                1 + u32::from(x % 4),
                1 + u32::from(y % 2),
                1 + u32::from(z % 2),
            ],
            true,
        ),
        (Dims::Small(x, y, _), false) => ([1 + u32::from(x % 32), 1 + u32::from(y % 2), 1], true),
        (Dims::Invalid(n), true) => {
            const BAD: [[u32; 3]; 5] = [
                [0, 1, 1],
                [1, 0, 1],
                [1, 1, 0],
                [1, 65536, 1],
                [1, 1, 65536],
            ];
            (BAD[n as usize % BAD.len()], false)
        }
        (Dims::Invalid(n), false) => {
            const BAD: [[u32; 3]; 5] =
                [[0, 1, 1], [1025, 1, 1], [1, 1, 65], [32, 32, 2], [1, 0, 1]];
            (BAD[n as usize % BAD.len()], false)
        }
    }
}

/// Packs typed arguments at a kernel's parameter offsets (or, for a kernel
/// the model does not know, pointers then words back to back).
fn pack(layout: Option<&catalog::Kernel>, ptrs: &[Resolved], words: &[u32]) -> Vec<u8> {
    let Some(k) = layout else {
        let mut out = Vec::new();
        for p in ptrs {
            out.extend_from_slice(&p.addr.to_le_bytes());
        }
        for w in words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        return out;
    };
    let mut out = vec![0u8; k.param_bytes];
    let (mut pi, mut wi) = (0, 0);
    for &(off, size) in &k.params {
        match size {
            8 if pi < ptrs.len() => {
                out[off..off + 8].copy_from_slice(&ptrs[pi].addr.to_le_bytes());
                pi += 1;
            }
            4 if wi < words.len() => {
                out[off..off + 4].copy_from_slice(&words[wi].to_le_bytes());
                wi += 1;
            }
            _ => {}
        }
    }
    out
}

fn name_text(n: &Name, image: Option<usize>) -> String {
    match n {
        Name::Kernel(i) => {
            let images = catalog::images();
            let kernels: Vec<&str> = match image {
                Some(m) => images[m].kernels.iter().map(|k| k.name.as_str()).collect(),
                None => images
                    .iter()
                    .flat_map(|img| img.kernels.iter().map(|k| k.name.as_str()))
                    .collect(),
            };
            kernels[*i as usize % kernels.len()].to_string()
        }
        Name::Catalog(i) => {
            let names = catalog::names();
            names[*i as usize % names.len()].clone()
        }
        Name::Text(s) => s.clone(),
    }
}

/// The bytes of an image, and which catalog image they are, if any.
fn image_bytes(image: &Image) -> (Vec<u8>, Option<usize>) {
    let images = catalog::images();
    let bytes = match image {
        Image::Catalog(i) => images[*i as usize % images.len()].fatbin.clone(),
        Image::Mutated { base, edits } => {
            let mut b = images[*base as usize % images.len()].fatbin.clone();
            let n = b.len();
            for &(at, v) in edits {
                b[at as usize % n] = v;
            }
            b
        }
        Image::Ptx(text) => rcud_fatbin::image::wrap_ptx(text.as_bytes()),
        Image::Bytes(b) => b.clone(),
    };
    let which = images.iter().position(|i| i.fatbin == bytes);
    (bytes, which)
}

/// The status at the start of a reply body.
fn status(body: &[u8]) -> CudaError {
    let head = body.first_chunk::<4>().expect("a reply has a status");
    CudaError(u32::from_le_bytes(*head))
}

/// Decodes a reply body as `R`: its fields, or the failure it reports.
fn decode<R: Wire>(body: &[u8]) -> Result<R, Failure> {
    ops::decode_reply::<R>(body).expect("the agent's reply decodes")
}
