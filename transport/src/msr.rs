//! The MSR module: a [`Channel`](crate::Channel) over RDMA memory semantics (RDMA write).
//!
//! Dual channel: each direction has its own reliable-connected queue pair.
//! On the queue pair of a direction the **writer** RDMA-writes staging chunks
//! into the peer's registered receive chunks and follows every write with an
//! empty notification (a zero-length `SEND_WITH_IMM` whose immediate is the
//! chunk's byte count); the **reader** answers each consumed chunk with an
//! empty flow-control send the other way on the same queue pair. So each end
//! owns two queue pairs:
//! - `tx`: our writes and notifications out, the peer's flow control in;
//! - `rx`: the peer's notifications in, our flow control out.
//!
//! Staging: `n` registered chunks of `chunk` bytes per direction: `n` local
//! source chunks for the writes and `n` receive chunks the peer writes into
//! (registered for remote write; their addresses and keys travel in the
//! set-up bytes). Only these chunks are registered. The byte stream is cut into
//! chunks as in CSR: chunk boundaries are invisible to the [`Channel`](crate::Channel) caller,
//! small frames share a chunk and go out on [`Channel::flush`](crate::Channel::flush) or before the
//! channel waits to receive.
//!
//! Flow control: the peer's chunk `s mod n` receives the stream's chunk `s`.
//! The writer starts with a window of every chunk (the receive chunks are free
//! when the connection opens) and gains one chunk per flow-control message,
//! which the reader sends as soon as it has consumed a chunk; with a closed
//! window the writer waits. Notifications and flow-control messages never find
//! the peer without a posted receive: each side keeps `n` posted and at most
//! `n` can be in flight.
//!
//! Error checking is late: only one notification in every `⌈n/3⌉` is
//! signaled; a local staging chunk is reused once a later signaled completion
//! shows it done, and failed work requests (always reported) are seen then, on
//! flush, and when the queue pair is seen in the error state.
//!
//! Set-up: [`MsrEndpoint::new`] creates everything and posts all receives;
//! its bytes (both queue pairs and the receive chunks' addresses and keys) go
//! to the peer out of band (the TCP bootstrap); [`MsrEndpoint::connect`] takes
//! the peer's bytes and returns the [`MsrChannel`]. [`MsrChannel::pair_local`]
//! does both ends in one process.
//!
//! As with CSR and TCP, two ends that both send more than a window before
//! receiving wait on each other. Peer death is never a hang: the waits poll
//! with a time slice and test the queue pairs' state.

use std::fmt;

pub use crate::rdma::Polling;
use crate::rdma::{blank, other, wait_cq};

use crate::channel::TransportError;
use crate::chunks::{channel_via_stream, Link, Outgoing, RecvLink, SendLink, Stream};
use crate::verbs::{
    Access, Completion, CompletionQueue, Context, Endpoint, MemoryRegion, ProtectionDomain, QpInit,
    QueuePair, RecvWr, RemoteRegion, SendOp, SendWr, Sge, VerbsError, WcOpcode, WcStatus,
    SOFT_DEVICE,
};
use crate::DEFAULT_CHUNK;

/// Default number of staging chunks per direction.
pub const DEFAULT_CHUNKS: usize = 9;
/// Smallest chunk count.
pub const MIN_CHUNKS: usize = 1;
/// Largest chunk count (bounds one connection's staging memory and keeps
/// the description under the bootstrap's 64 KiB limit).
pub const MAX_CHUNKS: usize = 1024;
/// Send-queue slots beyond the ones the protocol can fill.
const SLACK: usize = 4;
const BLOB_MAGIC: &[u8; 4] = b"MSR1";

/// Tunables of the MSR module.
#[derive(Debug, Clone)]
pub struct MsrOptions {
    /// Bytes per staging chunk (one RDMA write).
    pub chunk: usize,
    /// Staging chunks per direction (at least 1).
    pub chunks: usize,
    /// Busy polling or wait-for-event.
    pub polling: Polling,
    /// Write large payloads straight from the caller's memory (device memory
    /// on a server: the GPUDirect path) when the device registers memory
    /// cheaply; otherwise every byte goes through the staging chunks.
    pub zero_copy: bool,
}

