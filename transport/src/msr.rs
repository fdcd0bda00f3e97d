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
//! (registered for remote write; their addresses and keys travel in a
//! set-up message). Only these chunks are registered. The byte stream is cut into
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
//! Set-up, as the thesis describes it ([`MsrChannel::accept`] on the agent,
//! [`MsrChannel::connect`] on the client, through the connection manager,
//! [`crate::verbs::cm`]): the agent offers the server→client channel's port
//! over the TCP bootstrap and, once that channel is open, sends the
//! client→server channel's port over it; before that second channel is
//! accepted or connected, each end registers its staging chunks and posts its
//! flow-control and notification receives and a receive for the peer's
//! addresses. Then the addresses and keys of the receive chunks cross over
//! the second channel (the agent's first), and the agent's first
//! flow-control message means "ready for writes". [`MsrChannel::pair_local`]
//! runs both sides in one process.
//!
//! As with CSR and TCP, two ends that both send more than a window before
//! receiving wait on each other. Peer death is never a hang: the waits poll
//! with a time slice and test the queue pairs' state.

use std::fmt;

pub use crate::rdma::Polling;
use crate::rdma::{blank, other, wait_cq};

use crate::channel::TransportError;
use crate::chunks::{channel_via_stream, Link, Outgoing, RecvLink, SendLink, Stream};
use crate::setup::{self, Fields, Rendezvous};
use crate::verbs::cm::{Listener, Pending};
use crate::verbs::{
    Access, Completion, CompletionQueue, Context, MemoryRegion, ProtectionDomain, QpInit,
    QueuePair, RecvWr, RemoteRegion, SendOp, SendWr, Sge, VerbsError, WcOpcode, WcStatus,
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
const PORT_MAGIC: &[u8; 4] = b"MSRP";
const ADDRESSES_MAGIC: &[u8; 4] = b"MSR2";

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
    crate::rdma::verbs_error("MSR", what, e)
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

/// Which way a channel carries this end's data.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    /// Our writes and notifications out, the peer's flow control in.
    Out,
    /// The peer's writes and notifications in, our flow control out.
    In,
}

/// One channel of one end, with a small registered buffer for the set-up
/// messages it carries (a port, receive-chunk addresses): the receive half
/// first, the send half after it.
struct Half {
    qp: QueuePair,
    send_cq: CompletionQueue,
    recv_cq: CompletionQueue,
    setup: MemoryRegion,
    pd: ProtectionDomain,
}

/// The largest set-up message for `n` chunks (the address list).
fn setup_len(n: usize) -> usize {
    ADDRESSES_HEAD + n * RemoteRegion::ENCODED_LEN
}

const ADDRESSES_HEAD: usize = 16;

impl Half {
    /// Creates the channel's structures on the connection's device, sized
    /// for `n` chunks (receives are posted later, as the set-up goes).
    fn create(p: &mut Pending, way: Way, n: usize) -> Result<Half, TransportError> {
        let ctx = p.context().clone();
        let pd = ctx
            .alloc_pd()
            .map_err(|e| verbs("allocating a protection domain", e))?;
        let cq = |what: &str, d: usize| {
            ctx.create_cq(d as u32)
                .map_err(|e| verbs(&format!("creating the {what} completion queue"), e))
        };
        // Every work request may complete (flushed) at once on an error.
        let (send_cq, recv_cq, max_send) = match way {
            Way::Out => (
                cq("write", 2 * n + 2 * SLACK)?,
                cq("flow-control receive", n + SLACK)?,
                // A write and a notification per chunk in flight.
                2 * n + SLACK,
            ),
            Way::In => (
                cq("flow-control send", n + 2 * SLACK)?,
                cq("notification receive", n + SLACK)?,
                n + SLACK,
            ),
        };
        let qp = p
            .create_qp(
                &pd,
                &QpInit {
                    send_cq: &send_cq,
                    recv_cq: &recv_cq,
                    max_send_wr: max_send as u32,
                    // One set-up message besides the protocol's n.
                    max_recv_wr: n as u32 + 1,
                },
            )
            .map_err(|e| {
                let which = if way == Way::Out {
                    "outgoing"
                } else {
                    "incoming"
                };
                other(format!("MSR: creating the {which} queue pair: {e}"))
            })?;
        // The peer may use more chunks than we do: room for the most.
        let setup = pd
            .alloc_mr(2 * setup_len(MAX_CHUNKS), Access::LOCAL_WRITE)
            .map_err(|e| verbs("registering the set-up buffer", e))?;
        Ok(Half {
            qp,
            send_cq,
            recv_cq,
            setup,
            pd,
        })
    }

