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
//! Set-up: [`CsrEndpoint::new`] creates everything and posts all receives; its
//! bytes go to the peer out of band (the TCP bootstrap); [`CsrEndpoint::connect`]
//! takes the peer's bytes and returns the [`CsrChannel`].
//! [`CsrChannel::pair_local`] does both ends in one process.
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
use crate::verbs::{
    Access, Completion, CompletionQueue, Context, Endpoint, MemoryRegion, ProtectionDomain, QpInit,
    QueuePair, RecvWr, SendOp, SendWr, Sge, VerbsError, WcStatus, SOFT_DEVICE,
};
use crate::DEFAULT_CHUNK;

/// Default number of staging chunks per direction.
pub const DEFAULT_CHUNKS: usize = 9;
/// Smallest chunk count (burst `n − 3` must be ≥ 6 and a multiple of 3).
pub const MIN_CHUNKS: usize = 9;
/// Receives posted on the control channel (credits in flight are at most two).
const CTRL_DEPTH: usize = 8;
const BLOB_MAGIC: &[u8; 4] = b"CSR1";

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
    other(format!("CSR: {what}: {e}"))
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

/// One end of a CSR connection before the peer's endpoint is known: all
/// resources created, all receives posted.
pub struct CsrEndpoint {
    inner: Box<Inner>,
}

impl fmt::Debug for CsrEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CsrEndpoint")
            .field("device", &self.inner.device)
            .field("chunk", &self.inner.chunk)
            .field("chunks", &self.inner.n)
            .finish()
    }
}

impl CsrEndpoint {
    /// Creates both channels' structures on `ctx`, registers the staging
    /// chunks and posts every receive. Returns the endpoint and the bytes to
    /// send to the peer (both queue pairs' endpoints and the staging geometry).
    ///
    /// If the device cannot register `2 × chunks` regions, the largest count
    /// (a multiple of 3, at least 9) that registers is used and logged.
    pub fn new(ctx: &Context, opts: &CsrOptions) -> Result<(CsrEndpoint, Vec<u8>), TransportError> {
        opts.validate()?;
        let attr = ctx.attr();
        if opts.chunk as u64 > u64::from(attr.max_msg_size) {
            return Err(other(format!(
                "CSR chunk size {} exceeds the device's largest message ({} bytes)",
                opts.chunk, attr.max_msg_size
            )));
        }
        let pd = ctx
            .alloc_pd()
            .map_err(|e| verbs("allocating a protection domain", e))?;
        let (send_mrs, recv_mrs) = alloc_chunks(&pd, opts)?;
        let n = send_mrs.len();
        let depth = (2 * n + 16) as u32;
        let cq = |what: &str, d: u32| {
            ctx.create_cq(d)
                .map_err(|e| verbs(&format!("creating the {what} completion queue"), e))
        };
        let data_send_cq = cq("data send", depth)?;
        let data_recv_cq = cq("data receive", depth)?;
        let ctrl_send_cq = cq("control send", 2 * CTRL_DEPTH as u32)?;
        let ctrl_recv_cq = cq("control receive", 2 * CTRL_DEPTH as u32)?;
        let data_qp = pd
            .create_qp(&QpInit {
                send_cq: &data_send_cq,
                recv_cq: &data_recv_cq,
                max_send_wr: n as u32,
                max_recv_wr: n as u32,
            })
            .map_err(|e| verbs("creating the data queue pair", e))?;
        let ctrl_qp = pd
            .create_qp(&QpInit {
                send_cq: &ctrl_send_cq,
                recv_cq: &ctrl_recv_cq,
                max_send_wr: CTRL_DEPTH as u32,
                max_recv_wr: CTRL_DEPTH as u32,
            })
            .map_err(|e| verbs("creating the control queue pair", e))?;
        let wrs: Vec<RecvWr<'_>> = recv_mrs
            .iter()
            .enumerate()
            .map(|(i, mr)| RecvWr {
                wr_id: i as u64,
                buf: Some(mr.sge(0, opts.chunk)),
            })
            .collect();
        data_qp
            .post_recv(&wrs)
            .map_err(|e| verbs("posting the data receives", e))?;
        let ctrl: Vec<RecvWr<'_>> = (0..CTRL_DEPTH)
            .map(|i| RecvWr {
                wr_id: i as u64,
                buf: None,
            })
            .collect();
        ctrl_qp
            .post_recv(&ctrl)
            .map_err(|e| verbs("posting the control receives", e))?;
        let blob = encode_blob(opts.chunk, n, &data_qp.endpoint(), &ctrl_qp.endpoint());
        let inner = Inner {
            data_qp,
            ctrl_qp,
            send_mrs,
            recv_mrs,
            data_send_cq,
            data_recv_cq,
            ctrl_send_cq,
            ctrl_recv_cq,
            pd,
            device: ctx.device().name.clone(),
            chunk: opts.chunk,
            n,
            polling: opts.polling,
            direct: opts.zero_copy && ctx.cheap_registration(),
        };
        Ok((
            CsrEndpoint {
                inner: Box::new(inner),
            },
            blob,
        ))
    }

    /// The staging chunk count in use (lower than asked when the device could
    /// not register that many).
    pub fn chunks(&self) -> usize {
        self.inner.n
    }

