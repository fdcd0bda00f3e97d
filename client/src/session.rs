//! A session: one connection to one rcud server, optionally attached to one GPU.

use std::cell::Cell;
use std::time::{Duration, Instant};

use rcud_proto::auth;
use rcud_proto::codec::Wire;
use rcud_proto::codec::Writer;
use rcud_proto::frame::{id_after, FrameHeader, FrameKind, FLAG_ACK};
use rcud_proto::handshake::{self, ClientHello, HandshakeError, ServerHello};
use rcud_proto::ops::{self, Bulk, Failure, Op};
use rcud_transport::bootstrap::{self, TransportKind};
use rcud_transport::deadline::Deadline;
use rcud_transport::tcp::connect_stream;
use rcud_transport::{Channel, TcpOptions};

use crate::{ClientError, Security};

/// How long a server may take to answer the hello.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

thread_local! {
    /// Set while this thread runs an application's host function.
    static IN_HOST_FUNCTION: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is inside a host function (`cudaLaunchHostFunc`,
/// `cudaStreamAddCallback`). CUDA forbids CUDA calls there; they run while
/// their device's queue is held, so the C layer refuses them with
/// `cudaErrorNotPermitted` instead of letting them wait on themselves.
pub fn in_host_function() -> bool {
    IN_HOST_FUNCTION.with(Cell::get)
}

/// Runs a host function on the host-function thread and waits for it. As
/// in CUDA, host functions run on a thread of the library's own, so the
/// application's threads keep their per-thread state (their current
/// context, their runtime's last error) whatever the function does.
fn run_host_function(f: Box<dyn FnOnce() + Send>) {
    type Job = (Box<dyn FnOnce() + Send>, std::sync::mpsc::SyncSender<()>);
    static WORKER: std::sync::OnceLock<Option<std::sync::Mutex<std::sync::mpsc::Sender<Job>>>> =
        std::sync::OnceLock::new();
    let worker = WORKER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("rcud-host-fn".into())
            .spawn(move || {
                IN_HOST_FUNCTION.with(|c| c.set(true));
                for (job, done) in rx {
                    // A panic stays in the function's own frame; the worker
                    // keeps serving the next ones.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    let _ = done.send(());
                }
            });
        spawned.ok().map(|_| std::sync::Mutex::new(tx))
    });
    let (done_tx, done_rx) = std::sync::mpsc::sync_channel(1);
    let sent = match worker {
        Some(tx) => match tx.lock() {
            Ok(tx) => tx.send((f, done_tx)).map_err(|e| e.0 .0),
            Err(_) => Err(f),
        },
        None => Err(f),
    };
    match sent {
        Ok(()) => {
            let _ = done_rx.recv();
        }
        // No worker thread could be made: run it here, still marked.
        Err(f) => {
            struct Reset(bool);
            impl Drop for Reset {
                fn drop(&mut self) {
                    IN_HOST_FUNCTION.with(|c| c.set(self.0));
                }
            }
            let _reset = Reset(IN_HOST_FUNCTION.with(|c| c.replace(true)));
            f();
        }
    }
}

/// The result of a remote call: transport failures outside, CUDA errors inside.
pub type CallResult<T> = Result<Result<T, Failure>, ClientError>;

/// Host memory that an asynchronous device-to-host copy fills when its reply
/// arrives (the C layer implements it over the application's buffer).
pub trait HostDst: Send {
    /// The destination bytes.
    fn bytes(&mut self) -> &mut [u8];
}

/// The host bytes of a queued host-to-device copy, read when the copy is
/// sent rather than when it is queued: an application's page-locked buffer,
/// which a host function queued before the copy may still be writing.
pub trait HostSrc: Send {
    /// How many bytes the copy moves.
    fn len(&self) -> usize;
    /// Whether the copy moves nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The source bytes, packed (rows of a 2-D copy gathered).
    fn bytes(&self) -> std::borrow::Cow<'_, [u8]>;
}

