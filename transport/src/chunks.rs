//! The byte stream of an RDMA module cut into chunks: the part CSR and MSR
//! share. Each module supplies only how one chunk reaches the peer
//! ([`SendLink`]: a send, or an RDMA write and a notification, with its own
//! flow control) and how the next received chunk is found and given back
//! ([`RecvLink`]).
//!
//! Sending ([`Outgoing`]): bytes are gathered into registered staging chunks;
//! a full chunk goes out at once, a partial one on flush or before the channel
//! waits to receive. Chunk `s` of the stream uses staging chunk `s mod n`,
//! which is reused once a signaled completion shows its last use done (late
//! error checking: failed work requests always complete, so errors are seen
//! then, on flush, and when the queue pair is found in the error state).
//!
//! Large payloads skip the staging copy when the adapter registers process
//! memory cheaply ([`crate::verbs::Context::cheap_registration`]): the
//! caller's buffer is registered for the duration of the call and its chunks
//! are posted straight from it. The peer sees the same chunk stream. The call
//! returns once those work requests have completed, so the caller may reuse its
//! buffer at once, as after a staged send.
//!
//! Receiving ([`Incoming`]): chunks are consumed in order; a consumed chunk is
//! handed back to its link (re-posted, or flow control sent).

use rcud_proto::frame::{FrameHeader, HEADER_LEN};

use crate::channel::{parse_header, Channel, TransportError};
use crate::rdma::{other, wait_cq, Polling};
use crate::verbs::{
    Access, Completion, CompletionQueue, MemoryRegion, ProtectionDomain, QpState, QueuePair, Sge,
};

/// Payloads at least this long (and at least one chunk) are posted from the
/// caller's memory when registration is cheap. Smaller ones are gathered.
const DIRECT_MIN: usize = 256 << 10;

/// How a module moves one chunk to the peer.
pub(crate) trait SendLink {
    /// Posts stream chunk `seq` from `src`, first waiting for the peer's flow
    /// control when the window is closed. The link signals the completions its
    /// late error checking needs; `signal` asks for one more.
    fn post(&mut self, seq: u64, src: Sge<'_>, signal: bool) -> Result<(), TransportError>;
    /// The queue pair chunks are posted on and the queue of their completions.
    fn send_queue(&self) -> (&QueuePair, &CompletionQueue);
    /// Both queue pairs of the connection: waits end when either fails.
    fn queue_pairs(&self) -> [&QueuePair; 2];
    /// Busy polling or wait-for-event.
    fn polling(&self) -> Polling;
    /// The error a failed completion of a chunk means.
    fn completion_error(&self, wc: &Completion) -> TransportError;
}

/// How a module finds received chunks and gives them back.
pub(crate) trait RecvLink {
    /// Waits for the next received chunk: its index and length.
    fn next(&mut self) -> Result<(usize, usize), TransportError>;
    /// The region chunk `idx` was received into.
    fn region(&self, idx: usize) -> &MemoryRegion;
    /// Chunk `idx` is consumed and may be reused by the peer.
    fn finish(&mut self, idx: usize) -> Result<(), TransportError>;
}

/// The sending half of a chunked stream.
pub(crate) struct Outgoing {
    staging: Vec<MemoryRegion>,
    pd: ProtectionDomain,
    chunk: usize,
    /// Whether large payloads are posted from the caller's memory.
    direct: bool,
    /// Sequence number of the chunk being filled (or next to fill).
    seq: u64,
    /// Bytes in the chunk being filled.
    fill: usize,
    /// Whether chunk `seq` is being filled.
    open: bool,
    /// Chunks known complete: every sequence number below this.
    done: u64,
    wcs: Vec<Completion>,
}

impl Outgoing {
    /// A stream over `staging` (one registered region per chunk, each at least
    /// `chunk` bytes) whose payloads are posted from the caller's memory when
    /// `direct` (the device's registration is cheap).
    pub(crate) fn new(
        staging: Vec<MemoryRegion>,
        pd: ProtectionDomain,
        chunk: usize,
        direct: bool,
        completions: usize,
    ) -> Outgoing {
        Outgoing {
            staging,
            pd,
            chunk,
            direct,
            seq: 0,
            fill: 0,
            open: false,
            done: 0,
            wcs: vec![crate::rdma::blank(); completions.max(1)],
        }
    }

