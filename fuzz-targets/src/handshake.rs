//! The handshake: hello, challenge–response and verdict messages, the
//! client's side of the exchange against a hostile server, and the server's
//! gate (`rcud_server::gate::admit`) against a hostile client.

use std::fmt::Debug;
use std::io::{Cursor, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown};
use std::sync::{Arc, OnceLock};

use rcud_proto::auth::{Credentials, PROOF_LEN};
use rcud_proto::codec::Wire;
use rcud_proto::handshake::{
    self, ClientHello, ClientProof, HandshakeError, ServerHello, Verdict, MAX_HELLO,
};
use rcud_server::backend::emu::EmuBackend;
use rcud_server::backend::EmuSettings;
use rcud_server::gate::{self, Handover, Policy};
use rcud_server::peer::InstanceId;
use rcud_server::tenants::Tenants;

use crate::stream::Script;

/// Reads `data` as each handshake message (and as the listener's handover
/// to an agent process), runs the client's side of the exchange with
/// `data` as everything the server says (with and without credentials),
/// and the server's gate with `data` as everything the client says (with
/// and without tenants).
pub fn handshake(data: &[u8]) {
    messages::<ClientHello>(data);
    messages::<ServerHello>(data);
    messages::<ClientProof>(data);
    messages::<Verdict>(data);
    if let Some(prefix) = data.first_chunk::<4>() {
        let len = handshake::hello_len(*prefix);
        assert_eq!(len.is_ok(), u32::from_le_bytes(*prefix) <= MAX_HELLO);
    }
    client_side(data, None);
    client_side(data, Some(credentials()));
    client_binding(data);
    // One policy a run, picked by the last byte: a gate run is the
    // target's dearest part.
    let policy = &policies()[usize::from(data.last().is_some_and(|b| b & 1 == 1))];
    gate_side(data, policy);
    messages::<Handover>(data);
    if let Ok(token) = std::str::from_utf8(data) {
        if let Ok(c) = Credentials::parse(token) {
            assert!(!c.tenant.is_empty() && c.tenant.len() <= 64);
            assert!(c.secret.len() >= rcud_proto::auth::MIN_SECRET_LEN);
        }
    }
}

/// `data` as the body of a `T`, and as a length-prefixed `T` on a stream:
/// what decodes encodes back to the same bytes.
fn messages<T: Wire + Debug>(data: &[u8]) {
    if let Ok(msg) = handshake::decode_hello::<T>(data) {
        let framed = handshake::encode_hello(&msg);
        assert_eq!(&framed[4..], data, "{msg:?} re-encodes differently");
    }
    let mut cursor = Cursor::new(data);
    if let Ok(msg) = handshake::read_message::<_, T>(&mut cursor) {
        let framed = handshake::encode_hello(&msg);
        let used = cursor.position() as usize;
        assert_eq!(framed, data[..used], "{msg:?} re-encodes differently");
    }
}

fn credentials() -> Credentials {
    Credentials {
        tenant: "fuzz-tenant".into(),
        secret: b"0123456789abcdef-fuzz".to_vec(),
    }
}

fn client_hello(credentials: Option<&Credentials>) -> ClientHello {
    let mut hello = ClientHello::new("rcud-fuzz");
    hello.nonce = [0x5A; PROOF_LEN];
    if let Some(c) = credentials {
        hello.tenant = c.tenant.clone();
    }
    hello
}

/// The client's side of the challenge–response, the server played by `data`.
fn client_side(data: &[u8], credentials: Option<Credentials>) {
    let hello = client_hello(credentials.as_ref());
    let mut server = Script::new(data);
    let result = handshake::client_exchange(&mut server, &hello, credentials.as_ref());
    // The client always starts with its hello.
    let sent = handshake::encode_hello(&hello);
    assert!(server.output.starts_with(&sent), "the client's hello");
    match result {
        Ok(done) => {
            assert!(done.hello.accepted, "a refusal was taken for a welcome");
            assert!(
                !(done.hello.auth && credentials.is_none()),
                "authenticated without credentials"
            );
            // Hello, then exactly one proof.
            assert_eq!(server.output.len(), sent.len() + 4 + PROOF_LEN);
        }
        Err(HandshakeError::CredentialsRequired) => assert!(credentials.is_none()),
        Err(_) => {}
    }
}

