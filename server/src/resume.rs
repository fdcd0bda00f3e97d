//! Sessions that outlive their connection.
//!
//! A client that called `SessionOpen` owns a session: when its connection
//! breaks, the agent keeps the client's GPU state for the grace period and
//! waits for the client to come back on a new connection, which the
//! listener routes to it by session id ([`Sessions`]). Request ids are
//! sequence numbers; the agent remembers the replies the client has not
//! acknowledged ([`ReplyLog`], kept by [`SessionChannel`] as they are
//! sent), drops requests it has executed already, and sends again the
//! replies the client missed.

use std::collections::{HashMap, VecDeque};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rcud_proto::frame::{id_after, FrameHeader, FrameKind, FLAG_ACK};
use rcud_transport::{Channel, TransportError};

use crate::gate::Admission;

/// Default grace period (`--resume-grace`): longer than a client's default
/// outage budget (3 s, from the reconfiguration windows of an InfiniBand
/// subnet), so a client that comes back within its budget finds its session.
pub const DEFAULT_RESUME_GRACE: Duration = Duration::from_secs(10);

/// Largest reply payload kept whole. A client's batch stops growing past
/// this many reply bytes, so a larger payload is the last reply of its
/// batch (or of a synchronous call): nothing the client sent after it has
/// run, and it is read again from the device when it must be sent again.
pub const RETAINED_PAYLOAD: u64 = 256 << 10;

/// Most replies a session keeps unacknowledged; a client acknowledges at
/// every batch, which holds at most 1024 operations.
const MAX_RETAINED: usize = 4096;
/// Most bytes of retained replies.
const MAX_RETAINED_BYTES: usize = 16 << 20;

/// A reply kept until the client acknowledges it.
#[derive(Debug)]
pub struct Retained {
    /// The reply's header.
    pub header: FrameHeader,
    /// Its encoded body.
    pub body: Vec<u8>,
    /// Its payload, when small enough to keep ([`RETAINED_PAYLOAD`]).
    pub payload: Option<Vec<u8>>,
}

impl Retained {
    /// Its payload, if kept and sent whole: a reply cut while it was being
    /// produced holds only the bytes sent before the cut.
    pub fn whole_payload(&self) -> Option<&[u8]> {
        self.payload
            .as_deref()
            .filter(|p| p.len() as u64 == self.header.bulk_len)
    }
}

/// The replies of a session the client may not have received.
#[derive(Debug, Default)]
pub struct ReplyLog {
    entries: VecDeque<Retained>,
    bytes: usize,
    /// Id of the last request executed (its reply begun).
    last_executed: u32,
    /// Id of the newest reply dropped unacknowledged because the log was
    /// full: a resume that needs it cannot be served.
    forgotten: Option<u32>,
}

impl ReplyLog {
    /// Id of the last request executed.
    pub fn last_executed(&self) -> u32 {
        self.last_executed
    }

    /// Whether request `id` has been executed already (a duplicate).
    pub fn executed(&self, id: u32) -> bool {
        !id_after(id, self.last_executed)
    }

    /// Forgets the replies to requests before `id`: the client has them.
    pub fn ack_before(&mut self, id: u32) {
        while let Some(front) = self.entries.front() {
            if !id_after(id, front.header.id) {
                break;
            }
            self.drop_front();
        }
    }

    fn drop_front(&mut self) -> Option<Retained> {
        let e = self.entries.pop_front()?;
        self.bytes -= e.body.len() + e.payload.as_ref().map_or(0, Vec::len);
        Some(e)
    }