    fn post_setup_recv(&self, what: &str) -> Result<(), TransportError> {
        let half = self.setup.len() / 2;
        setup::post_message_recv(&self.qp, self.setup.sge(0, half), what)
    }

    /// Receives a set-up message (its receive posted first) into `buf`.
    fn recv_setup(&self, rv: &Rendezvous, what: &str) -> Result<Vec<u8>, TransportError> {
        let wc = setup::recv_message(rv, &self.qp, &self.recv_cq, what)?;
        let len = wc.byte_len as usize;
        if wc.wr_id != setup::SETUP_WR || len > self.setup.len() / 2 {
            return Err(other(format!(
                "MSR: expected the peer's {what}, got {wc:?}"
            )));
        }
        let mut b = vec![0u8; len];
        self.setup
            .read(0, &mut b)
            .map_err(|e| verbs("reading a set-up message", e))?;
        Ok(b)
    }

    fn send_setup(&self, rv: &Rendezvous, bytes: &[u8], what: &str) -> Result<(), TransportError> {
        let half = self.setup.len() / 2;
        if bytes.len() > half {
            return Err(other(format!("MSR: the {what} does not fit its buffer")));
        }
        self.setup
            .write(half, bytes)
            .map_err(|e| verbs("writing a set-up message", e))?;
        setup::send_message(
            rv,
            &self.qp,
            &self.send_cq,
            Some(self.setup.sge(half, bytes.len())),
            what,
        )
    }

    /// Sends the second channel's port (agent, on the first channel).
    fn send_port(&self, rv: &Rendezvous, port: u16) -> Result<(), TransportError> {
        let mut b = [0u8; 6];
        b[..4].copy_from_slice(PORT_MAGIC);
        b[4..].copy_from_slice(&port.to_le_bytes());
        self.send_setup(rv, &b, "second channel's port")
    }

    fn recv_port(&self, rv: &Rendezvous) -> Result<u16, TransportError> {
        let b = self.recv_setup(rv, "second channel's port")?;
        let mut f = Fields::new(&b, PORT_MAGIC, "second channel's port")?;
        let port = f.u16()?;
        f.end()?;
        Ok(port)
    }

    /// Sends where the peer may write: our staging geometry and the
    /// addresses and keys of our receive chunks.
    fn send_addresses(
        &self,
        rv: &Rendezvous,
        chunk: usize,
        recv_mrs: &[MemoryRegion],
    ) -> Result<(), TransportError> {
        let mut b = Vec::with_capacity(setup_len(recv_mrs.len()));
        b.extend_from_slice(ADDRESSES_MAGIC);
        b.extend_from_slice(&(chunk as u64).to_le_bytes());
        b.extend_from_slice(&(recv_mrs.len() as u32).to_le_bytes());
        for mr in recv_mrs {
            b.extend_from_slice(&mr.remote().to_bytes());
        }
        self.send_setup(rv, &b, "receive chunks' addresses")
    }

    /// Receives the peer's receive chunks and checks them against ours.
    fn recv_addresses(
        &self,
        rv: &Rendezvous,
        chunk: usize,
    ) -> Result<Vec<RemoteRegion>, TransportError> {
        let what = "receive chunks' addresses";
        let b = self.recv_setup(rv, what)?;
        let mut f = Fields::new(&b, ADDRESSES_MAGIC, "receive chunks' addresses")?;
        let theirs = f.u64()?;
        let n = f.u32()? as usize;
        if theirs != chunk as u64 {
            return Err(other(format!(
                "MSR: the peer's staging chunks are {theirs} bytes, ours {chunk}: both ends must \
                 use the same chunk size"
            )));
        }
        if !(MIN_CHUNKS..=MAX_CHUNKS).contains(&n) {
            return Err(other(format!(
                "MSR: the peer announces an invalid chunk count {n}"
            )));
        }
        let regions = (0..n)
            .map(|_| {
                let r = RemoteRegion::from_bytes(f.take(RemoteRegion::ENCODED_LEN)?).ok_or_else(
                    || other("MSR: the peer's receive chunk addresses are malformed"),
                )?;
                if r.len < chunk as u64 {
                    return Err(other(format!(
                        "MSR: the peer's receive chunk {r:?} is smaller than the chunk size \
                         {chunk}"
                    )));
                }
                Ok(r)
            })
            .collect::<Result<Vec<_>, TransportError>>()?;
        f.end()?;
        Ok(regions)
    }
}

