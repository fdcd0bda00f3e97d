//! The CSR module: a [`Channel`](crate::Channel) over RDMA channel semantics (send/receive).
//!
//! Each connection has two reliable-connected queue pairs:
//! - the **data channel** carries the frame byte stream (headers, bodies and
//!   payload) in both directions, as sends of registered staging chunks;
//! - the **control channel** carries flow-control credits: zero-length sends
//!   that consume no payload bandwidth.
//!
//! Staging: `n` registered chunks of `chunk` bytes for sending and `n` for
//! receiving (upper layers never register their own memory). Every receive
//! chunk is posted at start; a completed receive is consumed, then re-posted.
//! The byte stream is cut into chunks: chunk boundaries are invisible to the
//! [`Channel`](crate::Channel) caller, and small frames share a chunk (they are gathered, as the
//! TCP module gathers them, and go out on [`Channel::flush`](crate::Channel::flush) or before the
//! channel waits to receive).
//!
//! Flow control, with `b = n − 3` (the burst length; `n ≥ 9`, a multiple of 3):
//! - the sender holds a window of sends it may post; it starts at one burst
//!   (the receiver posted all `n` receives before connecting) and grows by `b`
//!   with every credit. It never posts more than `b` sends beyond a credit, and
//!   with a closed window it waits for the next credit;
//! - the receiver counts receives posted against sends granted and sends a
//!   credit as soon as the re-posted receives can hold a whole new burst
//!   (early notification): after `b − 3` receives of the current burst, not at
//!   its end. A send therefore always finds a posted receive (no RNR).
//!
//! Late error checking: only the last send of each burst is signaled; a
//! staging send chunk is reused once a later signaled completion shows it
//! done, and completion errors (which are always reported) are checked then,
//! on flush, and when the queue pair is seen in the error state.
//!
//! Set-up, as the thesis describes it ([`CsrChannel::accept`] on the agent,
//! [`CsrChannel::connect`] on the client, through the connection manager,
//! [`crate::verbs::cm`]): the agent offers the data channel's port over the
//! TCP bootstrap; each end creates the data channel's structures, registers
//! its staging chunks and posts every receive before it accepts or connects;
//! the agent then opens the control channel's port and sends it over the
//! data channel, together with its geometry (chunk size and count; the
//! client's comes back the same way); each end posts its credit receives
//! before the control channel is accepted or connected. A geometry message
//! takes one receive chunk, which is re-posted before the stream starts.
//! [`CsrChannel::pair_local`] runs both sides in one process.
//!
//! A frame bigger than the window can only be sent while the peer is
//! receiving: like TCP with full socket buffers, two ends that both send large
//! frames before receiving wait on each other. Peer death is never a hang: the
//! waits poll with a time slice and test the queue pairs' state.

use std::fmt;

use crate::channel::TransportError;
use crate::chunks::{channel_via_stream, Link, Outgoing, RecvLink, SendLink, Stream};
pub use crate::rdma::Polling;
use crate::rdma::{blank, other, wait_cq};
use crate::setup::{self, Fields, Rendezvous};
use crate::verbs::cm::{Listener, Pending};
use crate::verbs::{
    Access, Completion, CompletionQueue, Context, MemoryRegion, ProtectionDomain, QpInit,
    QueuePair, RecvWr, SendOp, SendWr, Sge, VerbsError, WcStatus,
};
use crate::DEFAULT_CHUNK;

/// Default number of staging chunks per direction.
pub const DEFAULT_CHUNKS: usize = 9;
/// Smallest chunk count (burst `n − 3` must be ≥ 6 and a multiple of 3).
pub const MIN_CHUNKS: usize = 9;
/// Receives posted on the control channel (credits in flight are at most two).
const CTRL_DEPTH: usize = 8;
const HELLO_MAGIC: &[u8; 4] = b"CSR2";

/// Tunables of the CSR module.
#[derive(Debug, Clone)]
pub struct CsrOptions {
    /// Bytes per staging chunk (one send, one receive).
    pub chunk: usize,
    /// Staging chunks per direction: at least 9 and a multiple of 3.
    pub chunks: usize,
    /// Busy polling or wait-for-event.
    pub polling: Polling,
    /// Post large payloads straight from the caller's memory (device memory
    /// on a server: the GPUDirect path) when the device registers memory
    /// cheaply; otherwise every byte goes through the staging chunks.
    pub zero_copy: bool,
}

