//! The gate: the server's side of the handshake, run by the listener before
//! any agent exists.
//!
//! It reads the hello, applies the server's access policy (tenants, local
//! clients only, TLS or not), runs the challenge–response and decides. Only
//! an admitted connection reaches an agent, so a client without the secret
//! costs a short-lived thread and never an agent process. The whole
//! exchange runs against one deadline ([`Deadline`]): a client that sends a
//! byte a second cannot hold the gate open, however its bytes are spread.
//! With TLS, the agent finishes the job: it runs the TLS handshake and checks
//! the client's binding of that TLS session ([`bind_tls`]).

use std::io;
use std::net::{IpAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rcud_proto::auth::{self, Role, PROOF_LEN};
use rcud_proto::handshake::{
    self, ClientHello, ClientProof, HandshakeError, ServerHello, Verdict, PROTOCOL_VERSION,
};
use rcud_transport::bootstrap::TransportKind;
use rcud_transport::deadline::Deadline;
use rcud_transport::tls::TlsLink;
use thiserror::Error;

use crate::backend::Backend;
use crate::peer::InstanceId;
use crate::tenants::{Tenant, Tenants};

/// How long a new connection may take for the whole exchange of the gate.
pub const GATE_DEADLINE: Duration = Duration::from_secs(5);

/// How long the agent's part (TLS, binding, RDMA set-up) may take.
pub const SETUP_DEADLINE: Duration = Duration::from_secs(10);

/// Who the server lets in.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Tenants and their secrets; `None`: no authentication, and then only
    /// loopback clients unless `open_network`.
    pub tenants: Option<Arc<Tenants>>,
    /// Serve clients from the network without authentication
    /// (`--insecure-open`).
    pub open_network: bool,
    /// The server speaks TLS after the gate; clients must too.
    pub tls: bool,
}

impl Policy {
    /// A sentence for the server's start-up log.
    pub fn describe(&self) -> String {
        let auth = match (&self.tenants, self.open_network) {
            (Some(t), _) => format!("{} tenant(s), challenge-response authentication", t.len()),
            (None, false) => "no tenant file: serving local (loopback) clients only; \
                 give --auth-file to serve the network"
                .into(),
            (None, true) => "no authentication, open to the network (--insecure-open)".into(),
        };
        let tls = if self.tls { "TLS" } else { "no TLS" };
        format!("{auth}; {tls}")
    }
}

/// A connection the gate let through.
#[derive(Debug, Clone)]
pub struct Admission {
    /// The client's hello.
    pub hello: ClientHello,
    /// The tenant it proved to be; `None` on a server without tenants.
    pub tenant: Option<Arc<Tenant>>,
    /// The key the TLS binding is checked with.
    pub session_key: [u8; PROOF_LEN],
    /// Its slot in the server's QoS arbiter, when the server has one.
    pub qos_slot: Option<u32>,
    /// Its slot in the table of tenants' memory, when its tenant has a
    /// memory limit.
    pub memory_slot: Option<u32>,
    /// The tenant's position in the tenant file's name order.
    pub tenant_index: Option<u32>,
}

impl Admission {
    /// The tenant's name, or `-` without tenants, for logs.
    pub fn tenant_name(&self) -> &str {
        self.tenant.as_ref().map_or("-", |t| t.name.as_str())
    }

    /// The transport the client asked for.
    pub fn transport(&self) -> TransportKind {
        TransportKind::from_code(self.hello.transport).unwrap_or_default()
    }
}

