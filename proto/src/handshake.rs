//! The versioned handshake that opens every connection, and the
//! challenge–response that authenticates it.
//!
//! 1. The client sends [`ClientHello`] (its tenant, a random nonce, whether
//!    it will speak TLS).
//! 2. The server answers with [`ServerHello`]: refused (with a message, then
//!    it closes) or go on, with a nonce of its own.
//! 3. The client sends [`ClientProof`]: an HMAC of both nonces under its
//!    tenant's secret ([`crate::auth`]).
//! 4. The server answers with [`Verdict`]: refused, or accepted with its own
//!    proof, which the client checks (the server authenticates too).
//! 5. With TLS, both ends now run a TLS handshake on the same socket, and the
//!    client sends [`ClientProof`] again, this time binding the TLS session
//!    to the session key ([`crate::auth::binding_proof`]); the server answers
//!    with a [`Verdict`].
//!
//! A server without tenants runs the same steps with empty proofs. Every
//! message is length-prefixed so that a peer speaking something else is
//! rejected after a few bytes. [`client_exchange`] runs the client's side
//! over any byte stream.

use std::io::{Read, Write};

use crate::auth::{self, Credentials, Role, PROOF_LEN};
use crate::codec::{DecodeError, Wire};

/// Magic bytes at the start of a client hello.
pub const MAGIC: [u8; 4] = *b"RCUD";
/// Protocol version spoken by this build. The major part must match.
/// 4: tenants, challenge–response authentication and TLS; 5: QoS service
/// requests in the hello; 6: graphs kept on the server (`GraphUpload`,
/// `GraphLaunch`, `GraphDestroy`) and `MemsetElements`; 7: cooperative
/// launches (`LaunchCooperative`); 8: CUDA IPC (`IpcGetMemHandle`,
/// `IpcOpenMemHandle`, `IpcCloseMemHandle`).
pub const PROTOCOL_VERSION: u16 = 12;
/// Largest hello accepted, so garbage cannot make the server wait for megabytes.
pub const MAX_HELLO: u32 = 4096;
/// First byte of a TLS record carrying a handshake: what a TLS client sends
/// first, never the first byte of a hello's length.
pub const TLS_HANDSHAKE_RECORD: u8 = 0x16;

crate::wire_struct! {
    /// First message from the client.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ClientHello {
        /// Must be [`MAGIC`].
        pub magic: [u8; 4],
        /// [`PROTOCOL_VERSION`] of the client.
        pub version: u16,
        /// Free-form identification for server logs (program name, pid).
        pub client: String,
        /// Transport module for the rest of the connection (0 TCP, 1 CSR).
        pub transport: u8,
        /// The tenant the client authenticates as; empty without credentials.
        pub tenant: String,
        /// The client's random challenge.
        pub nonce: [u8; PROOF_LEN],
        /// Whether the client runs TLS once authenticated.
        pub tls: bool,
        /// The service class the client asks for (`RCUD_QOS`, e.g.
        /// `class=dbts,bandwidth=2GB/s,latency=200us`); empty: its tenant's.
        pub qos: String,
        /// The session this connection resumes ([`crate::ops::req::SessionOpen`]
        /// named it); all zeros: a new session.
        pub resume: [u8; 16],
    }
}

crate::wire_struct! {
    /// The server's answer to a hello.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ServerHello {
        /// [`PROTOCOL_VERSION`] of the server.
        pub version: u16,
        /// Whether the server goes on with the client; if not, `message` says
        /// why and the server closes the connection.
        pub accepted: bool,
        /// Number of GPUs the server exposes.
        pub gpu_count: u32,
        /// Driver version the GPUs run under (`cudaDriverGetVersion`).
        pub driver_version: i32,
        /// Backend name (`emu`, `cuda`), for logs and `rcud info`.
        pub backend: String,
        /// Random id of this server instance, shared by the listener and all
        /// its agents: two connections reporting the same non-zero id are
        /// served by one server, which can copy between their GPUs itself
        /// (`PeerListen`/`PeerReceive`/`PeerSend`). Zero: no such copies.
        pub instance: [u8; 16],
        /// Why the hello was refused, or a greeting.
        pub message: String,
        /// Whether the server checks proofs (it has tenants).
        pub auth: bool,
        /// The server's random challenge.
        pub nonce: [u8; PROOF_LEN],
    }
}