impl Default for CsrOptions {
    fn default() -> Self {
        Self {
            chunk: DEFAULT_CHUNK,
            chunks: DEFAULT_CHUNKS,
            polling: Polling::Busy,
            zero_copy: true,
        }
    }
}

impl CsrOptions {
    /// Checks the chunk count and size.
    pub fn validate(&self) -> Result<(), TransportError> {
        if self.chunks < MIN_CHUNKS || !self.chunks.is_multiple_of(3) {
            return Err(other(format!(
                "CSR chunk count {} is invalid: it must be at least {MIN_CHUNKS} and a multiple \
                 of 3 (bursts of n − 3 sends, n − 3 ≥ 6 and a multiple of 3 for the pipeline)",
                self.chunks
            )));
        }
        if self.chunk < 64 || self.chunk > u32::MAX as usize {
            return Err(other(format!(
                "CSR chunk size {} is invalid: it must be between 64 bytes and 4 GiB",
                self.chunk
            )));
        }
        Ok(())
    }
}

fn verbs(what: &str, e: VerbsError) -> TransportError {
    crate::rdma::verbs_error("CSR", what, e)
}

/// Maps a failed completion to a transport error.
fn completion_error(channel: &str, wc: &Completion) -> TransportError {
    match wc.status {
        // The peer went away (or our queue pair failed because it did).
        WcStatus::WrFlush | WcStatus::RetryExceeded => TransportError::Closed,
        WcStatus::RnrRetryExceeded => other(format!(
            "CSR {channel} channel: the peer had no receive posted (receiver not ready): \
             flow control was violated"
        )),
        st => other(format!(
            "CSR {channel} channel: work request {} ({:?}) failed with {st:?}",
            wc.wr_id, wc.opcode
        )),
    }
}

/// What each end says over the data channel once it is open: its staging
/// geometry, and (the agent) the control channel's port.
#[derive(Debug)]
struct Hello {
    chunk: usize,
    n: usize,
    /// 0 from the client.
    ctrl_port: u16,
}

impl Hello {
    const LEN: usize = 18;

    fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..4].copy_from_slice(HELLO_MAGIC);
        b[4..12].copy_from_slice(&(self.chunk as u64).to_le_bytes());
        b[12..16].copy_from_slice(&(self.n as u32).to_le_bytes());
        b[16..].copy_from_slice(&self.ctrl_port.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Result<Hello, TransportError> {
        let mut f = Fields::new(b, HELLO_MAGIC, "CSR geometry")?;
        let chunk = f.u64()?;
        let n = f.u32()? as usize;
        let ctrl_port = f.u16()?;
        f.end()?;
        Ok(Hello {
            chunk: usize::try_from(chunk)
                .map_err(|_| other("CSR: the peer's chunk size does not fit"))?,
            n,
            ctrl_port,
        })
    }
}

/// The data channel of one end: staging chunks, queues, every receive
/// posted. The queue pair comes first so that it is destroyed before the
/// regions its work requests name.
struct DataSide {
    qp: QueuePair,
    send_mrs: Vec<MemoryRegion>,
    recv_mrs: Vec<MemoryRegion>,
    send_cq: CompletionQueue,
    recv_cq: CompletionQueue,
    pd: ProtectionDomain,
    device: String,
    chunk: usize,
    n: usize,
    polling: Polling,
    /// Large payloads are posted from the caller's memory.
    direct: bool,
}