    /// Connects both channels to the peer described by `peer` (the bytes its
    /// [`CsrEndpoint::new`] returned).
    pub fn connect(self, peer: &[u8]) -> Result<CsrChannel, TransportError> {
        let inner = self.inner;
        let p = decode_blob(peer)?;
        if p.chunk != inner.chunk {
            return Err(other(format!(
                "CSR: the peer's staging chunks are {} bytes, ours {}: both ends must use the \
                 same chunk size",
                p.chunk, inner.chunk
            )));
        }
        if p.n < MIN_CHUNKS || !p.n.is_multiple_of(3) {
            return Err(other(format!(
                "CSR: the peer announces an invalid chunk count {}",
                p.n
            )));
        }
        inner
            .data_qp
            .connect(&p.data)
            .map_err(|e| verbs("connecting the data channel", e))?;
        inner
            .ctrl_qp
            .connect(&p.ctrl)
            .map_err(|e| verbs("connecting the control channel", e))?;
        let peer = format!(
            "csr:{} qp {}/{}",
            inner.device,
            inner.data_qp.qp_num(),
            inner.ctrl_qp.qp_num()
        );
        let n = inner.n as u64;
        let Inner {
            data_qp,
            ctrl_qp,
            send_mrs,
            recv_mrs,
            data_send_cq,
            data_recv_cq,
            ctrl_send_cq,
            ctrl_recv_cq,
            pd,
            chunk,
            n: chunks,
            polling,
            direct,
            ..
        } = *inner;
        let link = CsrLink {
            data_qp,
            ctrl_qp,
            recv_mrs,
            data_send_cq,
            data_recv_cq,
            ctrl_send_cq,
            ctrl_recv_cq,
            chunk,
            n: chunks,
            polling,
            burst: n - 3,
            peer_burst: p.n as u64 - 3,
            window: p.n as u64 - 3,
            ctrl_outstanding: 0,
            ctrl_error: None,
            recv_posted: n,
            granted: n - 3,
        };
        let out = Outgoing::new(send_mrs, pd, chunk, direct, 2 * chunks + 16);
        Ok(CsrChannel {
            stream: Stream::new(link, out, peer),
        })
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

struct PeerBlob {
    chunk: usize,
    n: usize,
    data: Endpoint,
    ctrl: Endpoint,
}

fn encode_blob(chunk: usize, n: usize, data: &Endpoint, ctrl: &Endpoint) -> Vec<u8> {
    let mut b = Vec::with_capacity(24 + data.as_bytes().len() + ctrl.as_bytes().len());
    b.extend_from_slice(BLOB_MAGIC);
    b.extend_from_slice(&(chunk as u64).to_le_bytes());
    b.extend_from_slice(&(n as u32).to_le_bytes());
    for ep in [data, ctrl] {
        b.extend_from_slice(&(ep.as_bytes().len() as u32).to_le_bytes());
        b.extend_from_slice(ep.as_bytes());
    }
    b
}

fn decode_blob(b: &[u8]) -> Result<PeerBlob, TransportError> {
    let bad = || other("CSR: the peer's endpoint bytes are malformed");
    let mut rest = b.strip_prefix(BLOB_MAGIC.as_slice()).ok_or_else(bad)?;
    let mut take = |len: usize| -> Result<&[u8], TransportError> {
        if rest.len() < len {
            return Err(bad());
        }
        let (h, t) = rest.split_at(len);
        rest = t;
        Ok(h)
    };
    let chunk = u64::from_le_bytes(take(8)?.try_into().map_err(|_| bad())?);
    let n = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?);
    let dl = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?);
    let data = Endpoint::from_bytes(take(dl as usize)?);
    let cl = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?);
    let ctrl = Endpoint::from_bytes(take(cl as usize)?);
    if !rest.is_empty() {
        return Err(bad());
    }
    Ok(PeerBlob {
        chunk: usize::try_from(chunk).map_err(|_| bad())?,
        n: n as usize,
        data,
        ctrl,
    })
}

/// The verbs resources of one end. Queue pairs come first so that they are
/// destroyed before the regions their work requests name.
struct Inner {
    data_qp: QueuePair,
    ctrl_qp: QueuePair,
    send_mrs: Vec<MemoryRegion>,
    recv_mrs: Vec<MemoryRegion>,
    data_send_cq: CompletionQueue,
    data_recv_cq: CompletionQueue,
    ctrl_send_cq: CompletionQueue,
    ctrl_recv_cq: CompletionQueue,
    pd: ProtectionDomain,
    device: String,
    chunk: usize,
    n: usize,
    polling: Polling,
    /// Large payloads are posted from the caller's memory.
    direct: bool,
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
    /// Both ends of a connection in this process, on the `soft` device.
    pub fn pair_local(opts: &CsrOptions) -> Result<(CsrChannel, CsrChannel), TransportError> {
        let ctx =
            Context::open_by_name(SOFT_DEVICE).map_err(|e| verbs("opening the soft device", e))?;
        let (a, a_bytes) = CsrEndpoint::new(&ctx, opts)?;
        let (b, b_bytes) = CsrEndpoint::new(&ctx, opts)?;
        Ok((a.connect(&b_bytes)?, b.connect(&a_bytes)?))
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
