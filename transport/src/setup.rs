//! What the RDMA modules' connection set-up shares (thesis, chapter 3): where
//! the two ends meet, the first port's offer over the TCP bootstrap, the
//! set-up's deadline, and the set-up messages sent over a channel before its
//! stream starts.
//!
//! The sequence itself is each module's (`CsrChannel::accept`/`connect`,
//! `MsrChannel::accept`/`connect`): the agent listens on a port and offers it
//! over TCP; every later port travels over an RDMA channel already open. All
//! RDMA state of a connection is created inside the agent that serves it.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::channel::TransportError;
use crate::rdma::other;
use crate::tls::Link;
use crate::verbs::cm::{self, CmError, Listener, Pending};
use crate::verbs::{
    devices, Completion, CompletionQueue, Context, Provider, QpState, QueuePair, RecvWr, SendOp,
    SendWr, Sge,
};

/// Bound on the whole set-up when the bootstrap socket has no read timeout.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(20);
/// Work-request id of set-up sends and receives (never a chunk index).
pub(crate) const SETUP_WR: u64 = u64::MAX;

const OFFER_MAGIC: &[u8; 4] = b"RDV1";
const OFFER_OK: u8 = 0;
const OFFER_REFUSED: u8 = 1;
/// Length of a host's boot id (`/proc/sys/kernel/random/boot_id`).
const HOST_ID_LEN: usize = 36;
const MAX_REFUSAL: usize = 4096;

/// Where the two ends of a connection meet, and until when.
#[derive(Debug, Clone)]
pub struct Rendezvous {
    provider: Provider,
    ip: IpAddr,
    /// The device `RCUD_RDMA_DEVICE` asks for (rdma-core: checked against
    /// the one RDMA CM routes through).
    device: Option<String>,
    deadline: Instant,
    timeout: Duration,
}

impl Rendezvous {
    /// Meeting on `provider` at `ip` (the agent's address: the agent listens
    /// on it, the client connects to it), everything within `timeout`.
    pub fn new(provider: Provider, ip: IpAddr, timeout: Duration) -> Rendezvous {
        Rendezvous {
            provider,
            ip: ip.to_canonical(),
            device: None,
            deadline: Instant::now() + timeout,
            timeout,
        }
    }

    /// The provider both ends use.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Time left before the set-up's deadline; an error once it passed.
    pub fn left(&self, waiting_for: &str) -> Result<Duration, TransportError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out(format!(
                "RDMA set-up: no {waiting_for} within {:?}",
                self.timeout
            )));
        }
        Ok(left)
    }

    /// Listens on a new port (agent).
    pub fn listen(&self, module: &str) -> Result<(Listener, u16), TransportError> {
        Listener::bind(self.provider, self.ip).map_err(|e| cm_error(module, "listening", e))
    }

    /// Takes the next connection request on `l` (agent).
    pub fn request(
        &self,
        l: &Listener,
        module: &str,
        channel: &str,
    ) -> Result<Pending, TransportError> {
        let left = self.left(&format!("{channel} channel request"))?;
        let p = l
            .get_request(left)
            .map_err(|e| cm_error(module, &format!("waiting for the {channel} channel"), e))?;
        self.check_device(p.context())?;
        Ok(p)
    }

    /// Connects to the agent's `port` (client).
    pub fn resolve(
        &self,
        port: u16,
        module: &str,
        channel: &str,
    ) -> Result<Pending, TransportError> {
        let left = self.left(&format!("{channel} channel route"))?;
        let p = cm::resolve(self.provider, SocketAddr::new(self.ip, port), left).map_err(|e| {
            cm_error(
                module,
                &format!("reaching the {channel} channel at {}:{port}", self.ip),
                e,
            )
        })?;
        self.check_device(p.context())?;
        Ok(p)
    }

    /// Accepts or connects `p`.
    pub fn establish(&self, p: Pending, module: &str, channel: &str) -> Result<(), TransportError> {
        let left = self.left(&format!("{channel} channel"))?;
        p.establish(left)
            .map_err(|e| cm_error(module, &format!("connecting the {channel} channel"), e))
    }

    fn check_device(&self, ctx: &Context) -> Result<(), TransportError> {
        match &self.device {
            Some(want) if *want != ctx.device().name => Err(other(format!(
                "RDMA CM routes {} through {}, but RCUD_RDMA_DEVICE asks for {want}: use an \
                 address of {want}'s network interface, or unset RCUD_RDMA_DEVICE",
                self.ip,
                ctx.device().name
            ))),
            _ => Ok(()),
        }
    }
}