/// What to do with the reply of a queued operation.
pub enum Completion {
    /// Only the status matters.
    Status,
    /// A kernel launch: its reply carries device `printf` output.
    Launch,
    /// A device-to-host copy: the reply's payload goes here.
    ToHost(Box<dyn HostDst>),
    /// An event record: the reply carries a timestamp for event `0`.
    Event(u64),
    /// A host function to run once everything queued before it has completed.
    Callback(Box<dyn FnOnce() + Send>),
    /// A graph launch: its reply carries `printf` output and a timestamp for
    /// each of these events, in order.
    Graph(Vec<u64>),
    /// An asynchronous math-library call (`library` names it in logs); the
    /// client checked its arguments, so a library status other than
    /// success is the server's, and is logged.
    Math(&'static str),
}

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Completion::Status => "Status",
            Completion::Launch => "Launch",
            Completion::ToHost(_) => "ToHost",
            Completion::Event(_) => "Event",
            Completion::Callback(_) => "Callback",
            Completion::Graph(_) => "Graph",
            Completion::Math(_) => "Math",
        })
    }
}

/// An operation written to the batch, waiting for its reply.
#[derive(Debug)]
struct Queued {
    /// Request id and op, or `None` for a host callback (no frame).
    frame: Option<(u32, u16)>,
    completion: Completion,
}

/// What a flush learned from the replies.
#[derive(Debug, Default)]
pub struct FlushOutcome {
    /// The first operation that failed, if any.
    pub first_error: Option<Failure>,
    /// `(event, timestamp_ns)` of every event recorded.
    pub events: Vec<(u64, u64)>,
    /// Device `printf` output of the launches, in order.
    pub printf: Vec<u8>,
}

/// Above this many reply payload bytes, nothing more is added to a batch: the
/// client writes the whole batch before reading any reply, so a large reply in
/// the middle could fill both directions of the connection.
const MAX_REPLY_IN_BATCH: u64 = 256 << 10;

/// Writes the batch from offset `from` (the start of a frame): its encoded
/// frames, with each page-locked payload read in its place.
fn write_batch(
    chan: &mut dyn Channel,
    batch: &[u8],
    sources: &[(usize, Box<dyn HostSrc>)],
    from: usize,
) -> Result<(), rcud_transport::TransportError> {
    let mut written = from;
    // A payload at offset `at` ends the frame before `at`.
    for (at, src) in sources.iter().filter(|(at, _)| *at > from) {
        chan.send_raw(&batch[written..*at])?;
        chan.send_raw(&src.bytes())?;
        written = *at;
    }
    chan.send_raw(&batch[written..])
}

/// How long a client rides out a broken connection (`RCUD_OUTAGE_BUDGET`,
/// seconds; 0 turns resumption off). The default covers the windows seed 001
/// measured while an InfiniBand subnet reconfigures (0.03 s to 2.4 s).
pub fn outage_budget() -> Duration {
    static BUDGET: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *BUDGET.get_or_init(|| match std::env::var("RCUD_OUTAGE_BUDGET") {
        Err(_) => DEFAULT_OUTAGE_BUDGET,
        Ok(v) => match parse_budget(&v) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("rcud: {e}; using {DEFAULT_OUTAGE_BUDGET:?}");
                DEFAULT_OUTAGE_BUDGET
            }
        },
    })
}

/// Default of `RCUD_OUTAGE_BUDGET`.
pub const DEFAULT_OUTAGE_BUDGET: Duration = Duration::from_secs(3);

/// Parses an outage budget in seconds (`3`, `0.5`, `0`).
pub fn parse_budget(value: &str) -> Result<Duration, String> {
    match value.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=3600.0).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!(
            "RCUD_OUTAGE_BUDGET=`{value}` is not a number of seconds between 0 and 3600"
        )),
    }
}

/// What proves a session is this client's, from `SessionOpen`.
#[derive(Clone)]
struct Ticket {
    session: [u8; 16],
    secret: [u8; 32],
}

/// How to reach the server again.
struct Link {
    client_name: String,
    kind: TransportKind,
    security: Security,
    budget: Duration,
}