impl DataSide {
    /// Creates the data channel's structures on the connection's device,
    /// registers the staging chunks and posts every receive.
    ///
    /// If the device cannot register `2 × chunks` regions, the largest count
    /// (a multiple of 3, at least 9) that registers is used and logged.
    fn create(p: &mut Pending, opts: &CsrOptions) -> Result<DataSide, TransportError> {
        opts.validate()?;
        let ctx = p.context().clone();
        setup::check_chunk(&ctx, opts.chunk, "CSR")?;
        let pd = ctx
            .alloc_pd()
            .map_err(|e| verbs("allocating a protection domain", e))?;
        let (send_mrs, recv_mrs) = alloc_chunks(&pd, opts)?;
        let n = send_mrs.len();
        let depth = (2 * n + 16) as u32;
        let cq = |what: &str| {
            ctx.create_cq(depth)
                .map_err(|e| verbs(&format!("creating the data {what} completion queue"), e))
        };
        let send_cq = cq("send")?;
        let recv_cq = cq("receive")?;
        let qp = p
            .create_qp(
                &pd,
                &QpInit {
                    send_cq: &send_cq,
                    recv_cq: &recv_cq,
                    max_send_wr: n as u32,
                    max_recv_wr: n as u32,
                },
            )
            .map_err(|e| other(format!("CSR: creating the data queue pair: {e}")))?;
        let wrs: Vec<RecvWr<'_>> = recv_mrs
            .iter()
            .enumerate()
            .map(|(i, mr)| RecvWr {
                wr_id: i as u64,
                buf: Some(mr.sge(0, opts.chunk)),
            })
            .collect();
        qp.post_recv(&wrs)
            .map_err(|e| verbs("posting the data receives", e))?;
        Ok(DataSide {
            qp,
            send_mrs,
            recv_mrs,
            send_cq,
            recv_cq,
            pd,
            device: ctx.device().name.clone(),
            chunk: opts.chunk,
            n,
            polling: opts.polling,
            direct: opts.zero_copy && ctx.cheap_registration(),
        })
    }

    fn send_hello(&self, rv: &Rendezvous, ctrl_port: u16) -> Result<(), TransportError> {
        let hello = Hello {
            chunk: self.chunk,
            n: self.n,
            ctrl_port,
        }
        .encode();
        let mr = &self.send_mrs[0];
        mr.write(0, &hello)
            .map_err(|e| verbs("writing the geometry message", e))?;
        setup::send_message(
            rv,
            &self.qp,
            &self.send_cq,
            Some(mr.sge(0, hello.len())),
            "CSR geometry",
        )
    }

    /// Takes the peer's hello from the first receive chunk and re-posts it.
    fn recv_hello(&self, rv: &Rendezvous) -> Result<Hello, TransportError> {
        let wc = setup::recv_message(rv, &self.qp, &self.recv_cq, "CSR geometry")?;
        let idx = wc.wr_id as usize;
        let len = wc.byte_len as usize;
        if idx >= self.n || len > self.chunk {
            return Err(other(format!(
                "CSR: the peer's first message is not its geometry ({wc:?})"
            )));
        }
        // One byte more than a geometry is enough to tell it is too long.
        let mut b = vec![0u8; len.min(Hello::LEN + 1)];
        let mr = &self.recv_mrs[idx];
        mr.read(0, &mut b)
            .map_err(|e| verbs("reading the geometry message", e))?;
        self.qp
            .post_recv(&[RecvWr {
                wr_id: idx as u64,
                buf: Some(mr.sge(0, self.chunk)),
            }])
            .map_err(|e| verbs("re-posting a data receive", e))?;
        let hello = Hello::decode(&b)?;
        if hello.chunk != self.chunk {
            return Err(other(format!(
                "CSR: the peer's staging chunks are {} bytes, ours {}: both ends must use the \
                 same chunk size",
                hello.chunk, self.chunk
            )));
        }
        if hello.n < MIN_CHUNKS || !hello.n.is_multiple_of(3) {
            return Err(other(format!(
                "CSR: the peer announces an invalid chunk count {}",
                hello.n
            )));
        }
        Ok(hello)
    }
}

/// The control channel of one end: zero-length credits both ways.
struct CtrlSide {
    qp: QueuePair,
    send_cq: CompletionQueue,
    recv_cq: CompletionQueue,
    _pd: ProtectionDomain,
}

impl CtrlSide {
    /// Creates the control channel's structures and posts its receives.
    fn create(p: &mut Pending) -> Result<CtrlSide, TransportError> {
        let ctx = p.context().clone();
        let pd = ctx
            .alloc_pd()
            .map_err(|e| verbs("allocating the control channel's protection domain", e))?;
        let cq = |what: &str| {
            ctx.create_cq(2 * CTRL_DEPTH as u32)
                .map_err(|e| verbs(&format!("creating the control {what} completion queue"), e))
        };
        let send_cq = cq("send")?;
        let recv_cq = cq("receive")?;
        let qp = p
            .create_qp(
                &pd,
                &QpInit {
                    send_cq: &send_cq,
                    recv_cq: &recv_cq,
                    max_send_wr: CTRL_DEPTH as u32,
                    max_recv_wr: CTRL_DEPTH as u32,
                },
            )
            .map_err(|e| other(format!("CSR: creating the control queue pair: {e}")))?;
        let wrs: Vec<RecvWr<'_>> = (0..CTRL_DEPTH)
            .map(|i| RecvWr {
                wr_id: i as u64,
                buf: None,
            })
            .collect();
        qp.post_recv(&wrs)
            .map_err(|e| verbs("posting the control receives", e))?;
        Ok(CtrlSide {
            qp,
            send_cq,
            recv_cq,
            _pd: pd,
        })
    }
}