    fn n(&self) -> u64 {
        self.staging.len() as u64
    }

    /// Appends bytes to the stream through the staging chunks.
    pub(crate) fn push(
        &mut self,
        mut src: &[u8],
        link: &mut impl SendLink,
    ) -> Result<(), TransportError> {
        while !src.is_empty() {
            if !self.open {
                self.reserve(link)?;
                self.open = true;
                self.fill = 0;
            }
            let idx = (self.seq % self.n()) as usize;
            let k = (self.chunk - self.fill).min(src.len());
            self.staging[idx]
                .write(self.fill, &src[..k])
                .map_err(|e| other(format!("RDMA: staging: {e}")))?;
            self.fill += k;
            src = &src[k..];
            if self.fill == self.chunk {
                self.post_staged(link)?;
            }
        }
        Ok(())
    }

    /// Appends a payload: straight from `src` when that is cheap and large
    /// enough to matter, else through the staging chunks.
    pub(crate) fn push_payload(
        &mut self,
        src: &[u8],
        link: &mut impl SendLink,
    ) -> Result<(), TransportError> {
        if !self.direct || src.len() < DIRECT_MIN.max(self.chunk) {
            return self.push(src, link);
        }
        // Stream order: what is gathered goes first.
        self.send_pending(link)?;
        // SAFETY: `src` is borrowed for this whole call, and the call returns
        // (also on error) only once no posted work request reads it any more:
        // the last one is signaled and completions come in order, and a queue
        // pair in the error state reads nothing.
        #[allow(unsafe_code)]
        let mr = unsafe {
            self.pd
                .register(src.as_ptr().cast_mut(), src.len(), Access::NONE)
        }
        .map_err(|e| other(format!("RDMA: registering a payload: {e}")))?;
        let mut off = 0;
        while off < src.len() {
            let k = self.chunk.min(src.len() - off);
            self.reserve(link)?;
            let last = off + k == src.len();
            // The last chunk is signaled, so its completion (in order) tells
            // when the buffer is no longer read.
            link.post(self.seq, mr.sge(off, k), last)?;
            self.seq += 1;
            off += k;
            self.after_post(link)?;
        }
        // On an early return above the channel is broken; dropping the
        // registration revokes the adapter's access to `src`, so work requests
        // still in flight cannot read it after we return.
        self.wait_done(self.seq, link)?;
        drop(mr);
        Ok(())
    }

    /// Posts the partly filled chunk, if any.
    pub(crate) fn send_pending(&mut self, link: &mut impl SendLink) -> Result<(), TransportError> {
        if self.open && self.fill > 0 {
            self.post_staged(link)?;
        }
        Ok(())
    }

    /// Reports failed work requests without waiting.
    pub(crate) fn check_errors(&mut self, link: &mut impl SendLink) -> Result<(), TransportError> {
        loop {
            let got = link
                .send_queue()
                .1
                .poll(&mut self.wcs)
                .map_err(|e| other(format!("RDMA: poll: {e}")))?;
            if got == 0 {
                return Ok(());
            }
            self.take(got, link)?;
        }
    }

    fn post_staged(&mut self, link: &mut impl SendLink) -> Result<(), TransportError> {
        let idx = (self.seq % self.n()) as usize;
        link.post(self.seq, self.staging[idx].sge(0, self.fill), false)?;
        self.seq += 1;
        self.open = false;
        self.fill = 0;
        self.after_post(link)
    }

    fn after_post(&mut self, link: &mut impl SendLink) -> Result<(), TransportError> {
        // Failed requests report so at once (errors are always signaled); a
        // queue pair in error whose requests all succeeded delivered them.
        if link.send_queue().0.state() == QpState::Error {
            self.check_errors(link)?;
        }
        Ok(())
    }

    /// Waits until chunk `seq`'s staging chunk (and its send-queue slots) may
    /// be reused: the chunk `n` before it must be complete.
    fn reserve(&mut self, link: &mut impl SendLink) -> Result<(), TransportError> {
        let n = self.n();
        if self.seq >= n {
            self.wait_done(self.seq - n + 1, link)?;
        }
        Ok(())
    }