    /// Records the start of a reply: its header, body and first payload
    /// bytes. A reply sent again for the same request replaces the first.
    pub fn begin(&mut self, header: &FrameHeader, body: &[u8], bulk: &[u8]) {
        if self
            .entries
            .back()
            .is_some_and(|e| e.header.id == header.id)
        {
            if let Some(e) = self.entries.pop_back() {
                self.bytes -= e.body.len() + e.payload.as_ref().map_or(0, Vec::len);
            }
        }
        let payload = (header.bulk_len <= RETAINED_PAYLOAD).then(|| {
            let mut p = Vec::with_capacity(header.bulk_len as usize);
            p.extend_from_slice(bulk);
            p
        });
        self.bytes += body.len() + payload.as_ref().map_or(0, Vec::len);
        self.entries.push_back(Retained {
            header: *header,
            body: body.to_vec(),
            payload,
        });
        self.last_executed = header.id;
        while self.entries.len() > MAX_RETAINED || self.bytes > MAX_RETAINED_BYTES {
            match self.drop_front() {
                Some(e) => self.forgotten = Some(e.header.id),
                None => break,
            }
        }
    }

    /// Records more payload bytes of the reply being sent.
    pub fn extend(&mut self, piece: &[u8]) {
        if let Some(Some(p)) = self.entries.back_mut().map(|e| e.payload.as_mut()) {
            p.extend_from_slice(piece);
            self.bytes += piece.len();
        }
    }

    /// The replies after `last_reply`, in order, for sending again; `Err`
    /// names a reply the log no longer holds.
    pub fn after(&self, last_reply: u32) -> Result<Vec<&Retained>, u32> {
        if let Some(lost) = self.forgotten {
            if id_after(lost, last_reply) {
                return Err(lost);
            }
        }
        let missed: Vec<&Retained> = self
            .entries
            .iter()
            .filter(|e| id_after(e.header.id, last_reply))
            .collect();
        // Every executed request after `last_reply` has its reply here.
        let expected = self.last_executed.wrapping_sub(last_reply);
        if id_after(self.last_executed, last_reply) && missed.len() as u32 != expected {
            return Err(last_reply.wrapping_add(1));
        }
        Ok(missed)
    }
}

/// The agent's side of its connection: the transport's channel, swapped
/// for a new one when the session resumes, and the log of the replies it
/// sends (only once the client opened a session).
pub struct SessionChannel {
    inner: Box<dyn Channel>,
    /// `Some` once the client opened a session.
    log: Option<ReplyLog>,
}

impl SessionChannel {
    /// A channel that keeps no replies until [`SessionChannel::keep_replies`].
    pub fn new(inner: Box<dyn Channel>) -> Self {
        Self { inner, log: None }
    }

    /// Starts keeping replies: the client opened a session.
    pub fn keep_replies(&mut self) {
        self.log.get_or_insert_with(ReplyLog::default);
    }

    /// The reply log, once the client opened a session.
    pub fn log(&self) -> Option<&ReplyLog> {
        self.log.as_ref()
    }

    /// The reply log, once the client opened a session.
    pub fn log_mut(&mut self) -> Option<&mut ReplyLog> {
        self.log.as_mut()
    }

    /// Continues on the client's new connection.
    pub fn replace(&mut self, inner: Box<dyn Channel>) {
        self.inner = inner;
    }

    /// Sends a frame around the log (a reply sent again).
    pub fn send_unlogged(
        &mut self,
        header: &FrameHeader,
        body: &[u8],
        bulk: &[u8],
    ) -> Result<(), TransportError> {
        self.inner.send_frame(header, body, bulk)
    }
}

impl Channel for SessionChannel {
    fn send_frame(
        &mut self,
        header: &FrameHeader,
        body: &[u8],
        bulk: &[u8],
    ) -> Result<(), TransportError> {
        // Logged before it is sent: a reply cut on the wire is still there.
        if let (Some(log), FrameKind::REPLY) = (&mut self.log, header.kind) {
            log.begin(header, body, bulk);
        }
        self.inner.send_frame(header, body, bulk)
    }

    fn send_bulk(&mut self, bulk: &[u8]) -> Result<(), TransportError> {
        if let Some(log) = &mut self.log {
            log.extend(bulk);
        }
        self.inner.send_bulk(bulk)
    }

    fn send_raw(&mut self, frames: &[u8]) -> Result<(), TransportError> {
        self.inner.send_raw(frames)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        self.inner.flush()
    }

    fn recv_header(&mut self) -> Result<FrameHeader, TransportError> {
        let header = self.inner.recv_header()?;
        if let (Some(log), true) = (&mut self.log, header.flags & FLAG_ACK != 0) {
            log.ack_before(header.id);
        }
        Ok(header)
    }