/// A connection to one server. Its session survives a broken connection:
/// request ids are sequence numbers, and within the outage budget the
/// session reconnects, proves it owns its session on the server, and sends
/// again what the server did not execute; the server sends again the
/// replies it missed.
pub struct Session {
    chan: Box<dyn Channel>,
    server: String,
    hello: ServerHello,
    next_id: u32,
    body: Vec<u8>,
    /// Encoded frames of queued asynchronous operations, written with one
    /// system call at the next flush, and kept until their replies came
    /// (a resumed session sends again what the server did not get).
    batch: Vec<u8>,
    /// Id and offset in `batch` of each frame.
    frames: Vec<(u32, usize)>,
    /// Payloads read from the application's page-locked memory when the
    /// batch is written, each at its offset in `batch`: zero copies.
    sources: Vec<(usize, Box<dyn HostSrc>)>,
    /// Bytes of those payloads.
    source_bytes: u64,
    queued: std::collections::VecDeque<Queued>,
    /// Host functions in `queued` (not run yet).
    callbacks: usize,
    batch_reply_bytes: u64,
    link: Link,
    /// The session on the server, when it keeps sessions.
    ticket: Option<Ticket>,
    /// Id of the last reply received whole.
    last_reply: u32,
    /// Why the session is gone, once resuming it failed.
    lost: Option<String>,
}

/// Most bytes of page-locked payloads one batch carries.
const MAX_SOURCE_BYTES: u64 = 1 << 30;

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.server)
            .finish()
    }
}

/// Whether a failure is the network's, which a session may ride out.
fn broken_link(e: &ClientError) -> bool {
    match e {
        ClientError::Transport { .. } => true,
        // The connection was accepted and then broke in the handshake; a
        // server that refuses connections is not an outage.
        ClientError::Connect { source, .. } => !matches!(
            source.kind(),
            std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
        ),
        _ => false,
    }
}

impl Session {
    /// Connects to `server` and performs the handshake.
    pub fn connect(server: &str, client_name: &str) -> Result<Self, ClientError> {
        Self::connect_with(server, client_name, TransportKind::Tcp)
    }

    /// Connects to `server`, performs the handshake on TCP with the
    /// credentials and TLS settings of the environment ([`Security`]), then
    /// moves the connection to the transport module `kind`.
    pub fn connect_with(
        server: &str,
        client_name: &str,
        kind: TransportKind,
    ) -> Result<Self, ClientError> {
        let security = Security::from_env().map_err(|message| ClientError::Security {
            server: server.to_string(),
            message,
        })?;
        Self::connect_secured(server, client_name, kind, security)
    }

    /// [`Session::connect_with`] with explicit credentials and TLS settings.
    pub fn connect_secured(
        server: &str,
        client_name: &str,
        kind: TransportKind,
        security: &Security,
    ) -> Result<Self, ClientError> {
        Self::connect_resumable(server, client_name, kind, security, outage_budget())
    }

    /// [`Session::connect_secured`] riding out outages of up to `budget`
    /// (zero: a broken connection ends the session).
    pub fn connect_resumable(
        server: &str,
        client_name: &str,
        kind: TransportKind,
        security: &Security,
        budget: Duration,
    ) -> Result<Self, ClientError> {
        let link = Link {
            client_name: client_name.to_string(),
            kind,
            security: security.clone(),
            budget,
        };
        // A handshake cut by the network is tried again within the budget.
        let deadline = Instant::now() + budget;
        let mut delay = Duration::from_millis(10);
        let (chan, hello, _, _) = loop {
            match open_link(server, &link, [0; 16]) {
                Ok(opened) => break opened,
                Err(e) if broken_link(&e) && Instant::now() + delay < deadline => {
                    tracing::info!(server, "connecting again after: {e}");
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(MAX_RETRY_DELAY);
                }
                Err(e) => return Err(e),
            }
        };
        let mut session = Self {
            chan,
            server: server.to_string(),
            hello,
            next_id: 1,
            body: Vec::with_capacity(256),
            batch: Vec::new(),
            frames: Vec::new(),
            sources: Vec::new(),
            source_bytes: 0,
            queued: std::collections::VecDeque::new(),
            callbacks: 0,
            batch_reply_bytes: 0,
            link,
            ticket: None,
            last_reply: 0,
            lost: None,
        };
        if !budget.is_zero() {
            let opened = session.call(&ops::req::SessionOpen {}, &[], &mut [])?;
            match opened {
                Ok(r) if r.secret != [0; 32] => {
                    session.ticket = Some(Ticket {
                        session: r.session,
                        secret: r.secret,
                    })
                }
                // The server does not keep sessions.
                Ok(_) => {}
                Err(f) => {
                    return Err(session.protocol(format!("SessionOpen failed: {f}")));
                }
            }
        }
        Ok(session)
    }