crate::wire_struct! {
    /// The client's proof of its secret (step 3), or of its TLS session
    /// (step 5). All zeros without credentials.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ClientProof {
        /// An HMAC (see [`crate::auth`]).
        pub proof: [u8; PROOF_LEN],
    }
}

crate::wire_struct! {
    /// The server's decision on a proof.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Verdict {
        /// Whether the client may go on; if not, the server closes.
        pub accepted: bool,
        /// Why not, or a greeting.
        pub message: String,
        /// The server's proof of the tenant's secret (step 4, when accepted
        /// and the server has tenants); zeros otherwise.
        pub proof: [u8; PROOF_LEN],
    }
}

impl ClientHello {
    /// A hello from this build.
    pub fn new(client: impl Into<String>) -> Self {
        Self {
            magic: MAGIC,
            version: PROTOCOL_VERSION,
            client: client.into(),
            transport: 0,
            tenant: String::new(),
            nonce: [0; PROOF_LEN],
            tls: false,
            qos: String::new(),
            resume: [0; 16],
        }
    }

    /// The same hello asking for transport module `code`.
    pub fn with_transport(mut self, code: u8) -> Self {
        self.transport = code;
        self
    }

    /// Checks magic and version.
    pub fn validate(&self) -> Result<(), String> {
        if self.magic != MAGIC {
            return Err("not an rcud client (bad magic)".into());
        }
        if self.version != PROTOCOL_VERSION {
            return Err(format!(
                "protocol version {} is not supported (server speaks {})",
                self.version, PROTOCOL_VERSION
            ));
        }
        Ok(())
    }
}

/// Frames a hello message: `u32` length, then the encoded message.
pub fn encode_hello<T: Wire>(msg: &T) -> Vec<u8> {
    let body = crate::codec::to_vec(msg);
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// Validates the length prefix of a hello before its body is read.
pub fn hello_len(prefix: [u8; 4]) -> Result<usize, DecodeError> {
    let len = u32::from_le_bytes(prefix);
    if len > MAX_HELLO {
        return Err(DecodeError::TooLong {
            what: "hello",
            len: len.into(),
            limit: MAX_HELLO.into(),
        });
    }
    Ok(len as usize)
}

/// Decodes a hello body.
pub fn decode_hello<T: Wire>(body: &[u8]) -> Result<T, DecodeError> {
    crate::codec::from_slice(body)
}

/// Writes one length-prefixed handshake message.
pub fn write_message<S: Write, T: Wire>(stream: &mut S, msg: &T) -> std::io::Result<()> {
    stream.write_all(&encode_hello(msg))?;
    stream.flush()
}

/// Reads one length-prefixed handshake message.
pub fn read_message<S: Read, T: Wire>(stream: &mut S) -> Result<T, HandshakeError> {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix)?;
    let len = hello_len(prefix)?;
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body)?;
    Ok(decode_hello(&body)?)
}

/// Why a handshake did not complete.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The connection failed or closed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The peer sent something that is not a handshake message.
    #[error("malformed handshake message: {0}")]
    Malformed(#[from] DecodeError),
    /// The server refused the client, and said why.
    #[error("{0}")]
    Refused(String),
    /// The server could not prove it knows the tenant's secret.
    #[error("the server could not prove it knows the secret of tenant `{0}`: not the server you meant, or its tenant file has another secret")]
    ServerNotAuthenticated(String),
    /// The server wants proofs and the client has no credentials.
    #[error("the server requires authentication: give a token file (`tenant:secret`) with RCUD_TOKEN_FILE or `rcud run --token-file`")]
    CredentialsRequired,
}