    fn recv_body(&mut self, len: u32) -> Result<&[u8], TransportError> {
        self.inner.recv_body(len)
    }

    fn recv_bulk_into(&mut self, dst: &mut [u8]) -> Result<(), TransportError> {
        self.inner.recv_bulk_into(dst)
    }

    fn discard_bulk(&mut self, len: u64) -> Result<(), TransportError> {
        self.inner.discard_bulk(len)
    }

    fn peer(&self) -> String {
        self.inner.peer()
    }

    fn peer_left(&self) -> bool {
        self.inner.peer_left()
    }
}

/// A new connection for a parked session, as the gate admitted it.
pub type Reconnection = (TcpStream, Admission);

/// Where a parked agent waits for its client's next connection, and how it
/// turns it into a channel (with the connection's session key, for the
/// client's proof).
pub trait Reconnects: Send {
    /// Waits until `deadline` for the client's next connection, set up.
    fn next(&mut self, deadline: Instant) -> Option<(Box<dyn Channel>, [u8; 32])>;

    /// Whether the client has come back already: the agent then takes an
    /// end of its old connection for a break, not for a goodbye.
    fn pending(&mut self) -> bool;
}

/// What an agent needs to keep its session across connections.
pub struct Resumption {
    /// The session's id, as the listener routes it.
    pub session: [u8; 16],
    /// How long a session waits for its client after its connection broke.
    pub grace: Duration,
    /// Where its client's next connections come from.
    pub reconnects: Box<dyn Reconnects>,
}

impl std::fmt::Debug for Resumption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumption")
            .field("grace", &self.grace)
            .finish()
    }
}

/// How the listener reaches the agent of a session.
pub enum Route {
    /// An agent thread of this process.
    Thread(std::sync::mpsc::Sender<Reconnection>),
    /// An agent process, through its end of a socket pair.
    Process(std::os::unix::net::UnixDatagram),
}

struct Entry {
    tenant: String,
    route: Route,
    /// The session's current connection, shut down when the client comes
    /// back on a new one: the agent may not have seen the old one break.
    current: Option<TcpStream>,
}

/// The listener's table of live sessions: id -> agent.
#[derive(Default)]
pub struct Sessions {
    live: Mutex<HashMap<[u8; 16], Entry>>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("live", &self.len())
            .finish()
    }
}

impl Sessions {
    /// An empty table.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A fresh random session id.
    pub fn new_id() -> std::io::Result<[u8; 16]> {
        let mut id = [0u8; 16];
        getrandom::fill(&mut id)
            .map_err(|e| std::io::Error::other(format!("random source: {e}")))?;
        Ok(id)
    }

    /// Routes session `id` of `tenant` to `route` until the returned guard
    /// drops.
    pub fn register(
        self: &Arc<Self>,
        id: [u8; 16],
        tenant: &str,
        route: Route,
        current: Option<TcpStream>,
    ) -> Registered {
        self.live.lock().insert(
            id,
            Entry {
                tenant: tenant.to_string(),
                route,
                current,
            },
        );
        Registered {
            sessions: self.clone(),
            id,
        }
    }

    /// Whether session `id` lives and belongs to `tenant`.
    pub fn knows(&self, id: &[u8; 16], tenant: &str) -> bool {
        self.live.lock().get(id).is_some_and(|e| e.tenant == tenant)
    }

    /// Hands a new connection to the agent of session `id`.
    pub fn hand_over(&self, id: &[u8; 16], reconnection: Reconnection) -> Result<(), String> {
        let mut live = self.live.lock();
        let Some(entry) = live.get_mut(id) else {
            return Err("the session ended meanwhile".into());
        };
        let old = entry.current.take();
        entry.current = reconnection.0.try_clone().ok();
        let sent = match &entry.route {
            Route::Thread(tx) => tx
                .send(reconnection)
                .map_err(|_| "the session's agent has ended".to_string()),
            Route::Process(socket) => crate::isolation::send_reconnection(socket, reconnection)
                .map_err(|e| format!("cannot reach the session's agent process: {e}")),
        };
        // An agent still reading its old connection wakes up and finds the
        // new one waiting. Only now: woken before the new one is there, it
        // would take the shut-down connection for a client that left.
        if let Some(old) = old {
            let _ = old.shutdown(std::net::Shutdown::Both);
        }
        sent
    }