/// Picks the options once the connection's device is known.
pub type OptionsFor<'a> = &'a dyn Fn(&Context) -> Result<CsrOptions, TransportError>;

impl CsrChannel {
    /// The agent's side of the set-up. The client was offered `first`'s
    /// port: on its data-channel request, create the structures, register
    /// the staging chunks, post every receive and accept; open the control
    /// channel's port and send it over the data channel (with our geometry;
    /// the client's comes back the same way); on the control request, post
    /// the credit receives and accept.
    pub fn accept(
        rv: &Rendezvous,
        first: Listener,
        opts_for: OptionsFor<'_>,
    ) -> Result<CsrChannel, TransportError> {
        let mut p = rv.request(&first, "CSR", "data")?;
        drop(first);
        let opts = opts_for(p.context())?;
        let data = DataSide::create(&mut p, &opts)?;
        rv.establish(p, "CSR", "data")?;
        let (second, ctrl_port) = rv.listen("CSR")?;
        data.send_hello(rv, ctrl_port)?;
        let peer = data.recv_hello(rv)?;
        let mut p = rv.request(&second, "CSR", "control")?;
        let ctrl = CtrlSide::create(&mut p)?;
        rv.establish(p, "CSR", "control")?;
        Ok(CsrChannel::from_sides(data, ctrl, &peer))
    }

    /// The client's side of the set-up: connect the data channel at the
    /// agent's `port` (structures created, staging registered and every
    /// receive posted first), learn the control channel's port over it, and
    /// connect the control channel (its credit receives posted first).
    pub fn connect(
        rv: &Rendezvous,
        port: u16,
        opts_for: OptionsFor<'_>,
    ) -> Result<CsrChannel, TransportError> {
        let mut p = rv.resolve(port, "CSR", "data")?;
        let opts = opts_for(p.context())?;
        let data = DataSide::create(&mut p, &opts)?;
        rv.establish(p, "CSR", "data")?;
        data.send_hello(rv, 0)?;
        let peer = data.recv_hello(rv)?;
        if peer.ctrl_port == 0 {
            return Err(other(
                "CSR: the agent did not name its control channel's port",
            ));
        }
        let mut p = rv.resolve(peer.ctrl_port, "CSR", "control")?;
        let ctrl = CtrlSide::create(&mut p)?;
        rv.establish(p, "CSR", "control")?;
        Ok(CsrChannel::from_sides(data, ctrl, &peer))
    }

    fn from_sides(data: DataSide, ctrl: CtrlSide, peer: &Hello) -> CsrChannel {
        let name = format!(
            "csr:{} qp {}/{}",
            data.device,
            data.qp.qp_num(),
            ctrl.qp.qp_num()
        );
        let n = data.n as u64;
        let link = CsrLink {
            data_qp: data.qp,
            ctrl_qp: ctrl.qp,
            recv_mrs: data.recv_mrs,
            data_send_cq: data.send_cq,
            data_recv_cq: data.recv_cq,
            ctrl_send_cq: ctrl.send_cq,
            ctrl_recv_cq: ctrl.recv_cq,
            _ctrl_pd: ctrl._pd,
            chunk: data.chunk,
            n: data.n,
            polling: data.polling,
            burst: n - 3,
            peer_burst: peer.n as u64 - 3,
            window: peer.n as u64 - 3,
            ctrl_outstanding: 0,
            ctrl_error: None,
            recv_posted: n,
            granted: n - 3,
        };
        let out = Outgoing::new(
            data.send_mrs,
            data.pd,
            data.chunk,
            data.direct,
            2 * data.n + 16,
        );
        CsrChannel {
            stream: Stream::new(link, out, name),
        }
    }
}