/// Picks the options once the connection's device is known.
pub type OptionsFor<'a> = &'a dyn Fn(&Context) -> Result<MsrOptions, TransportError>;

fn checked_options(ctx: &Context, opts_for: OptionsFor<'_>) -> Result<MsrOptions, TransportError> {
    let opts = opts_for(ctx)?;
    opts.validate()?;
    setup::check_chunk(ctx, opts.chunk, "MSR")?;
    Ok(opts)
}

impl MsrChannel {
    /// The agent's side of the set-up. The client was offered `first`'s
    /// port: accept the server→client channel on it, open a second port and
    /// send it over that channel; on the client→server request, register the
    /// staging chunks, post flow-control and notification receives and a
    /// receive for the client's addresses, accept, send our addresses, take
    /// the client's, and send the flow-control message meaning "ready for
    /// writes".
    pub fn accept(
        rv: &Rendezvous,
        first: Listener,
        opts_for: OptionsFor<'_>,
    ) -> Result<MsrChannel, TransportError> {
        let mut p = rv.request(&first, "MSR", "server→client")?;
        drop(first);
        let ctx = p.context().clone();
        let opts = checked_options(&ctx, opts_for)?;
        let out = Half::create(&mut p, Way::Out, opts.chunks)?;
        rv.establish(p, "MSR", "server→client")?;
        let (second, port) = rv.listen("MSR")?;
        out.send_port(rv, port)?;
        let mut p = rv.request(&second, "MSR", "client→server")?;
        let inc = Half::create(&mut p, Way::In, opts.chunks)?;
        let (send_mrs, recv_mrs) = alloc_chunks(&out.pd, &inc.pd, &opts)?;
        let n = send_mrs.len();
        post_empty_recvs(&out.qp, n, "flow-control")?;
        inc.post_setup_recv("client's addresses")?;
        post_empty_recvs(&inc.qp, n, "notification")?;
        rv.establish(p, "MSR", "client→server")?;
        inc.send_addresses(rv, opts.chunk, &recv_mrs)?;
        let remote = inc.recv_addresses(rv, opts.chunk)?;
        // Zero-length, like every flow-control message.
        setup::send_message(rv, &inc.qp, &inc.send_cq, None, "ready-for-writes message")?;
        Ok(MsrChannel::from_halves(
            &ctx, out, inc, send_mrs, recv_mrs, remote, &opts,
        ))
    }