    /// Waits until every chunk below `seq` is complete.
    fn wait_done(&mut self, seq: u64, link: &mut impl SendLink) -> Result<(), TransportError> {
        while self.done < seq {
            let got = wait_cq(
                link.send_queue().1,
                link.queue_pairs(),
                link.polling(),
                &mut self.wcs,
            )?;
            self.take(got, link)?;
        }
        Ok(())
    }

    fn take(&mut self, got: usize, link: &impl SendLink) -> Result<(), TransportError> {
        for wc in &self.wcs[..got] {
            if !wc.status.is_success() {
                return Err(link.completion_error(wc));
            }
            // RC completions come in order: everything up to it is done.
            self.done = self.done.max(wc.wr_id + 1);
        }
        Ok(())
    }
}

/// The receiving half of a chunked stream.
#[derive(Default)]
pub(crate) struct Incoming {
    /// The chunk being consumed: (index, length, position).
    cur: Option<(usize, usize, usize)>,
}

impl Incoming {
    /// The current chunk, waiting for one (after `before_wait`, which sends
    /// what the peer may be waiting for).
    fn current<L: RecvLink>(
        &mut self,
        link: &mut L,
        before_wait: &mut impl FnMut(&mut L) -> Result<(), TransportError>,
    ) -> Result<(usize, usize, usize), TransportError> {
        loop {
            if let Some(c) = self.cur {
                return Ok(c);
            }
            before_wait(link)?;
            let (idx, len) = link.next()?;
            if len == 0 {
                link.finish(idx)?;
            } else {
                self.cur = Some((idx, len, 0));
            }
        }
    }

    fn advance<L: RecvLink>(
        &mut self,
        link: &mut L,
        (idx, len, pos): (usize, usize, usize),
    ) -> Result<(), TransportError> {
        if pos == len {
            self.cur = None;
            link.finish(idx)
        } else {
            self.cur = Some((idx, len, pos));
            Ok(())
        }
    }

    /// Fills `dst` from the received chunks, in order.
    pub(crate) fn read_exact<L: RecvLink>(
        &mut self,
        dst: &mut [u8],
        link: &mut L,
        mut before_wait: impl FnMut(&mut L) -> Result<(), TransportError>,
    ) -> Result<(), TransportError> {
        let mut done = 0;
        while done < dst.len() {
            let (idx, len, pos) = self.current(link, &mut before_wait)?;
            let k = (len - pos).min(dst.len() - done);
            link.region(idx)
                .read(pos, &mut dst[done..done + k])
                .map_err(|e| other(format!("RDMA: reading a receive chunk: {e}")))?;
            done += k;
            self.advance(link, (idx, len, pos + k))?;
        }
        Ok(())
    }

    /// Drops the next `len` bytes.
    pub(crate) fn discard<L: RecvLink>(
        &mut self,
        mut len: u64,
        link: &mut L,
        mut before_wait: impl FnMut(&mut L) -> Result<(), TransportError>,
    ) -> Result<(), TransportError> {
        while len > 0 {
            let (idx, clen, pos) = self.current(link, &mut before_wait)?;
            let k = ((clen - pos) as u64).min(len);
            len -= k;
            self.advance(link, (idx, clen, pos + k as usize))?;
        }
        Ok(())
    }
}

/// A module's link that also reports failures seen on the receiving side
/// (while sending flow control) to the next send.
pub(crate) trait Link: SendLink + RecvLink + Send {
    /// The failure kept for the sending side, if any.
    fn take_error(&mut self) -> Result<(), TransportError>;
}

/// One end of an RDMA module's connection: its link and the two halves of
/// the chunked stream, as a [`Channel`]. The modules wrap it.
pub(crate) struct Stream<L> {
    // The link (queue pairs) is dropped before the staging regions.
    pub(crate) link: L,
    out: Outgoing,
    inc: Incoming,
    body: Vec<u8>,
    pub(crate) peer: String,
}

impl<L: Link> Stream<L> {
    pub(crate) fn new(link: L, out: Outgoing, peer: String) -> Stream<L> {
        Stream {
            link,
            out,
            inc: Incoming::default(),
            body: Vec::with_capacity(256),
            peer,
        }
    }