impl Default for MsrOptions {
    fn default() -> Self {
        Self {
            chunk: DEFAULT_CHUNK,
            chunks: DEFAULT_CHUNKS,
            polling: Polling::Busy,
            zero_copy: true,
        }
    }
}

impl MsrOptions {
    /// Checks the chunk count and size.
    pub fn validate(&self) -> Result<(), TransportError> {
        if !(MIN_CHUNKS..=MAX_CHUNKS).contains(&self.chunks) {
            return Err(other(format!(
                "MSR chunk count {} is invalid: it must be between {MIN_CHUNKS} and {MAX_CHUNKS}",
                self.chunks
            )));
        }
        if self.chunk < 64 || self.chunk > u32::MAX as usize {
            return Err(other(format!(
                "MSR chunk size {} is invalid: it must be between 64 bytes and 4 GiB",
                self.chunk
            )));
        }
        Ok(())
    }
}

fn verbs(what: &str, e: VerbsError) -> TransportError {
    other(format!("MSR: {what}: {e}"))
}

/// Maps a failed completion to a transport error.
fn completion_error(wc: &Completion) -> TransportError {
    match wc.status {
        // The peer went away (or our queue pair failed because it did).
        WcStatus::WrFlush | WcStatus::RetryExceeded => TransportError::Closed,
        WcStatus::RnrRetryExceeded => other(
            "MSR: the peer had no receive posted for a notification or flow-control message \
             (receiver not ready): flow control was violated",
        ),
        WcStatus::RemoteAccess => other(format!(
            "MSR: the peer rejected RDMA write {} (wrong key or out of its staging chunk)",
            wc.wr_id
        )),
        st => other(format!(
            "MSR: work request {} ({:?}) failed with {st:?}",
            wc.wr_id, wc.opcode
        )),
    }
}

/// One end of an MSR connection before the peer's endpoint is known: all
/// resources created, all receives posted.
pub struct MsrEndpoint {
    inner: Box<Inner>,
}

impl fmt::Debug for MsrEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsrEndpoint")
            .field("device", &self.inner.device)
            .field("chunk", &self.inner.chunk)
            .field("chunks", &self.inner.n)
            .finish()
    }
}

fn post_empty_recvs(qp: &QueuePair, n: usize, what: &str) -> Result<(), TransportError> {
    let wrs: Vec<RecvWr<'_>> = (0..n)
        .map(|i| RecvWr {
            wr_id: i as u64,
            buf: None,
        })
        .collect();
    qp.post_recv(&wrs)
        .map_err(|e| verbs(&format!("posting the {what} receives"), e))
}