/// What the client knows once the challenge–response succeeded.
#[derive(Debug, Clone)]
pub struct Authenticated {
    /// The server's hello.
    pub hello: ServerHello,
    /// The key that binds a TLS session to this authentication.
    pub session_key: [u8; PROOF_LEN],
}

/// The client's side of steps 1 to 4 over `stream`. `hello` carries the
/// client's random nonce and, with credentials, their tenant.
pub fn client_exchange<S: Read + Write>(
    stream: &mut S,
    hello: &ClientHello,
    credentials: Option<&Credentials>,
) -> Result<Authenticated, HandshakeError> {
    write_message(stream, hello)?;
    let server: ServerHello = read_message(stream)?;
    if !server.accepted {
        return Err(HandshakeError::Refused(server.message));
    }
    if server.auth && credentials.is_none() {
        return Err(HandshakeError::CredentialsRequired);
    }
    let secret = credentials.map(|c| c.secret.as_slice()).unwrap_or_default();
    let tenant = hello.tenant.as_str();
    let proof = if server.auth {
        auth::proof(secret, Role::Client, tenant, &hello.nonce, &server.nonce)
    } else {
        [0; PROOF_LEN]
    };
    write_message(stream, &ClientProof { proof })?;
    let verdict: Verdict = read_message(stream)?;
    if !verdict.accepted {
        return Err(HandshakeError::Refused(verdict.message));
    }
    if server.auth
        && !auth::verify_proof(
            secret,
            Role::Server,
            tenant,
            &hello.nonce,
            &server.nonce,
            &verdict.proof,
        )
    {
        return Err(HandshakeError::ServerNotAuthenticated(tenant.into()));
    }
    let session_key = auth::session_key(secret, tenant, &hello.nonce, &server.nonce);
    Ok(Authenticated {
        hello: server,
        session_key,
    })
}

/// The client's side of step 5, on the TLS stream: proves that this TLS
/// session (its channel binding) belongs to the authenticated client.
pub fn client_bind<S: Read + Write>(
    stream: &mut S,
    session_key: &[u8; PROOF_LEN],
    binding: &[u8],
) -> Result<(), HandshakeError> {
    let proof = auth::binding_proof(session_key, binding);
    write_message(stream, &ClientProof { proof })?;
    let verdict: Verdict = read_message(stream)?;
    if !verdict.accepted {
        return Err(HandshakeError::Refused(verdict.message));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trip_and_validation() {
        let hello = ClientHello::new("test");
        let framed = encode_hello(&hello);
        let len = hello_len(framed[..4].try_into().unwrap()).unwrap();
        let back: ClientHello = decode_hello(&framed[4..4 + len]).unwrap();
        assert_eq!(back, hello);
        assert!(back.validate().is_ok());
        let bad = ClientHello {
            version: 99,
            ..hello
        };
        assert!(bad.validate().unwrap_err().contains("99"));
        assert!(hello_len(u32::MAX.to_le_bytes()).is_err());
    }

    #[test]
    fn server_hello_carries_the_instance_id() {
        let reply = ServerHello {
            version: PROTOCOL_VERSION,
            accepted: true,
            gpu_count: 2,
            driver_version: 13000,
            backend: "emu".into(),
            instance: *b"0123456789abcdef",
            message: "welcome".into(),
            auth: true,
            nonce: [9; PROOF_LEN],
        };
        let framed = encode_hello(&reply);
        let len = hello_len(framed[..4].try_into().unwrap()).unwrap();
        assert_eq!(len, framed.len() - 4);
        let back: ServerHello = decode_hello(&framed[4..]).unwrap();
        assert_eq!(back, reply);
        // A truncated hello is rejected, never completed with zeros.
        assert!(decode_hello::<ServerHello>(&framed[4..framed.len() - 9]).is_err());
    }
}
