//! The versioned handshake that opens every connection.
//!
//! The client sends [`ClientHello`]; the server answers with [`ServerHello`] and
//! either keeps the connection (same major version) or closes it. Both messages
//! are length-prefixed so that a peer speaking something else entirely is
//! rejected after a few bytes.

use crate::codec::{DecodeError, Wire};

/// Magic bytes at the start of a client hello.
pub const MAGIC: [u8; 4] = *b"RCUD";
/// Protocol version spoken by this build. The major part must match.
/// 3: the RDMA modules set up through the agent's offer and RDMA CM.
pub const PROTOCOL_VERSION: u16 = 3;
/// Largest hello accepted, so garbage cannot make the server wait for megabytes.
pub const MAX_HELLO: u32 = 4096;

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
    }
}

crate::wire_struct! {
    /// The server's answer to a hello.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ServerHello {
        /// [`PROTOCOL_VERSION`] of the server.
        pub version: u16,
        /// Whether the server accepted the client; if not, `message` says why
        /// and the server closes the connection.
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