fn alloc_chunks(
    pd: &ProtectionDomain,
    opts: &CsrOptions,
) -> Result<(Vec<MemoryRegion>, Vec<MemoryRegion>), TransportError> {
    let mut send = Vec::with_capacity(opts.chunks);
    let mut recv = Vec::with_capacity(opts.chunks);
    for i in 0..opts.chunks {
        let r = pd
            .alloc_mr(opts.chunk, Access::LOCAL_WRITE)
            .and_then(|r| Ok((r, pd.alloc_mr(opts.chunk, Access::NONE)?)));
        match r {
            Ok((r, s)) => {
                recv.push(r);
                send.push(s);
            }
            Err(e @ VerbsError::Limit { .. }) => {
                let fit = i / 3 * 3;
                if fit < MIN_CHUNKS {
                    return Err(verbs(
                        &format!(
                            "registering {} staging chunks of {} bytes (only {i} per direction \
                             registered, fewer than the minimum of {MIN_CHUNKS})",
                            opts.chunks, opts.chunk
                        ),
                        e,
                    ));
                }
                tracing::warn!(
                    asked = opts.chunks,
                    using = fit,
                    "CSR: the device cannot register {} staging chunks per direction ({e}); \
                     using {fit}",
                    opts.chunks
                );
                send.truncate(fit);
                recv.truncate(fit);
                return Ok((send, recv));
            }
            Err(e) => return Err(verbs("registering the staging chunks", e)),
        }
    }
    Ok((send, recv))
}

/// A [`Channel`](crate::Channel) over RDMA channel semantics.
pub struct CsrChannel {
    stream: Stream<CsrLink>,
}

channel_via_stream!(CsrChannel);

/// The queue pairs of one end and their flow control.
struct CsrLink {
    data_qp: QueuePair,
    ctrl_qp: QueuePair,
    recv_mrs: Vec<MemoryRegion>,
    data_send_cq: CompletionQueue,
    data_recv_cq: CompletionQueue,
    ctrl_send_cq: CompletionQueue,
    ctrl_recv_cq: CompletionQueue,
    _ctrl_pd: ProtectionDomain,
    chunk: usize,
    n: usize,
    polling: Polling,
    /// Our burst length (`n − 3`): signaling period and credit unit we grant.
    burst: u64,
    /// The peer's burst length: the credit unit we receive.
    peer_burst: u64,
    /// Sends we may still post before the next credit.
    window: u64,
    /// Credits posted whose completions are not polled yet.
    ctrl_outstanding: usize,
    /// A control-channel failure seen while granting credits.
    ctrl_error: Option<TransportError>,
    /// Receives ever posted on the data channel.
    recv_posted: u64,
    /// Sends ever granted to the peer (including the initial burst).
    granted: u64,
}

impl fmt::Debug for CsrChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CsrChannel")
            .field("peer", &self.stream.peer)
            .field("chunk", &self.stream.link.chunk)
            .field("chunks", &self.stream.link.n)
            .field("window", &self.stream.link.window)
            .finish()
    }
}

impl CsrChannel {
    /// Both ends of a connection in this process, on the `soft` device,
    /// through the whole set-up (the agent's side on a thread of its own).
    /// Returns the client's end and the agent's.
    pub fn pair_local(opts: &CsrOptions) -> Result<(CsrChannel, CsrChannel), TransportError> {
        let agent_opts = opts.clone();
        let (client, agent) = setup::pair_with(
            &setup::local(),
            "CSR",
            move |rv, first| CsrChannel::accept(rv, first, &|_| Ok(agent_opts.clone())),
            |rv, port| CsrChannel::connect(rv, port, &|_| Ok(opts.clone())),
        );
        Ok((client?, agent?))
    }

    /// Staging chunk size in bytes.
    pub fn chunk(&self) -> usize {
        self.stream.link.chunk
    }

    /// Staging chunks per direction.
    pub fn chunks(&self) -> usize {
        self.stream.link.n
    }
}

impl SendLink for CsrLink {
    fn post(&mut self, seq: u64, src: Sge<'_>, signal: bool) -> Result<(), TransportError> {
        while self.window == 0 {
            self.wait_credit()?;
        }
        // Late error checking: only the last send of a burst is signaled.
        let signaled = signal || (seq + 1).is_multiple_of(self.burst);
        let wr = SendWr::new(seq, SendOp::Send, Some(src)).signaled(signaled);
        self.data_qp
            .post_send(&[wr])
            .map_err(|e| verbs("posting a data send", e))?;
        self.window -= 1;
        Ok(())
    }