impl MsrEndpoint {
    /// Creates both channels' structures on `ctx`, registers the staging
    /// chunks and posts every notification and flow-control receive. Returns
    /// the endpoint and the bytes to send to the peer (both queue pairs'
    /// endpoints, the staging geometry and the receive chunks' keys).
    ///
    /// If the device cannot register `2 × chunks` regions, the largest count
    /// that registers is used and logged.
    pub fn new(ctx: &Context, opts: &MsrOptions) -> Result<(MsrEndpoint, Vec<u8>), TransportError> {
        opts.validate()?;
        let attr = ctx.attr();
        if opts.chunk as u64 > u64::from(attr.max_msg_size) {
            return Err(other(format!(
                "MSR chunk size {} exceeds the device's largest message ({} bytes)",
                opts.chunk, attr.max_msg_size
            )));
        }
        let pd = ctx
            .alloc_pd()
            .map_err(|e| verbs("allocating a protection domain", e))?;
        let (send_mrs, recv_mrs) = alloc_chunks(&pd, opts)?;
        let n = send_mrs.len();
        let cq = |what: &str, d: usize| {
            ctx.create_cq(d as u32)
                .map_err(|e| verbs(&format!("creating the {what} completion queue"), e))
        };
        // Every work request may complete (flushed) at once on an error.
        let tx_send_cq = cq("write", 2 * n + 2 * SLACK)?;
        let tx_recv_cq = cq("flow-control receive", n + SLACK)?;
        let rx_send_cq = cq("flow-control send", n + 2 * SLACK)?;
        let rx_recv_cq = cq("notification receive", n + SLACK)?;
        let tx_qp = pd
            .create_qp(&QpInit {
                send_cq: &tx_send_cq,
                recv_cq: &tx_recv_cq,
                // A write and a notification per chunk in flight.
                max_send_wr: (2 * n + SLACK) as u32,
                max_recv_wr: n as u32,
            })
            .map_err(|e| verbs("creating the outgoing queue pair", e))?;
        let rx_qp = pd
            .create_qp(&QpInit {
                send_cq: &rx_send_cq,
                recv_cq: &rx_recv_cq,
                max_send_wr: (n + SLACK) as u32,
                max_recv_wr: n as u32,
            })
            .map_err(|e| verbs("creating the incoming queue pair", e))?;
        post_empty_recvs(&tx_qp, n, "flow-control")?;
        post_empty_recvs(&rx_qp, n, "notification")?;
        let regions: Vec<RemoteRegion> = recv_mrs.iter().map(MemoryRegion::remote).collect();
        let blob = encode_blob(opts.chunk, &tx_qp.endpoint(), &rx_qp.endpoint(), &regions);
        let inner = Inner {
            tx_qp,
            rx_qp,
            send_mrs,
            recv_mrs,
            tx_send_cq,
            tx_recv_cq,
            rx_send_cq,
            rx_recv_cq,
            pd,
            device: ctx.device().name.clone(),
            chunk: opts.chunk,
            n,
            polling: opts.polling,
            direct: opts.zero_copy && ctx.cheap_registration(),
        };
        Ok((
            MsrEndpoint {
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
    /// [`MsrEndpoint::new`] returned).
    pub fn connect(self, peer: &[u8]) -> Result<MsrChannel, TransportError> {
        let inner = self.inner;
        let p = decode_blob(peer)?;
        if p.chunk != inner.chunk {
            return Err(other(format!(
                "MSR: the peer's staging chunks are {} bytes, ours {}: both ends must use the \
                 same chunk size",
                p.chunk, inner.chunk
            )));
        }
        if !(MIN_CHUNKS..=MAX_CHUNKS).contains(&p.regions.len()) {
            return Err(other(format!(
                "MSR: the peer announces an invalid chunk count {}",
                p.regions.len()
            )));
        }
        if let Some(r) = p.regions.iter().find(|r| r.len < inner.chunk as u64) {
            return Err(other(format!(
                "MSR: the peer's receive chunk {r:?} is smaller than the chunk size {}",
                inner.chunk
            )));
        }
        // Our tx (writes out) pairs with the peer's rx, and the other way.
        inner
            .tx_qp
            .connect(&p.rx)
            .map_err(|e| verbs("connecting the outgoing channel", e))?;
        inner
            .rx_qp
            .connect(&p.tx)
            .map_err(|e| verbs("connecting the incoming channel", e))?;
        let peer = format!(
            "msr:{} qp {}/{}",
            inner.device,
            inner.tx_qp.qp_num(),
            inner.rx_qp.qp_num()
        );
        // The window never exceeds the flow-control receives we posted (n)
        // nor the peer's receive chunks.
        let window = inner.n.min(p.regions.len()) as u64;
        let Inner {
            tx_qp,
            rx_qp,
            send_mrs,
            recv_mrs,
            tx_send_cq,
            tx_recv_cq,
            rx_send_cq,
            rx_recv_cq,
            pd,
            chunk,
            n,
            polling,
            direct,
            ..
        } = *inner;
        let link = MsrLink {
            tx_qp,
            rx_qp,
            recv_mrs,
            tx_send_cq,
            tx_recv_cq,
            rx_send_cq,
            rx_recv_cq,
            chunk,
            n,
            polling,
            signal_every: n.div_ceil(3) as u64,
            window,
            remote: p.regions,
            fc_outstanding: 0,
            fc_error: None,
            recv_seq: 0,
        };
        let out = Outgoing::new(send_mrs, pd, chunk, direct, 2 * n + 2 * SLACK);
        Ok(MsrChannel {
            stream: Stream::new(link, out, peer),
        })
    }
}

fn alloc_chunks(
    pd: &ProtectionDomain,
    opts: &MsrOptions,
) -> Result<(Vec<MemoryRegion>, Vec<MemoryRegion>), TransportError> {
    let mut send = Vec::with_capacity(opts.chunks);
    let mut recv = Vec::with_capacity(opts.chunks);
    for i in 0..opts.chunks {
        let r = pd
            .alloc_mr(opts.chunk, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
            .and_then(|r| Ok((r, pd.alloc_mr(opts.chunk, Access::NONE)?)));
        match r {
            Ok((r, s)) => {
                recv.push(r);
                send.push(s);
            }
            Err(e @ VerbsError::Limit { .. }) => {
                if i < MIN_CHUNKS {
                    return Err(verbs(
                        &format!(
                            "registering {} staging chunks of {} bytes (none registered)",
                            opts.chunks, opts.chunk
                        ),
                        e,
                    ));
                }
                tracing::warn!(
                    asked = opts.chunks,
                    using = i,
                    "MSR: the device cannot register {} staging chunks per direction ({e}); \
                     using {i}",
                    opts.chunks
                );
                return Ok((send, recv));
            }
            Err(e) => return Err(verbs("registering the staging chunks", e)),
        }
    }
    Ok((send, recv))
}

struct PeerBlob {
    chunk: usize,
    tx: Endpoint,
    rx: Endpoint,
    regions: Vec<RemoteRegion>,
}

fn encode_blob(chunk: usize, tx: &Endpoint, rx: &Endpoint, regions: &[RemoteRegion]) -> Vec<u8> {
    let mut b = Vec::with_capacity(
        24 + tx.as_bytes().len() + rx.as_bytes().len() + regions.len() * RemoteRegion::ENCODED_LEN,
    );
    b.extend_from_slice(BLOB_MAGIC);
    b.extend_from_slice(&(chunk as u64).to_le_bytes());
    b.extend_from_slice(&(regions.len() as u32).to_le_bytes());
    for ep in [tx, rx] {
        b.extend_from_slice(&(ep.as_bytes().len() as u32).to_le_bytes());
        b.extend_from_slice(ep.as_bytes());
    }
    for r in regions {
        b.extend_from_slice(&r.to_bytes());
    }
    b
}

fn decode_blob(b: &[u8]) -> Result<PeerBlob, TransportError> {
    let bad = || other("MSR: the peer's endpoint bytes are malformed");
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
    let n = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?) as usize;
    let tl = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?);
    let tx = Endpoint::from_bytes(take(tl as usize)?);
    let rl = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?);
    let rx = Endpoint::from_bytes(take(rl as usize)?);
    if n > MAX_CHUNKS {
        return Err(bad());
    }
    let regions = (0..n)
        .map(|_| RemoteRegion::from_bytes(take(RemoteRegion::ENCODED_LEN)?).ok_or_else(bad))
        .collect::<Result<Vec<_>, _>>()?;
    if !rest.is_empty() {
        return Err(bad());
    }
    Ok(PeerBlob {
        chunk: usize::try_from(chunk).map_err(|_| bad())?,
        tx,
        rx,
        regions,
    })
}

/// The verbs resources of one end. Queue pairs come first so that they are
/// destroyed before the regions their work requests name.
struct Inner {
    tx_qp: QueuePair,
    rx_qp: QueuePair,
    send_mrs: Vec<MemoryRegion>,
    recv_mrs: Vec<MemoryRegion>,
    tx_send_cq: CompletionQueue,
    tx_recv_cq: CompletionQueue,
    rx_send_cq: CompletionQueue,
    rx_recv_cq: CompletionQueue,
    pd: ProtectionDomain,
    device: String,
    chunk: usize,
    n: usize,
    polling: Polling,
    /// Large payloads are written from the caller's memory.
    direct: bool,
}

/// A [`Channel`](crate::Channel) over RDMA memory semantics.
pub struct MsrChannel {
    stream: Stream<MsrLink>,
}

channel_via_stream!(MsrChannel);

/// The queue pairs of one end and their flow control.
struct MsrLink {
    tx_qp: QueuePair,
    rx_qp: QueuePair,
    recv_mrs: Vec<MemoryRegion>,
    tx_send_cq: CompletionQueue,
    tx_recv_cq: CompletionQueue,
    rx_send_cq: CompletionQueue,
    rx_recv_cq: CompletionQueue,
    chunk: usize,
    n: usize,
    polling: Polling,
    /// Signaling period of the notifications (late error checking).
    signal_every: u64,
    /// Chunks we may still write before the next flow-control message.
    window: u64,
    /// The peer's receive chunks: chunk `s` of the stream goes to `s mod len`.
    remote: Vec<RemoteRegion>,
    /// Flow-control sends posted whose completions are not polled yet.
    fc_outstanding: usize,
    /// A flow-control failure seen while reading, for the sending side.
    fc_error: Option<TransportError>,
    /// Chunks received so far; the next lands in `recv_seq mod n`.
    recv_seq: u64,
}

impl fmt::Debug for MsrChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsrChannel")
            .field("peer", &self.stream.peer)
            .field("chunk", &self.stream.link.chunk)
            .field("chunks", &self.stream.link.n)
            .field("window", &self.stream.link.window)
            .finish()
    }
}