    /// The client's side of the set-up: connect the server→client channel
    /// at the agent's `port` (a receive for the second port posted), take
    /// the second port over it; create the client→server structures,
    /// register the staging chunks, post a receive for the agent's
    /// addresses and the flow-control and notification receives, connect;
    /// take the agent's addresses, send ours, and wait for "ready for
    /// writes".
    pub fn connect(
        rv: &Rendezvous,
        port: u16,
        opts_for: OptionsFor<'_>,
    ) -> Result<MsrChannel, TransportError> {
        let mut p = rv.resolve(port, "MSR", "server→client")?;
        let ctx = p.context().clone();
        let opts = checked_options(&ctx, opts_for)?;
        let inc = Half::create(&mut p, Way::In, opts.chunks)?;
        inc.post_setup_recv("second channel's port")?;
        rv.establish(p, "MSR", "server→client")?;
        let second = inc.recv_port(rv)?;
        let mut p = rv.resolve(second, "MSR", "client→server")?;
        let out = Half::create(&mut p, Way::Out, opts.chunks)?;
        let (send_mrs, recv_mrs) = alloc_chunks(&out.pd, &inc.pd, &opts)?;
        let n = send_mrs.len();
        out.post_setup_recv("agent's addresses")?;
        post_empty_recvs(&out.qp, n, "flow-control")?;
        post_empty_recvs(&inc.qp, n, "notification")?;
        rv.establish(p, "MSR", "client→server")?;
        let remote = out.recv_addresses(rv, opts.chunk)?;
        out.send_addresses(rv, opts.chunk, &recv_mrs)?;
        let ready = setup::recv_message(rv, &out.qp, &out.recv_cq, "ready-for-writes message")?;
        if ready.wr_id as usize >= n || ready.byte_len != 0 {
            return Err(other(format!(
                "MSR: expected the agent's ready-for-writes message, got {ready:?}"
            )));
        }
        // It took a flow-control receive: put it back.
        out.qp
            .post_recv(&[RecvWr {
                wr_id: ready.wr_id,
                buf: None,
            }])
            .map_err(|e| verbs("re-posting a flow-control receive", e))?;
        Ok(MsrChannel::from_halves(
            &ctx, out, inc, send_mrs, recv_mrs, remote, &opts,
        ))
    }

    fn from_halves(
        ctx: &Context,
        out: Half,
        inc: Half,
        send_mrs: Vec<MemoryRegion>,
        recv_mrs: Vec<MemoryRegion>,
        remote: Vec<RemoteRegion>,
        opts: &MsrOptions,
    ) -> MsrChannel {
        let n = send_mrs.len();
        let name = format!(
            "msr:{} qp {}/{}",
            ctx.device().name,
            out.qp.qp_num(),
            inc.qp.qp_num()
        );
        // The window never exceeds the flow-control receives we posted (n)
        // nor the peer's receive chunks.
        let window = n.min(remote.len()) as u64;
        let link = MsrLink {
            tx_qp: out.qp,
            rx_qp: inc.qp,
            recv_mrs,
            tx_send_cq: out.send_cq,
            tx_recv_cq: out.recv_cq,
            rx_send_cq: inc.send_cq,
            rx_recv_cq: inc.recv_cq,
            chunk: opts.chunk,
            n,
            polling: opts.polling,
            signal_every: n.div_ceil(3) as u64,
            window,
            remote,
            fc_outstanding: 0,
            fc_error: None,
            recv_seq: 0,
            _rx_pd: inc.pd,
        };
        let direct = opts.zero_copy && ctx.cheap_registration();
        let out = Outgoing::new(send_mrs, out.pd, opts.chunk, direct, 2 * n + 2 * SLACK);
        MsrChannel {
            stream: Stream::new(link, out, name),
        }
    }
}

/// Registers the staging chunks: local sources on the outgoing channel's
/// protection domain, receive chunks (written by the peer) on the incoming
/// one's.
fn alloc_chunks(
    out_pd: &ProtectionDomain,
    in_pd: &ProtectionDomain,
    opts: &MsrOptions,
) -> Result<(Vec<MemoryRegion>, Vec<MemoryRegion>), TransportError> {
    let mut send = Vec::with_capacity(opts.chunks);
    let mut recv = Vec::with_capacity(opts.chunks);
    for i in 0..opts.chunks {
        let r = in_pd
            .alloc_mr(opts.chunk, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
            .and_then(|r| Ok((r, out_pd.alloc_mr(opts.chunk, Access::NONE)?)));
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
    /// Holds the receive chunks' registrations (the send chunks' is the
    /// outgoing stream's).
    _rx_pd: ProtectionDomain,
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
    /// Both ends of a connection in this process, on the `soft` device,
    /// through the whole set-up (the agent's side on a thread of its own).
    /// Returns the client's end and the agent's.
    pub fn pair_local(opts: &MsrOptions) -> Result<(MsrChannel, MsrChannel), TransportError> {
        let agent_opts = opts.clone();
        let (client, agent) = setup::pair_with(
            &setup::local(),
            "MSR",
            move |rv, first| MsrChannel::accept(rv, first, &|_| Ok(agent_opts.clone())),
            |rv, port| MsrChannel::connect(rv, port, &|_| Ok(opts.clone())),
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
