//! A session: one connection to one rcud server, optionally attached to one GPU.

use std::io::{Read, Write};
use std::time::Duration;

use rcud_proto::codec::Writer;
use rcud_proto::frame::{FrameHeader, FrameKind};
use rcud_proto::handshake::{self, ClientHello, ServerHello};
use rcud_proto::ops::{self, Bulk, Failure, Op};
use rcud_transport::{Channel, TcpChannel, TcpOptions};

use crate::ClientError;

/// How long a server may take to answer the hello.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The result of a remote call: transport failures outside, CUDA errors inside.
pub type CallResult<T> = Result<Result<T, Failure>, ClientError>;

/// A connection to one server.
pub struct Session {
    chan: TcpChannel,
    server: String,
    hello: ServerHello,
    next_id: u32,
    body: Vec<u8>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.server)
            .finish()
    }
}

impl Session {
    /// Connects to `server` and performs the handshake.
    pub fn connect(server: &str, client_name: &str) -> Result<Self, ClientError> {
        let opts = TcpOptions::default();
        let connect_err = |source| ClientError::Connect {
            server: server.to_string(),
            source,
        };
        let mut chan = TcpChannel::connect(server, &opts).map_err(connect_err)?;
        let stream = chan.stream();
        // Something that is not an rcud server may never answer a hello.
        stream
            .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
            .map_err(connect_err)?;
        let hello = handshake::encode_hello(&ClientHello::new(client_name));
        stream.write_all(&hello).map_err(connect_err)?;
        let mut prefix = [0u8; 4];
        stream.read_exact(&mut prefix).map_err(connect_err)?;
        let protocol = |message: String| ClientError::Protocol {
            server: server.to_string(),
            message,
        };
        let len = handshake::hello_len(prefix).map_err(|e| protocol(e.to_string()))?;
        let mut body = vec![0u8; len];
        stream.read_exact(&mut body).map_err(connect_err)?;
        let hello: ServerHello =
            handshake::decode_hello(&body).map_err(|e| protocol(e.to_string()))?;
        stream.set_read_timeout(None).map_err(connect_err)?;
        if !hello.accepted {
            return Err(ClientError::Refused {
                server: server.to_string(),
                message: hello.message,
            });
        }
        Ok(Self {
            chan,
            server: server.to_string(),
            hello,
            next_id: 1,
            body: Vec::with_capacity(256),
        })
    }

    /// What the server said about itself in the handshake.
    pub fn server_hello(&self) -> &ServerHello {
        &self.hello
    }

    /// The server's address.
    pub fn server(&self) -> &str {
        &self.server
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
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.body.clear();
        req.encode(&mut Writer::new(&mut self.body));
        let header = FrameHeader {
            kind: FrameKind::REQUEST,
            op: O::ID.0,
            body_len: self.body.len() as u32,
            id,
            bulk_len: bulk_out.len() as u64,
        };
        self.chan
            .send_frame(&header, &self.body, bulk_out)
            .map_err(|e| self.transport(e))?;

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