    /// Forgets every session: parked agents stop waiting (shutdown).
    pub fn clear(&self) {
        self.live.lock().clear();
    }

    /// Sessions routed.
    pub fn len(&self) -> usize {
        self.live.lock().len()
    }

    /// Whether no session is routed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Unroutes a session when its agent ends.
#[derive(Debug)]
pub struct Registered {
    sessions: Arc<Sessions>,
    id: [u8; 16],
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.sessions.live.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(id: u32, body: &[u8], bulk_len: u64) -> FrameHeader {
        FrameHeader {
            flags: 0,
            kind: FrameKind::REPLY,
            op: 1,
            body_len: body.len() as u32,
            id,
            bulk_len,
        }
    }

    #[test]
    fn the_log_keeps_what_was_not_acknowledged() {
        let mut log = ReplyLog::default();
        for id in 1..=5 {
            log.begin(&reply(id, b"ok", 0), b"ok", &[]);
        }
        assert_eq!(log.last_executed(), 5);
        assert!(log.executed(3) && !log.executed(6));
        log.ack_before(3);
        let missed = log.after(3).unwrap();
        assert_eq!(
            missed.iter().map(|e| e.header.id).collect::<Vec<_>>(),
            [4, 5]
        );
        assert!(log.after(5).unwrap().is_empty());
        // Replies acknowledged are gone: asking for them is an error.
        assert_eq!(log.after(1).err(), Some(2));
    }

    #[test]
    fn payloads_are_kept_whole_or_not_at_all() {
        let mut log = ReplyLog::default();
        log.begin(&reply(7, b"", 4), b"", b"ab");
        log.extend(b"cd");
        let big = RETAINED_PAYLOAD + 1;
        log.begin(&reply(8, b"", big), b"", b"x");
        log.extend(b"y");
        let missed = log.after(6).unwrap();
        assert_eq!(missed[0].payload.as_deref(), Some(&b"abcd"[..]));
        assert!(missed[1].payload.is_none());
        // The same reply begun again replaces the first.
        log.begin(&reply(8, b"", 2), b"", b"zz");
        assert_eq!(log.after(7).unwrap().len(), 1);
    }

    #[test]
    fn payloads_not_kept_are_not_counted() {
        let mut log = ReplyLog::default();
        for id in 1..=100 {
            // Each the first piece of a reply of 1 MiB, not kept.
            log.begin(&reply(id, b"", 1 << 20), b"", &[0; 1 << 16]);
        }
        assert!(log.after(0).is_ok(), "replies were forgotten");
        // A kept reply cut halfway is not whole.
        log.begin(&reply(101, b"", 8), b"", b"abcd");
        let missed = log.after(100).unwrap();
        assert_eq!(missed[0].whole_payload(), None);
    }

    #[test]
    fn ids_wrap_as_serial_numbers() {
        let mut log = ReplyLog::default();
        for id in [u32::MAX - 1, u32::MAX, 0, 1] {
            log.begin(&reply(id, b"", 0), b"", &[]);
        }
        assert!(log.executed(u32::MAX) && log.executed(0) && !log.executed(2));
        log.ack_before(0);
        let ids: Vec<u32> = log
            .after(u32::MAX)
            .unwrap()
            .iter()
            .map(|e| e.header.id)
            .collect();
        assert_eq!(ids, [0, 1]);
    }

    #[test]
    fn a_client_that_never_acknowledges_is_bounded() {
        let mut log = ReplyLog::default();
        for id in 1..=(MAX_RETAINED as u32 + 10) {
            log.begin(&reply(id, b"", 0), b"", &[]);
        }
        assert_eq!(log.entries.len(), MAX_RETAINED);
        assert_eq!(log.after(0).err(), Some(10));
    }
}