/// Why the gate closed a connection.
#[derive(Debug, Error)]
pub enum GateError {
    /// The client broke off, timed out or sent garbage.
    #[error("{0}")]
    Handshake(#[from] HandshakeError),
    /// The client was refused; it was told why.
    #[error("refused: {0}")]
    Refused(String),
    /// TLS failed.
    #[error("{0}")]
    Tls(#[from] rcud_transport::tls::TlsError),
}

impl From<io::Error> for GateError {
    fn from(e: io::Error) -> Self {
        GateError::Handshake(HandshakeError::Io(e))
    }
}

/// Runs the gate on `stream` from `peer` within [`GATE_DEADLINE`]. A client
/// (with its tenant, once authenticated) is admitted only if `reserve` finds
/// it room (its tenant's connection limit, its service class); otherwise it
/// is refused with `reserve`'s message. `reserve` returns the client's QoS
/// slot, if it got one.
pub fn admit(
    stream: &mut TcpStream,
    peer: IpAddr,
    policy: &Policy,
    backend: &dyn Backend,
    instance: InstanceId,
    reserve: impl FnOnce(Option<&Arc<Tenant>>, &ClientHello) -> Result<Option<u32>, String>,
) -> Result<Admission, GateError> {
    let mut io = Deadline::new(stream, GATE_DEADLINE);
    let hello: ClientHello = handshake::read_message(&mut io)?;
    let mut reply = ServerHello {
        version: PROTOCOL_VERSION,
        accepted: false,
        gpu_count: backend.gpu_count(),
        driver_version: backend.driver_version(),
        backend: backend.name().into(),
        instance: instance.0,
        message: String::new(),
        auth: policy.tenants.is_some(),
        nonce: [0; PROOF_LEN],
    };
    if let Err(why) = check_hello(&hello, peer, policy) {
        reply.message = why.clone();
        reply.instance = InstanceId::NONE.0;
        handshake::write_message(&mut io, &reply)?;
        return Err(GateError::Refused(why));
    }
    getrandom::fill(&mut reply.nonce)
        .map_err(|e| io::Error::other(format!("random source: {e}")))?;
    reply.accepted = true;
    reply.message = "welcome".into();
    handshake::write_message(&mut io, &reply)?;
    let proof: ClientProof = handshake::read_message(&mut io)?;
    let Some(tenants) = &policy.tenants else {
        let qos_slot = match reserve(None, &hello) {
            Ok(slot) => slot,
            Err(why) => {
                handshake::write_message(&mut io, &refused(&why))?;
                return Err(GateError::Refused(why));
            }
        };
        handshake::write_message(&mut io, &accepted([0; PROOF_LEN]))?;
        return Ok(Admission {
            session_key: auth::session_key(&[], "", &hello.nonce, &reply.nonce),
            hello,
            tenant: None,
            qos_slot,
            memory_slot: None,
            tenant_index: None,
        });
    };
    let name = hello.tenant.as_str();
    // An unknown tenant and a wrong secret get the same answer, so the gate
    // does not tell which tenants exist.
    let tenant = tenants.get(name).filter(|t| {
        auth::verify_proof(
            t.secret(),
            Role::Client,
            name,
            &hello.nonce,
            &reply.nonce,
            &proof.proof,
        )
    });
    let Some(tenant) = tenant.cloned() else {
        let why = if name.is_empty() {
            "authentication required: the client presented no tenant (RCUD_TOKEN_FILE)".into()
        } else {
            format!("authentication failed for tenant `{}`", name.escape_debug())
        };
        handshake::write_message(&mut io, &refused(&why))?;
        return Err(GateError::Refused(why));
    };
    let qos_slot = match reserve(Some(&tenant), &hello) {
        Ok(slot) => slot,
        Err(why) => {
            handshake::write_message(&mut io, &refused(&why))?;
            return Err(GateError::Refused(why));
        }
    };
    let server_proof = auth::proof(
        tenant.secret(),
        Role::Server,
        name,
        &hello.nonce,
        &reply.nonce,
    );
    handshake::write_message(&mut io, &accepted(server_proof))?;
    Ok(Admission {
        session_key: auth::session_key(tenant.secret(), name, &hello.nonce, &reply.nonce),
        hello,
        tenant_index: tenants.index_of(&tenant.name),
        tenant: Some(tenant),
        qos_slot,
        memory_slot: None,
    })
}

/// Refuses a client at the gate with `message` (over a limit, say): reads
/// its hello, answers, closes. Bounded by [`GATE_DEADLINE`].
pub fn refuse(
    stream: &mut TcpStream,
    backend: &dyn Backend,
    message: &str,
) -> Result<(), GateError> {
    let mut io = Deadline::new(stream, GATE_DEADLINE);
    let hello: ClientHello = handshake::read_message(&mut io)?;
    hello.validate().map_err(GateError::Refused)?;
    let reply = ServerHello {
        version: PROTOCOL_VERSION,
        accepted: false,
        gpu_count: backend.gpu_count(),
        driver_version: backend.driver_version(),
        backend: backend.name().into(),
        instance: InstanceId::NONE.0,
        message: message.into(),
        auth: false,
        nonce: [0; PROOF_LEN],
    };
    handshake::write_message(&mut io, &reply)?;
    Ok(())
}

rcud_proto::wire_struct! {
    /// What the listener hands an agent process about its admitted client,
    /// through a pipe on descriptor [`HANDOVER_FD`].
    #[derive(Debug, Clone)]
    pub struct Handover {
        /// The client's hello.
        pub hello: ClientHello,
        /// The tenant's name; empty without tenants.
        pub tenant: String,
        /// The key the TLS binding is checked with.
        pub session_key: [u8; PROOF_LEN],
        /// The QoS slot; `u32::MAX` for none.
        pub qos_slot: u32,
        /// The tenant-memory slot; `u32::MAX` for none.
        pub memory_slot: u32,
    }
}

/// The descriptor an agent process reads its [`Handover`] from.
pub const HANDOVER_FD: i32 = 4;

impl Handover {
    /// What to hand over for `admission`.
    pub fn of(admission: &Admission) -> Self {
        Self {
            hello: admission.hello.clone(),
            tenant: admission
                .tenant
                .as_ref()
                .map(|t| t.name.clone())
                .unwrap_or_default(),
            session_key: admission.session_key,
            qos_slot: admission.qos_slot.unwrap_or(u32::MAX),
            memory_slot: admission.memory_slot.unwrap_or(u32::MAX),
        }
    }

    /// The admission again, in the agent process, with the tenant looked up
    /// in the same tenant file.
    pub fn admission(self, tenants: Option<&Tenants>) -> Result<Admission, String> {
        let tenant =
            match (tenants, self.tenant.is_empty()) {
                (_, true) => None,
                (Some(t), false) => Some(t.get(&self.tenant).cloned().ok_or_else(|| {
                    format!("tenant `{}` is not in the tenant file", self.tenant)
                })?),
                (None, false) => {
                    return Err("a tenant was handed over, but there is no tenant file".into())
                }
            };
        let tenant_index = tenant
            .as_ref()
            .and_then(|t| tenants.and_then(|all| all.index_of(&t.name)));
        Ok(Admission {
            tenant_index,
            hello: self.hello,
            tenant,
            session_key: self.session_key,
            qos_slot: (self.qos_slot != u32::MAX).then_some(self.qos_slot),
            memory_slot: (self.memory_slot != u32::MAX).then_some(self.memory_slot),
        })
    }
}

fn accepted(proof: [u8; PROOF_LEN]) -> Verdict {
    Verdict {
        accepted: true,
        message: "welcome".into(),
        proof,
    }
}

fn refused(why: &str) -> Verdict {
    Verdict {
        accepted: false,
        message: why.into(),
        proof: [0; PROOF_LEN],
    }
}

fn check_hello(hello: &ClientHello, peer: IpAddr, policy: &Policy) -> Result<(), String> {
    hello.validate()?;
    if TransportKind::from_code(hello.transport).is_none() {
        return Err(format!("unknown transport code {}", hello.transport));
    }
    if policy.tenants.is_none() && !policy.open_network && !is_loopback(peer) {
        return Err(format!(
            "this server serves only local clients, and {peer} is not local: it has no tenant \
             file (rcud-server --auth-file), and was not started with --insecure-open"
        ));
    }
    match (policy.tls, hello.tls) {
        (true, false) => Err("this server requires TLS: give the client the server's CA \
             (RCUD_TLS_CA) or certificate fingerprint (RCUD_TLS_PIN)"
            .into()),
        (false, true) => Err(
            "this server does not speak TLS (it has no --tls-cert): unset \
             RCUD_TLS_CA and RCUD_TLS_PIN, or start the server with TLS"
                .into(),
        ),
        _ => Ok(()),
    }
}

/// Loopback, IPv4 or IPv6 (an IPv4 address mapped into IPv6 included).
fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// The agent's part for a TLS client: the TLS handshake on `stream`, then the
/// client's proof that this TLS session is the one it authenticated for.
/// Bounded by [`SETUP_DEADLINE`].
pub fn bind_tls(
    stream: TcpStream,
    tls: &rcud_transport::tls::ServerTls,
    admission: &Admission,
) -> Result<TlsLink, GateError> {
    let mut link = tls.accept(stream, Instant::now() + SETUP_DEADLINE)?;
    let binding = link.channel_binding()?;
    let proof: ClientProof = handshake::read_message(&mut link)?;
    if !auth::verify_binding(&admission.session_key, &binding, &proof.proof) {
        let why = "the TLS session is not bound to the authenticated client".to_string();
        handshake::write_message(&mut link, &refused(&why))?;
        return Err(GateError::Refused(why));
    }
    handshake::write_message(&mut link, &accepted([0; PROOF_LEN]))?;
    Ok(link)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::{Ipv4Addr, Ipv6Addr, TcpListener};

    use rcud_proto::handshake::client_exchange;

    use super::*;
    use crate::backend::{select_backend, BackendKind, EmuSettings};

    /// Runs the gate for a client that `peer` stands in for (the socket
    /// itself is on loopback); returns the client's view.
    fn gate_for(peer: IpAddr, policy: Policy) -> Result<(), String> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let backend = select_backend(BackendKind::Emu, &EmuSettings::default()).unwrap();
            let (mut s, _) = listener.accept().unwrap();
            admit(
                &mut s,
                peer,
                &policy,
                backend.as_ref(),
                InstanceId::NONE,
                |_, _| Ok(None),
            )
            .map(|_| ())
        });
        let mut c = TcpStream::connect(addr).unwrap();
        let client = client_exchange(&mut c, &ClientHello::new("t"), None);
        let _ = server.join().unwrap();
        client.map(|_| ()).map_err(|e| e.to_string())
    }

    #[test]
    fn without_tenants_only_loopback_clients_get_in_unless_open() {
        let remote = IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3));
        let err = gate_for(remote, Policy::default()).unwrap_err();
        assert!(err.contains("serves only local clients"), "{err}");
        assert!(err.contains("--insecure-open"), "{err}");
        gate_for(IpAddr::V4(Ipv4Addr::LOCALHOST), Policy::default()).unwrap();
        gate_for(IpAddr::V6(Ipv6Addr::LOCALHOST), Policy::default()).unwrap();
        let mapped = IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
        gate_for(mapped, Policy::default()).unwrap();
        let open = Policy {
            open_network: true,
            ..Policy::default()
        };
        gate_for(remote, open).unwrap();
    }

    #[test]
    fn a_deadline_bounds_the_whole_exchange() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).unwrap();
        let (mut served, _) = listener.accept().unwrap();
        let trickle = std::thread::spawn(move || {
            // One byte every 300 ms: each read succeeds, the whole never does.
            for b in handshake::encode_hello(&ClientHello::new("slow")) {
                if client.write_all(&[b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        let started = Instant::now();
        let mut io = Deadline::new(&mut served, Duration::from_secs(1));
        let got: Result<ClientHello, _> = handshake::read_message(&mut io);
        assert!(got.is_err());
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "{took:?}");
        drop(served);
        trickle.join().unwrap();
    }
}