    fn send_queue(&self) -> (&QueuePair, &CompletionQueue) {
        (&self.data_qp, &self.data_send_cq)
    }

    fn queue_pairs(&self) -> [&QueuePair; 2] {
        [&self.data_qp, &self.ctrl_qp]
    }

    fn polling(&self) -> Polling {
        self.polling
    }

    fn completion_error(&self, wc: &Completion) -> TransportError {
        completion_error("data", wc)
    }
}

impl RecvLink for CsrLink {
    fn next(&mut self) -> Result<(usize, usize), TransportError> {
        let mut wc = [blank(); 1];
        wait_cq(
            &self.data_recv_cq,
            [&self.data_qp, &self.ctrl_qp],
            self.polling,
            &mut wc,
        )?;
        let wc = wc[0];
        if !wc.status.is_success() {
            return Err(completion_error("data", &wc));
        }
        let idx = wc.wr_id as usize;
        if idx >= self.n || wc.byte_len as usize > self.chunk {
            return Err(other(format!("CSR: unexpected receive completion {wc:?}")));
        }
        Ok((idx, wc.byte_len as usize))
    }

    fn region(&self, idx: usize) -> &MemoryRegion {
        &self.recv_mrs[idx]
    }

    /// Re-posts a consumed receive chunk and grants a burst once the posted
    /// receives can hold one (early notification).
    fn finish(&mut self, idx: usize) -> Result<(), TransportError> {
        let mr = &self.recv_mrs[idx];
        self.data_qp
            .post_recv(&[RecvWr {
                wr_id: idx as u64,
                buf: Some(mr.sge(0, self.chunk)),
            }])
            .map_err(|e| verbs("re-posting a data receive", e))?;
        self.recv_posted += 1;
        if self.recv_posted - self.granted >= self.burst {
            self.send_credit();
            self.granted += self.burst;
        }
        Ok(())
    }
}

impl CsrLink {
    /// Waits for one or more credits from the peer.
    fn wait_credit(&mut self) -> Result<(), TransportError> {
        let mut wcs = [blank(); CTRL_DEPTH];
        let got = wait_cq(
            &self.ctrl_recv_cq,
            [&self.data_qp, &self.ctrl_qp],
            self.polling,
            &mut wcs,
        )?;
        for wc in &wcs[..got] {
            if !wc.status.is_success() {
                return Err(completion_error("control", wc));
            }
            self.window += self.peer_burst;
            self.ctrl_qp
                .post_recv(&[RecvWr {
                    wr_id: wc.wr_id,
                    buf: None,
                }])
                .map_err(|e| verbs("re-posting a control receive", e))?;
        }
        Ok(())
    }

    /// Sends one credit. Failures are kept for the sending side to report:
    /// the data already received can still be read.
    fn send_credit(&mut self) {
        let mut wcs = [blank(); CTRL_DEPTH];
        while self.ctrl_outstanding > 0 {
            let got = match self.ctrl_send_cq.poll(&mut wcs) {
                Ok(0) if self.ctrl_outstanding < CTRL_DEPTH => break,
                Ok(0) => match wait_cq(
                    &self.ctrl_send_cq,
                    [&self.data_qp, &self.ctrl_qp],
                    self.polling,
                    &mut wcs,
                ) {
                    Ok(g) => g,
                    Err(e) => {
                        self.ctrl_error.get_or_insert(e);
                        return;
                    }
                },
                Ok(g) => g,
                Err(e) => {
                    self.ctrl_error.get_or_insert(verbs("poll", e));
                    return;
                }
            };
            for wc in &wcs[..got] {
                self.ctrl_outstanding -= 1;
                if !wc.status.is_success() && self.ctrl_error.is_none() {
                    self.ctrl_error = Some(completion_error("control", wc));
                }
            }
        }
        if self.ctrl_error.is_some() {
            return;
        }
        match self
            .ctrl_qp
            .post_send(&[SendWr::new(self.granted, SendOp::Send, None)])
        {
            Ok(()) => self.ctrl_outstanding += 1,
            Err(e) => self.ctrl_error = Some(verbs("posting a credit", e)),
        }
    }
}

impl Link for CsrLink {
    fn take_error(&mut self) -> Result<(), TransportError> {
        self.ctrl_error.take().map_or(Ok(()), Err)
    }
}