impl MsrChannel {
    /// Both ends of a connection in this process, on the `soft` device.
    pub fn pair_local(opts: &MsrOptions) -> Result<(MsrChannel, MsrChannel), TransportError> {
        let ctx =
            Context::open_by_name(SOFT_DEVICE).map_err(|e| verbs("opening the soft device", e))?;
        let (a, a_bytes) = MsrEndpoint::new(&ctx, opts)?;
        let (b, b_bytes) = MsrEndpoint::new(&ctx, opts)?;
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

impl SendLink for MsrLink {
    /// RDMA-writes a chunk into the peer's next receive chunk and notifies
    /// the peer (waiting for flow control if the window is closed).
    fn post(&mut self, seq: u64, src: Sge<'_>, signal: bool) -> Result<(), TransportError> {
        while self.window == 0 {
            self.wait_flow_control()?;
        }
        let target = self.remote[(seq % self.remote.len() as u64) as usize];
        let dst = target
            .at(0)
            .ok_or_else(|| other("MSR: the peer's receive chunk is empty"))?;
        let len = src.len;
        // Late error checking: one notification in `signal_every` is signaled.
        let signaled = signal || (seq + 1).is_multiple_of(self.signal_every);
        let wrs = [
            SendWr::new(seq, SendOp::RdmaWrite(dst), Some(src)).signaled(false),
            // RC ordering: the notification lands after the write's data.
            SendWr::new(seq, SendOp::SendWithImm(len as u32), None).signaled(signaled),
        ];
        self.tx_qp
            .post_send(&wrs)
            .map_err(|e| verbs("posting an RDMA write", e))?;
        self.window -= 1;
        Ok(())
    }

    fn send_queue(&self) -> (&QueuePair, &CompletionQueue) {
        (&self.tx_qp, &self.tx_send_cq)
    }

    fn queue_pairs(&self) -> [&QueuePair; 2] {
        [&self.tx_qp, &self.rx_qp]
    }

    fn polling(&self) -> Polling {
        self.polling
    }

    fn completion_error(&self, wc: &Completion) -> TransportError {
        completion_error(wc)
    }
}

impl RecvLink for MsrLink {
    /// Waits for the next notification: a chunk the peer has written.
    fn next(&mut self) -> Result<(usize, usize), TransportError> {
        let mut wc = [blank(); 1];
        wait_cq(
            &self.rx_recv_cq,
            [&self.tx_qp, &self.rx_qp],
            self.polling,
            &mut wc,
        )?;
        let wc = wc[0];
        if !wc.status.is_success() {
            return Err(completion_error(&wc));
        }
        let len = match (wc.opcode, wc.imm) {
            (WcOpcode::Recv, Some(len)) if len as usize <= self.chunk && len > 0 => len as usize,
            _ => return Err(other(format!("MSR: unexpected notification {wc:?}"))),
        };
        self.rx_qp
            .post_recv(&[RecvWr {
                wr_id: wc.wr_id,
                buf: None,
            }])
            .map_err(|e| verbs("re-posting a notification receive", e))?;
        let idx = (self.recv_seq % self.n as u64) as usize;
        self.recv_seq += 1;
        Ok((idx, len))
    }

    fn region(&self, idx: usize) -> &MemoryRegion {
        &self.recv_mrs[idx]
    }

    /// A consumed chunk may be overwritten: tells the writer.
    fn finish(&mut self, _idx: usize) -> Result<(), TransportError> {
        self.send_flow_control();
        Ok(())
    }
}

impl MsrLink {
    /// Waits for one or more flow-control messages: each frees one chunk of
    /// the peer's staging buffer.
    fn wait_flow_control(&mut self) -> Result<(), TransportError> {
        let mut wcs = [blank(); 16];
        let got = wait_cq(
            &self.tx_recv_cq,
            [&self.tx_qp, &self.rx_qp],
            self.polling,
            &mut wcs,
        )?;
        for wc in &wcs[..got] {
            if !wc.status.is_success() {
                return Err(completion_error(wc));
            }
            self.window += 1;
            self.tx_qp
                .post_recv(&[RecvWr {
                    wr_id: wc.wr_id,
                    buf: None,
                }])
                .map_err(|e| verbs("re-posting a flow-control receive", e))?;
        }
        Ok(())
    }

    /// Sends one flow-control message. Failures are kept for the sending side
    /// to report: the data already received can still be read.
    fn send_flow_control(&mut self) {
        let cap = self.n + SLACK;
        let mut wcs = [blank(); 16];
        while self.fc_outstanding > 0 {
            let got = match self.rx_send_cq.poll(&mut wcs) {
                Ok(0) if self.fc_outstanding < cap => break,
                Ok(0) => match wait_cq(
                    &self.rx_send_cq,
                    [&self.tx_qp, &self.rx_qp],
                    self.polling,
                    &mut wcs,
                ) {
                    Ok(g) => g,
                    Err(e) => {
                        self.fc_error.get_or_insert(e);
                        return;
                    }
                },
                Ok(g) => g,
                Err(e) => {
                    self.fc_error.get_or_insert(verbs("poll", e));
                    return;
                }
            };
            for wc in &wcs[..got] {
                self.fc_outstanding -= 1;
                if !wc.status.is_success() && self.fc_error.is_none() {
                    self.fc_error = Some(completion_error(wc));
                }
            }
        }
        if self.fc_error.is_some() {
            return;
        }
        match self
            .rx_qp
            .post_send(&[SendWr::new(self.recv_seq, SendOp::Send, None)])
        {
            Ok(()) => self.fc_outstanding += 1,
            Err(e) => self.fc_error = Some(verbs("posting a flow-control message", e)),
        }
    }
}

impl Link for MsrLink {
    fn take_error(&mut self) -> Result<(), TransportError> {
        self.fc_error.take().map_or(Ok(()), Err)
    }
}