    fn read_exact(&mut self, dst: &mut [u8]) -> Result<(), TransportError> {
        let out = &mut self.out;
        // Gathered sends go out before we wait: the peer may be waiting for them.
        self.inc
            .read_exact(dst, &mut self.link, |l| out.send_pending(l))
    }
}

impl<L: Link> Channel for Stream<L> {
    fn send_frame(
        &mut self,
        header: &FrameHeader,
        body: &[u8],
        bulk: &[u8],
    ) -> Result<(), TransportError> {
        debug_assert_eq!(header.body_len as usize, body.len());
        debug_assert!(bulk.len() as u64 <= header.bulk_len);
        self.link.take_error()?;
        self.out.push(&header.to_bytes(), &mut self.link)?;
        self.out.push(body, &mut self.link)?;
        self.out.push_payload(bulk, &mut self.link)
    }

    fn send_bulk(&mut self, bulk: &[u8]) -> Result<(), TransportError> {
        self.out.push_payload(bulk, &mut self.link)
    }

    fn send_raw(&mut self, frames: &[u8]) -> Result<(), TransportError> {
        self.link.take_error()?;
        self.out.push(frames, &mut self.link)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        self.link.take_error()?;
        self.out.send_pending(&mut self.link)?;
        self.out.check_errors(&mut self.link)
    }

    fn recv_header(&mut self) -> Result<FrameHeader, TransportError> {
        let mut raw = [0u8; HEADER_LEN];
        self.read_exact(&mut raw)?;
        parse_header(&raw)
    }

    fn recv_body(&mut self, len: u32) -> Result<&[u8], TransportError> {
        let mut body = std::mem::take(&mut self.body);
        body.resize(len as usize, 0);
        let res = self.read_exact(&mut body);
        self.body = body;
        res?;
        Ok(&self.body)
    }

    fn recv_bulk_into(&mut self, dst: &mut [u8]) -> Result<(), TransportError> {
        self.read_exact(dst)
    }

    fn discard_bulk(&mut self, len: u64) -> Result<(), TransportError> {
        let out = &mut self.out;
        self.inc
            .discard(len, &mut self.link, |l| out.send_pending(l))
    }

    fn peer(&self) -> String {
        self.peer.clone()
    }

    fn peer_left(&self) -> bool {
        self.link.queue_pairs().iter().any(|qp| qp.peer_left())
    }
}

/// `impl Channel` for a module's wrapper of a [`Stream`] in field `stream`.
macro_rules! channel_via_stream {
    ($ty:ty) => {
        impl $crate::channel::Channel for $ty {
            fn send_frame(
                &mut self,
                header: &rcud_proto::frame::FrameHeader,
                body: &[u8],
                bulk: &[u8],
            ) -> Result<(), $crate::channel::TransportError> {
                self.stream.send_frame(header, body, bulk)
            }
            fn send_bulk(&mut self, bulk: &[u8]) -> Result<(), $crate::channel::TransportError> {
                self.stream.send_bulk(bulk)
            }
            fn send_raw(&mut self, frames: &[u8]) -> Result<(), $crate::channel::TransportError> {
                self.stream.send_raw(frames)
            }
            fn flush(&mut self) -> Result<(), $crate::channel::TransportError> {
                self.stream.flush()
            }
            fn recv_header(
                &mut self,
            ) -> Result<rcud_proto::frame::FrameHeader, $crate::channel::TransportError> {
                self.stream.recv_header()
            }
            fn recv_body(&mut self, len: u32) -> Result<&[u8], $crate::channel::TransportError> {
                self.stream.recv_body(len)
            }
            fn recv_bulk_into(
                &mut self,
                dst: &mut [u8],
            ) -> Result<(), $crate::channel::TransportError> {
                self.stream.recv_bulk_into(dst)
            }
            fn discard_bulk(&mut self, len: u64) -> Result<(), $crate::channel::TransportError> {
                self.stream.discard_bulk(len)
            }
            fn peer(&self) -> String {
                self.stream.peer()
            }
            fn peer_left(&self) -> bool {
                $crate::channel::Channel::peer_left(&self.stream)
            }
        }
    };
}
pub(crate) use channel_via_stream;