fn timed_out(msg: String) -> TransportError {
    TransportError::Io(io::Error::new(io::ErrorKind::TimedOut, msg))
}

fn cm_error(module: &str, what: &str, e: CmError) -> TransportError {
    match e {
        CmError::Timeout { .. } => timed_out(format!("{module}: {what}: {e}")),
        e => other(format!("{module}: {what}: {e}")),
    }
}

/// The provider `RCUD_RDMA_DEVICE` names, with the device when it is an
/// rdma-core adapter.
fn asked_device() -> Result<Option<(Provider, Option<String>)>, TransportError> {
    let Ok(name) = std::env::var("RCUD_RDMA_DEVICE") else {
        return Ok(None);
    };
    let all = devices();
    match all.iter().find(|d| d.name == name) {
        Some(d) if d.provider == Provider::Soft => Ok(Some((Provider::Soft, None))),
        Some(d) => Ok(Some((d.provider, Some(name)))),
        None => Err(other(format!(
            "RCUD_RDMA_DEVICE={name}: no such RDMA device (available: {})",
            all.iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The agent's choice: `RCUD_RDMA_DEVICE`, else rdma-core when it lists an
/// adapter, else `soft` (peers on this host).
fn agent_choice() -> Result<(Provider, Option<String>), TransportError> {
    if let Some(asked) = asked_device()? {
        return Ok(asked);
    }
    if devices().iter().any(|d| d.provider != Provider::Soft) {
        return Ok((Provider::RdmaCore, None));
    }
    Ok((Provider::Soft, None))
}

fn host_id() -> [u8; HOST_ID_LEN] {
    let mut id = [0u8; HOST_ID_LEN];
    if let Ok(s) = std::fs::read_to_string("/proc/sys/kernel/random/boot_id") {
        let s = s.trim().as_bytes();
        let k = s.len().min(HOST_ID_LEN);
        id[..k].copy_from_slice(&s[..k]);
    }
    id
}

fn provider_code(p: Provider) -> u8 {
    match p {
        Provider::Soft => 0,
        _ => 1,
    }
}

fn provider_name(p: Provider) -> &'static str {
    match p {
        Provider::Soft => "the soft provider (shared memory)",
        _ => "rdma-core (an RDMA adapter)",
    }
}

/// The agent's side of the bootstrap: picks the provider, listens on the
/// first channel's port, and offers it to the client over `stream`. A
/// failure is sent to the client too, so that it reports the cause.
pub fn offer<S: Link>(
    stream: &mut S,
    module: &str,
) -> Result<(Rendezvous, Listener), TransportError> {
    let prepared = (|| {
        let (provider, device) = agent_choice()?;
        let timeout = stream.socket().read_timeout()?.unwrap_or(SETUP_TIMEOUT);
        let mut rv = Rendezvous::new(provider, stream.socket().local_addr()?.ip(), timeout);
        rv.device = device;
        let (listener, port) = rv.listen(module)?;
        Ok::<_, TransportError>((rv, listener, port))
    })();
    match prepared {
        Ok((rv, listener, port)) => {
            let mut b = Vec::with_capacity(8 + HOST_ID_LEN);
            b.extend_from_slice(OFFER_MAGIC);
            b.push(OFFER_OK);
            b.push(provider_code(rv.provider));
            b.extend_from_slice(&port.to_le_bytes());
            b.extend_from_slice(&host_id());
            stream.write_all(&b)?;
            stream.flush()?;
            tracing::debug!(module, provider = ?rv.provider, port, "RDMA set-up: first port offered");
            Ok((rv, listener))
        }
        Err(e) => {
            let msg = e.to_string();
            let msg = &msg.as_bytes()[..msg.len().min(MAX_REFUSAL)];
            let mut b = Vec::with_capacity(7 + msg.len());
            b.extend_from_slice(OFFER_MAGIC);
            b.push(OFFER_REFUSED);
            b.extend_from_slice(&(msg.len() as u16).to_le_bytes());
            b.extend_from_slice(msg);
            // The client learns why; our caller reports the error anyway.
            let _ = stream.write_all(&b).and_then(|()| stream.flush());
            Err(e)
        }
    }
}

/// The client's side of the bootstrap: reads the agent's offer from `stream`
/// (within its read timeout) and returns where to meet and the first port.
pub fn take_offer<S: Link>(
    stream: &mut S,
    module: &str,
) -> Result<(Rendezvous, u16), TransportError> {
    let timeout = stream.socket().read_timeout()?.unwrap_or(SETUP_TIMEOUT);
    let started = Instant::now();
    let bad = |what: &str| {
        other(format!(
            "{module}: the server's RDMA offer is malformed ({what})"
        ))
    };
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            other(format!(
                "{module}: the server closed the connection before offering its RDMA channel"
            ))
        } else {
            TransportError::Io(e)
        }
    })?;
    if &head[..4] != OFFER_MAGIC {
        return Err(bad("magic"));
    }
    if head[4] == OFFER_REFUSED {
        let mut len = [0u8; 2];
        stream.read_exact(&mut len)?;
        let mut msg = vec![0u8; usize::from(u16::from_le_bytes(len)).min(MAX_REFUSAL)];
        stream.read_exact(&mut msg)?;
        return Err(other(format!(
            "{module}: the server cannot set up RDMA: {}",
            String::from_utf8_lossy(&msg)
        )));
    }
    if head[4] != OFFER_OK {
        return Err(bad("status"));
    }
    let mut body = [0u8; 3 + HOST_ID_LEN];
    stream.read_exact(&mut body)?;
    let provider = match body[0] {
        0 => Provider::Soft,
        1 => Provider::RdmaCore,
        _ => return Err(bad("provider")),
    };
    let port = u16::from_le_bytes([body[1], body[2]]);
    let device = match asked_device()? {
        Some((p, _)) if p != provider => {
            return Err(other(format!(
                "{module}: the server offers RDMA over {}, but RCUD_RDMA_DEVICE={} asks for {}",
                provider_name(provider),
                std::env::var("RCUD_RDMA_DEVICE").unwrap_or_default(),
                provider_name(p)
            )))
        }
        Some((_, d)) => d,
        None => None,
    };
    if provider == Provider::Soft {
        let theirs = &body[3..];
        let ours = host_id();
        let known = |id: &[u8]| id.iter().any(|&b| b != 0);
        if known(theirs) && known(&ours) && theirs != ours {
            return Err(other(format!(
                "{module}: the server offers RDMA over {} only: it has no RDMA adapter, and \
                 that provider reaches peers on the same host, which this client is not on; \
                 use --transport tcp, or give the server an RDMA adapter",
                provider_name(provider)
            )));
        }
    }
    let peer = stream.socket().peer_addr()?.ip();
    let mut rv = Rendezvous::new(provider, peer, timeout.saturating_sub(started.elapsed()));
    rv.device = device;
    Ok((rv, port))
}

/// Checks that one staging chunk fits the device's largest message.
pub(crate) fn check_chunk(ctx: &Context, chunk: usize, module: &str) -> Result<(), TransportError> {
    let max = ctx.attr().max_msg_size;
    if chunk as u64 > u64::from(max) {
        return Err(other(format!(
            "{module} chunk size {chunk} exceeds the device's largest message ({max} bytes)"
        )));
    }
    Ok(())
}

/// Waits for one completion on `cq` until the set-up's deadline; `Closed`
/// when `qp` fails first.
fn wait_one(
    rv: &Rendezvous,
    cq: &CompletionQueue,
    qp: &QueuePair,
    waiting_for: &str,
) -> Result<Completion, TransportError> {
    let mut wc = [crate::rdma::blank(); 1];
    loop {
        let left = rv.left(waiting_for)?;
        let n = cq
            .poll_wait(&mut wc, left.min(Duration::from_millis(20)))
            .map_err(|e| other(format!("RDMA set-up: polling a completion queue: {e}")))?;
        if n > 0 {
            return Ok(wc[0]);
        }
        if qp.state() == QpState::Error {
            return Err(TransportError::Closed);
        }
    }
}

/// Sends one set-up message (`src`; `None`: zero-length) on `qp` and waits
/// until it is delivered.
pub(crate) fn send_message(
    rv: &Rendezvous,
    qp: &QueuePair,
    cq: &CompletionQueue,
    src: Option<Sge<'_>>,
    what: &str,
) -> Result<(), TransportError> {
    qp.post_send(&[SendWr::new(SETUP_WR, SendOp::Send, src)])
        .map_err(|e| other(format!("RDMA set-up: sending the {what}: {e}")))?;
    let wc = wait_one(rv, cq, qp, &format!("delivery of the {what}"))?;
    if wc.status.is_success() && wc.wr_id == SETUP_WR {
        Ok(())
    } else {
        Err(other(format!(
            "RDMA set-up: sending the {what} failed: {:?}",
            wc.status
        )))
    }
}

/// Waits for one set-up message on `qp` (its receive is already posted).
pub(crate) fn recv_message(
    rv: &Rendezvous,
    qp: &QueuePair,
    cq: &CompletionQueue,
    what: &str,
) -> Result<Completion, TransportError> {
    let wc = wait_one(rv, cq, qp, what)?;
    if !wc.status.is_success() {
        return Err(match wc.status {
            crate::verbs::WcStatus::WrFlush => TransportError::Closed,
            st => other(format!("RDMA set-up: receiving the {what} failed: {st:?}")),
        });
    }
    Ok(wc)
}

/// Posts a receive for a set-up message into `buf`.
pub(crate) fn post_message_recv(
    qp: &QueuePair,
    buf: Sge<'_>,
    what: &str,
) -> Result<(), TransportError> {
    qp.post_recv(&[RecvWr {
        wr_id: SETUP_WR,
        buf: Some(buf),
    }])
    .map_err(|e| {
        other(format!(
            "RDMA set-up: posting the receive of the {what}: {e}"
        ))
    })
}

/// Reads fixed-size fields of a set-up message, failing on a short one.
pub(crate) struct Fields<'a> {
    rest: &'a [u8],
    what: &'static str,
}