    /// What the server said about itself in the handshake.
    pub fn server_hello(&self) -> &ServerHello {
        &self.hello
    }

    /// The server's address.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Whether the session survives a broken connection.
    pub fn resumable(&self) -> bool {
        self.ticket.is_some()
    }

    fn next_request_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    /// Runs one operation. `bulk_out` is the request payload (host-to-device
    /// bytes); `bulk_in` receives the reply payload (device-to-host bytes).
    pub fn call<O: Op>(
        &mut self,
        req: &O,
        bulk_out: &[u8],
        bulk_in: &mut [u8],
    ) -> CallResult<O::Reply> {
        debug_assert!(O::BULK == Bulk::Request || bulk_out.is_empty());
        debug_assert!(O::BULK == Bulk::Reply || bulk_in.is_empty());
        self.check_lost()?;
        let id = self.next_request_id();
        self.body.clear();
        req.encode(&mut Writer::new(&mut self.body));
        let header = FrameHeader {
            // Every earlier reply has been received.
            flags: FLAG_ACK,
            kind: FrameKind::REQUEST,
            op: O::ID.0,
            body_len: self.body.len() as u32,
            id,
            bulk_len: bulk_out.len() as u64,
        };
        let mut send = true;
        loop {
            match self.call_once::<O>(&header, send, bulk_out, bulk_in) {
                Ok(result) => {
                    self.last_reply = id;
                    return Ok(result);
                }
                Err(e) if broken_link(&e) && self.ticket.is_some() => {
                    let executed = self.recover(e)?;
                    // The server sends the reply again if it ran the call.
                    send = executed != id;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn call_once<O: Op>(
        &mut self,
        header: &FrameHeader,
        send: bool,
        bulk_out: &[u8],
        bulk_in: &mut [u8],
    ) -> CallResult<O::Reply> {
        if send {
            self.chan
                .send_frame(header, &self.body, bulk_out)
                .map_err(|e| self.transport(e))?;
        }
        let id = header.id;
        let reply = self.chan.recv_header().map_err(|e| self.transport(e))?;
        if reply.kind != FrameKind::REPLY || reply.id != id || reply.op != O::ID.0 {
            return Err(self.protocol(format!(
                "expected the reply to request {id} (op {:#06x}), got {reply:?}",
                O::ID.0
            )));
        }
        let body = self
            .chan
            .recv_body(reply.body_len)
            .map_err(|e| ClientError::Transport {
                server: self.server.clone(),
                source: e,
            })?;
        let decoded = ops::decode_reply::<O::Reply>(body);
        let result = decoded.map_err(|e| self.protocol(format!("reply body: {e}")))?;
        let expected_bulk = match result {
            Ok(_) => bulk_in.len() as u64,
            Err(_) => 0,
        };
        if reply.bulk_len != expected_bulk {
            return Err(self.protocol(format!(
                "reply carries {} payload bytes, expected {expected_bulk}",
                reply.bulk_len
            )));
        }
        if expected_bulk > 0 {
            self.chan
                .recv_bulk_into(bulk_in)
                .map_err(|e| self.transport(e))?;
        }
        Ok(result)
    }

    fn check_lost(&self) -> Result<(), ClientError> {
        match &self.lost {
            Some(message) => Err(ClientError::SessionLost {
                server: self.server.clone(),
                message: message.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Reconnects after `cause` broke the connection and resumes the
    /// session; returns the id of the last request the server executed.
    /// Past the outage budget, the session is lost for good.
    fn recover(&mut self, cause: ClientError) -> Result<u32, ClientError> {
        let Some(ticket) = self.ticket.clone() else {
            return Err(cause);
        };
        let started = Instant::now();
        let deadline = started + self.link.budget;
        // Within the budget the application notices nothing: not a warning.
        tracing::info!(server = %self.server, "connection lost ({cause}); resuming the session");
        let mut delay = Duration::from_millis(5);
        loop {
            let last = match self.resume_once(&ticket, deadline) {
                Ok(executed) => {
                    tracing::info!(
                        server = %self.server,
                        after_ms = started.elapsed().as_millis() as u64,
                        "session resumed"
                    );
                    return Ok(executed);
                }
                Err(e) if broken_link(&e) => e,
                Err(e) => {
                    self.lost = Some(e.to_string());
                    return Err(e);
                }
            };
            let now = Instant::now();
            if now >= deadline {
                let message = format!(
                    "the connection broke and could not be resumed within the outage budget of {:.1} s (RCUD_OUTAGE_BUDGET): {last}",
                    self.link.budget.as_secs_f64()
                );
                self.lost = Some(message.clone());
                return Err(ClientError::SessionLost {
                    server: self.server.clone(),
                    message,
                });
            }
            std::thread::sleep(delay.min(deadline - now));
            delay = (delay * 2).min(MAX_RETRY_DELAY);
        }
    }

    /// One attempt to resume: a new connection (the server's name resolved
    /// again), the proof, and the id of the last request the server ran.
    fn resume_once(&mut self, ticket: &Ticket, deadline: Instant) -> Result<u32, ClientError> {
        let (mut chan, _, session_key, socket) =
            open_link(&self.server, &self.link, ticket.session)?;
        // A server that takes the connection and never answers (its agent
        // gone) must not hold the client past its budget.
        let _watchdog = Watchdog::arm(socket, deadline.max(Instant::now() + MIN_RESUME_WAIT));
        let request = ops::req::SessionResume {
            proof: auth::resume_proof(&ticket.secret, &session_key),
            last_reply: self.last_reply,
        };
        let mut body = Vec::new();
        request.encode(&mut Writer::new(&mut body));
        let op = <ops::req::SessionResume as Op>::ID.0;
        let header = FrameHeader {
            flags: 0,
            kind: FrameKind::REQUEST,
            op,
            body_len: body.len() as u32,
            id: 0,
            bulk_len: 0,
        };
        let transport = |source| ClientError::Transport {
            server: self.server.clone(),
            source,
        };
        chan.send_frame(&header, &body, &[]).map_err(transport)?;
        let reply = chan.recv_header().map_err(transport)?;
        if reply.kind != FrameKind::REPLY || reply.op != op || reply.bulk_len != 0 {
            return Err(self.protocol(format!(
                "expected the reply to SessionResume, got {reply:?}"
            )));
        }
        let body = chan.recv_body(reply.body_len).map_err(transport)?;
        match ops::decode_reply::<ops::rep::SessionResume>(body) {
            Ok(Ok(r)) => {
                self.chan = chan;
                Ok(r.last_executed)
            }
            Ok(Err(f)) => Err(ClientError::SessionLost {
                server: self.server.clone(),
                message: f.to_string(),
            }),
            Err(e) => Err(self.protocol(format!("SessionResume reply: {e}"))),
        }
    }

    /// Operations queued and not flushed yet.
    pub fn queued(&self) -> usize {
        self.queued.len()
    }

    /// Bytes waiting in the batch.
    pub fn batch_bytes(&self) -> usize {
        self.batch.len()
    }

    /// Whether the next queued operation must wait for a flush first.
    pub fn batch_full(&self) -> bool {
        self.batch_reply_bytes > MAX_REPLY_IN_BATCH
            || self.batch.len() > (8 << 20)
            || self.source_bytes > MAX_SOURCE_BYTES
            || self.queued.len() >= 1024
    }

    /// Queues an operation; it is sent at the next [`Session::flush`].
    pub fn enqueue<O: Op>(&mut self, req: &O, bulk_out: &[u8], completion: Completion) {
        self.push_request(req, bulk_out.len(), completion);
        self.batch.extend_from_slice(bulk_out);
    }

    /// Appends `req`'s header and body to the batch, announcing `bulk_len`
    /// payload bytes (which the caller adds), and queues its completion.
    fn push_request<O: Op>(&mut self, req: &O, bulk_len: usize, completion: Completion) {
        let id = self.next_request_id();
        self.body.clear();
        req.encode(&mut Writer::new(&mut self.body));
        let header = FrameHeader {
            // The first frame of a batch: every earlier reply was received.
            flags: if self.frames.is_empty() { FLAG_ACK } else { 0 },
            kind: FrameKind::REQUEST,
            op: O::ID.0,
            body_len: self.body.len() as u32,
            id,
            bulk_len: bulk_len as u64,
        };
        self.frames.push((id, self.batch.len()));
        self.batch.extend_from_slice(&header.to_bytes());
        self.batch.extend_from_slice(&self.body);
        self.queued.push_back(Queued {
            frame: Some((id, O::ID.0)),
            completion,
        });
    }

    /// Queues an operation whose payload is read from `src` when the batch
    /// is written (page-locked memory the application leaves alone until
    /// the work completes), not copied now.
    pub fn enqueue_source<O: Op>(&mut self, req: &O, src: Box<dyn HostSrc>) {
        let len = src.len();
        self.push_request(req, len, Completion::Status);
        self.sources.push((self.batch.len(), src));
        self.source_bytes += len as u64;
    }

    /// Notes that the last queued operation's reply carries `bytes` of payload.
    pub fn expect_reply_bytes(&mut self, bytes: u64) {
        self.batch_reply_bytes += bytes;
    }

    /// Whether a queued host function has not run yet.
    pub fn has_pending_callback(&self) -> bool {
        self.callbacks > 0
    }

    /// Queues a host function to run after everything queued before it.
    pub fn enqueue_callback(&mut self, f: Box<dyn FnOnce() + Send>) {
        self.callbacks += 1;
        self.queued.push_back(Queued {
            frame: None,
            completion: Completion::Callback(f),
        });
    }

    /// Sends every queued operation with one write and processes the replies in
    /// order: payloads land in their host buffers, callbacks run, events get
    /// their timestamps, and the first failure is reported.
    pub fn flush(&mut self) -> Result<FlushOutcome, ClientError> {
        let mut outcome = FlushOutcome::default();
        if self.queued.is_empty() {
            return Ok(outcome);
        }
        let result = self
            .check_lost()
            .and_then(|()| self.run_batch(&mut outcome));
        self.batch.clear();
        self.frames.clear();
        self.sources.clear();
        self.source_bytes = 0;
        self.batch_reply_bytes = 0;
        if result.is_err() {
            self.queued.clear();
            self.callbacks = 0;
        }
        result.map(|()| outcome)
    }

    /// Writes the batch and completes its operations in order, resuming the
    /// session as often as the connection breaks.
    fn run_batch(&mut self, outcome: &mut FlushOutcome) -> Result<(), ClientError> {
        let mut from = Some(0);
        while let Some(offset) = from.take() {
            let written = write_batch(self.chan.as_mut(), &self.batch, &self.sources, offset);
            if let Err(e) = written {
                let e = self.transport(e);
                from = self.resend_from(e)?;
            }
        }
        while let Some(mut q) = self.queued.pop_front() {
            let Some((id, op)) = q.frame else {
                if let Completion::Callback(f) = q.completion {
                    self.callbacks -= 1;
                    run_host_function(f);
                }
                continue;
            };
            loop {
                match self.complete(id, op, &mut q.completion, outcome) {
                    Ok(()) => {
                        self.last_reply = id;
                        break;
                    }
                    Err(e) => {
                        let mut from = self.resend_from(e)?;
                        while let Some(offset) = from.take() {
                            let written =
                                write_batch(self.chan.as_mut(), &self.batch, &self.sources, offset);
                            if let Err(e) = written {
                                let e = self.transport(e);
                                from = self.resend_from(e)?;
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Resumes after `e` and says where in the batch to write again from:
    /// the first frame the server did not execute, if any.
    fn resend_from(&mut self, e: ClientError) -> Result<Option<usize>, ClientError> {
        if !broken_link(&e) || self.ticket.is_none() {
            return Err(e);
        }
        let executed = self.recover(e)?;
        Ok(self
            .frames
            .iter()
            .find(|(id, _)| id_after(*id, executed))
            .map(|(_, at)| *at))
    }

    fn complete(
        &mut self,
        id: u32,
        op: u16,
        completion: &mut Completion,
        outcome: &mut FlushOutcome,
    ) -> Result<(), ClientError> {
        let reply = self.chan.recv_header().map_err(|e| self.transport(e))?;
        if reply.kind != FrameKind::REPLY || reply.id != id || reply.op != op {
            return Err(self.protocol(format!(
                "expected the reply to request {id} (op {op:#06x}), got {reply:?}"
            )));
        }
        let server = self.server.clone();
        let body = self
            .chan
            .recv_body(reply.body_len)
            .map_err(|source| ClientError::Transport { server, source })?;
        let decoded = match &*completion {
            Completion::Launch => ops::decode_reply::<ops::rep::LaunchKernel>(body)
                .map(|r| r.map(|r| outcome.printf.extend_from_slice(&r.printf.0))),
            Completion::Event(event) => ops::decode_reply::<ops::rep::EventRecord>(body)
                .map(|r| r.map(|r| outcome.events.push((*event, r.timestamp_ns)))),
            Completion::Graph(events) => {
                ops::decode_reply::<ops::rep::GraphLaunch>(body).map(|r| {
                    r.map(|r| {
                        outcome.printf.extend_from_slice(&r.printf.0);
                        let stamps = events.iter().copied().zip(r.timestamps);
                        outcome.events.extend(stamps);
                    })
                })
            }
            Completion::Math(library) => ops::decode_reply::<ops::rep::MathCall>(body).map(|r| {
                r.map(|r| {
                    if r.status != 0 {
                        tracing::warn!(
                            "{library}: an asynchronous call failed on the server with status {}",
                            r.status
                        );
                    }
                })
            }),
            // Replies without fields: a status only.
            _ => ops::decode_reply::<ops::rep::DeviceSynchronize>(body).map(|r| r.map(|_| ())),
        };
        let failure = match decoded {
            Ok(Ok(())) => {
                if let Completion::ToHost(dst) = completion {
                    self.receive_to_host(&reply, dst.bytes())?;
                }
                None
            }
            Ok(Err(f)) => Some(f),
            Err(e) => return Err(self.protocol(format!("reply body: {e}"))),
        };
        if let Some(f) = failure {
            if reply.bulk_len != 0 {
                return Err(self.protocol("a failed reply carries a payload".into()));
            }
            outcome.first_error.get_or_insert(f);
        }
        Ok(())
    }

    fn receive_to_host(&mut self, reply: &FrameHeader, dst: &mut [u8]) -> Result<(), ClientError> {
        if reply.bulk_len != dst.len() as u64 {
            return Err(self.protocol(format!(
                "reply carries {} payload bytes, expected {}",
                reply.bulk_len,
                dst.len()
            )));
        }
        self.chan.recv_bulk_into(dst).map_err(|e| self.transport(e))
    }

    fn transport(&self, source: rcud_transport::TransportError) -> ClientError {
        ClientError::Transport {
            server: self.server.clone(),
            source,
        }
    }

    fn protocol(&self, message: String) -> ClientError {
        ClientError::Protocol {
            server: self.server.clone(),
            message,
        }
    }
}

/// Least time a resumption waits for the server's answer, even at the end
/// of the budget.
const MIN_RESUME_WAIT: Duration = Duration::from_millis(200);

/// Longest wait between two attempts to reconnect.
const MAX_RETRY_DELAY: Duration = Duration::from_millis(250);

/// A connection set up: its channel, the server's hello, the connection's
/// session key, and its TCP socket (to break a wait that must end).
type OpenedLink = (
    Box<dyn Channel>,
    ServerHello,
    [u8; 32],
    Option<std::net::TcpStream>,
);

/// Connects to `server`, performs the handshake (resuming session `resume`
/// unless it is all zeros), and sets up the transport: the channel, the
/// server's hello and the connection's session key.
fn open_link(server: &str, link: &Link, resume: [u8; 16]) -> Result<OpenedLink, ClientError> {
    let security = &link.security;
    let kind = link.kind;
    let opts = TcpOptions::default();
    let connect_err = |source| ClientError::Connect {
        server: server.to_string(),
        source,
    };
    let security_err = |message: String| ClientError::Security {
        server: server.to_string(),
        message,
    };
    let mut stream = connect_stream(server, &opts).map_err(connect_err)?;
    let socket = stream.try_clone().ok();
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let mut hello = ClientHello::new(link.client_name.as_str()).with_transport(kind.code());
    hello.tls = security.tls.is_some();
    hello.qos = security.qos.clone();
    hello.resume = resume;
    if let Some(c) = &security.credentials {
        hello.tenant = c.tenant.clone();
    }
    getrandom::fill(&mut hello.nonce)
        .map_err(|e| connect_err(std::io::Error::other(format!("random source: {e}"))))?;
    // Something that is not an rcud server may never answer a hello.
    let authenticated = {
        let mut io = Deadline::until(&mut stream, deadline);
        handshake::client_exchange(&mut io, &hello, security.credentials.as_ref())
    };
    let authenticated = authenticated.map_err(|e| match e {
        HandshakeError::Io(source) => connect_err(source),
        HandshakeError::Malformed(e) => ClientError::Protocol {
            server: server.to_string(),
            message: e.to_string(),
        },
        HandshakeError::Refused(message) => ClientError::Refused {
            server: server.to_string(),
            message,
        },
        other => security_err(other.to_string()),
    })?;
    let transport_err = |source| ClientError::Transport {
        server: server.to_string(),
        source,
    };
    // The RDMA set-up is bounded by the handshake's timeout too.
    stream
        .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(connect_err)?;
    let chan = match &security.tls {
        Some(tls) => {
            let mut link = tls
                .connect(stream, server, Instant::now() + HANDSHAKE_TIMEOUT)
                .map_err(|e| security_err(e.to_string()))?;
            let binding = link
                .channel_binding()
                .map_err(|e| security_err(e.to_string()))?;
            handshake::client_bind(&mut link, &authenticated.session_key, &binding)
                .map_err(|e| security_err(e.to_string()))?;
            bootstrap::establish(link, kind, bootstrap::Role::Client, &opts)
        }
        None => bootstrap::establish(stream, kind, bootstrap::Role::Client, &opts),
    }
    .map_err(transport_err)?;
    Ok((chan, authenticated.hello, authenticated.session_key, socket))
}

/// Shuts a socket down if it is still in use at a deadline: a resumption
/// waits for the server's answer no longer than the outage budget.
struct Watchdog(Option<std::sync::mpsc::Sender<()>>);

impl Watchdog {
    fn arm(socket: Option<std::net::TcpStream>, deadline: Instant) -> Self {
        let Some(socket) = socket else {
            return Self(None);
        };
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("rcud-resume-watchdog".into())
            .spawn(move || {
                let left = deadline.saturating_duration_since(Instant::now());
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(left) {
                    let _ = socket.shutdown(std::net::Shutdown::Both);
                }
            });
        Self(spawned.ok().map(|_| tx))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}