/// The client's binding proof inside TLS, the verdict played by `data`.
fn client_binding(data: &[u8]) {
    let mut server = Script::new(data);
    let key = [0x33; PROOF_LEN];
    let result = handshake::client_bind(&mut server, &key, b"fuzz exporter");
    let proof = rcud_proto::auth::binding_proof(&key, b"fuzz exporter");
    let sent = handshake::encode_hello(&ClientProof { proof });
    assert_eq!(server.output, sent, "the client's binding proof");
    if result.is_ok() {
        let mut cursor = Cursor::new(data);
        let verdict: Verdict = handshake::read_message(&mut cursor).expect("verdict");
        assert!(verdict.accepted, "a refused binding was taken for accepted");
    }
}

fn backend() -> &'static Arc<EmuBackend> {
    static BACKEND: OnceLock<Arc<EmuBackend>> = OnceLock::new();
    BACKEND.get_or_init(|| {
        Arc::new(EmuBackend::new(&EmuSettings {
            gpus: 2,
            memory: 16 << 20,
            ..EmuSettings::default()
        }))
    })
}

/// The server's policies the gate runs under: no tenants (a loopback
/// client is let in without a secret), and one tenant.
fn policies() -> &'static [Policy; 2] {
    static POLICIES: OnceLock<[Policy; 2]> = OnceLock::new();
    POLICIES.get_or_init(|| {
        let c = credentials();
        let tenants = Tenants::single(&c.tenant, &c.secret).expect("a valid tenant");
        [
            Policy::default(),
            Policy {
                tenants: Some(Arc::new(tenants)),
                ..Policy::default()
            },
        ]
    })
}

/// The server's gate, the client played by `data` over a socket pair
/// (the gate only reads, writes and sets timeouts): whatever the client says, the gate answers with well-formed
/// messages or nothing, admits only what it says it admits, and never
/// admits anyone to a server with tenants (the fuzzer cannot know the
/// secret, and the gate's nonce is fresh each time).
fn gate_side(data: &[u8], policy: &Policy) {
    let (mut client, mut server) = crate::loopback::socket_pair();
    client.write_all(data).expect("write the client's side");
    client
        .shutdown(Shutdown::Write)
        .expect("close the client's side");
    let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let result = gate::admit(
        &mut server,
        peer,
        policy,
        backend().as_ref(),
        InstanceId::NONE,
        |_, _| Ok(None),
    );
    drop(server);
    let mut answers = Vec::new();
    let _ = client.read_to_end(&mut answers);
    drop(client);
    let mut said = Cursor::new(answers.as_slice());
    let hello = handshake::read_message::<_, ServerHello>(&mut said).ok();
    let verdict = handshake::read_message::<_, Verdict>(&mut said).ok();
    if let Ok(admission) = &result {
        assert!(
            policy.tenants.is_none(),
            "admitted to a server with tenants without the secret: {admission:?}"
        );
        let greeting = hello.as_ref().expect("an admitted client was greeted");
        assert!(greeting.accepted && !greeting.auth);
        assert!(verdict.as_ref().expect("and given a verdict").accepted);
        admission
            .hello
            .validate()
            .expect("an admitted hello is valid");
    }
    if let Some(h) = &hello {
        assert_eq!(h.auth, policy.tenants.is_some());
        if !h.accepted {
            assert!(result.is_err(), "refused but admitted");
            assert!(verdict.is_none(), "a verdict after a refusal");
        }
    }
}