impl<'a> Fields<'a> {
    /// Fields of `bytes`, which must start with `magic`.
    pub(crate) fn new(
        bytes: &'a [u8],
        magic: &[u8; 4],
        what: &'static str,
    ) -> Result<Fields<'a>, TransportError> {
        match bytes.strip_prefix(magic.as_slice()) {
            Some(rest) => Ok(Fields { rest, what }),
            None => Err(other(format!(
                "RDMA set-up: the peer's {what} is malformed"
            ))),
        }
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], TransportError> {
        if self.rest.len() < n {
            return Err(other(format!(
                "RDMA set-up: the peer's {} is truncated",
                self.what
            )));
        }
        let (h, t) = self.rest.split_at(n);
        self.rest = t;
        Ok(h)
    }

    pub(crate) fn u16(&mut self) -> Result<u16, TransportError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, TransportError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, TransportError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    /// Fails when bytes are left over.
    pub(crate) fn end(self) -> Result<(), TransportError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(other(format!(
                "RDMA set-up: the peer's {} has trailing bytes",
                self.what
            )))
        }
    }
}

/// The soft provider's rendezvous on this host, for both ends of a
/// connection in one host (tests, benchmarks).
pub fn local() -> Rendezvous {
    Rendezvous::new(
        Provider::Soft,
        IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        SETUP_TIMEOUT,
    )
}

/// Runs both sides of a set-up on this host: `agent` on a thread of its own
/// with the listener of a new port, `client` here with that port. Returns
/// the client's result and the agent's.
pub fn pair_with<A, C>(
    rv: &Rendezvous,
    module: &str,
    agent: impl FnOnce(&Rendezvous, Listener) -> Result<A, TransportError> + Send + 'static,
    client: impl FnOnce(&Rendezvous, u16) -> Result<C, TransportError>,
) -> (Result<C, TransportError>, Result<A, TransportError>)
where
    A: Send + 'static,
{
    let (first, port) = match rv.listen(module) {
        Ok(l) => l,
        Err(e) => {
            let again = other(e.to_string());
            return (Err(e), Err(again));
        }
    };
    let agent = {
        let rv = rv.clone();
        std::thread::spawn(move || agent(&rv, first))
    };
    let client = client(rv, port);
    let agent = agent.join().unwrap_or_else(|_| {
        Err(other(format!(
            "{module}: the agent's set-up thread panicked"
        )))
    });
    (client, agent)
}
