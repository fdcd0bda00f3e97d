//! TLS for the TCP module and the RDMA modules' TCP bootstrap (rustls).
//!
//! The server presents a certificate (`--tls-cert`, `--tls-key`); the client
//! checks it against a CA (`RCUD_TLS_CA`) or a pinned SHA-256 fingerprint of
//! the certificate (`RCUD_TLS_PIN`). TLS starts after the challenge–response
//! of the handshake, on the same socket, so a connection that fails
//! authentication never costs a TLS handshake or an agent. RDMA payloads do
//! not pass through TLS.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::UnbufferedClientConnection;
use rustls::crypto::{ring as provider, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::UnbufferedServerConnection;
use rustls::{ClientConfig, DigitallySignedStruct, ServerConfig};
use sha2::{Digest, Sha256};
use thiserror::Error;

use rcud_proto::auth::TLS_BINDING_LABEL;

use crate::deadline::Deadline;

mod handshake;
mod record;

pub use record::TlsLink;

/// A byte stream a channel runs over: a TCP socket, or TLS on one.
pub trait Link: Read + Write + Send + fmt::Debug + 'static {
    /// The socket underneath, for timeouts, addresses and socket options.
    fn socket(&self) -> &TcpStream;
}

impl Link for TcpStream {
    fn socket(&self) -> &TcpStream {
        self
    }
}

/// Why TLS could not be set up.
#[derive(Debug, Error)]
pub enum TlsError {
    /// A certificate, key or CA file could not be read or parsed.
    #[error("{path}: {why}")]
    File {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        why: String,
    },
    /// `RCUD_TLS_PIN` is not 64 hex digits (colons allowed).
    #[error("RCUD_TLS_PIN: expected the certificate's SHA-256 fingerprint as 64 hex digits")]
    Pin,
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// The TLS handshake failed.
    #[error("TLS handshake with {peer} failed: {why}")]
    Handshake {
        /// The other end.
        peer: String,
        /// rustls' or the socket's reason.
        why: String,
    },
}

fn crypto() -> Arc<CryptoProvider> {
    let mut p = provider::default_provider();
    // AES-128-GCM first: ample for a session key, and cheaper per byte than
    // AES-256, which matters to bulk copies.
    p.cipher_suites
        .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    Arc::new(p)
}

fn read_file(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::File {
        path: path.into(),
        why: e.to_string(),
    })
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read_file(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::File {
            path: path.into(),
            why: format!("not PEM certificates: {e}"),
        })?;
    if certs.is_empty() {
        return Err(TlsError::File {
            path: path.into(),
            why: "holds no certificate".into(),
        });
    }
    Ok(certs)
}

/// The server's TLS settings: its certificate chain and key.
#[derive(Clone)]
pub struct ServerTls {
    config: Arc<ServerConfig>,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ServerTls")
    }
}

impl ServerTls {
    /// Loads a PEM certificate chain and its PEM private key.
    pub fn load(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let chain = certificates(cert)?;
        let key_pem = read_file(key)?;
        let key_der = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| TlsError::File {
            path: key.into(),
            why: format!("not a PEM private key: {e}"),
        })?;
        Self::from_der(chain, key_der)
    }

    /// From DER certificates and key (tests, generated certificates).
    pub fn from_der(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Self, TlsError> {
        let mut config = ServerConfig::builder_with_provider(crypto())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        // Session tickets would be written while the channel polls the socket
        // without blocking; clients reconnect rarely enough to do without.
        config.send_tls13_tickets = 0;
        // The record layer (`record`) seals and opens records itself.
        config.enable_secret_extraction = true;
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// Runs the server's side of a TLS handshake on `socket`, to finish
    /// before `deadline`.
    pub fn accept(&self, socket: TcpStream, deadline: Instant) -> Result<TlsLink, TlsError> {
        let peer = peer_of(&socket);
        let conn = UnbufferedServerConnection::new(self.config.clone())?;
        establish(conn, socket, &peer, deadline)
    }
}

/// How the client checks the server's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// Certificates signed by the CAs of this PEM file, for the server's name.
    Ca(PathBuf),
    /// Exactly the certificate with this SHA-256 fingerprint.
    Pin([u8; 32]),
}

impl Trust {
    /// `RCUD_TLS_CA` or `RCUD_TLS_PIN` from the environment; `None` for
    /// plain TCP.
    pub fn from_env() -> Result<Option<Self>, TlsError> {
        if let Ok(pin) = std::env::var("RCUD_TLS_PIN") {
            return Ok(Some(Trust::Pin(parse_pin(&pin)?)));
        }
        Ok(std::env::var_os("RCUD_TLS_CA").map(|ca| Trust::Ca(ca.into())))
    }
}

/// Parses a SHA-256 fingerprint: 64 hex digits, colons ignored.
pub fn parse_pin(pin: &str) -> Result<[u8; 32], TlsError> {
    let hex: Vec<u8> = pin.bytes().filter(|b| *b != b':').collect();
    if hex.len() != 64 {
        return Err(TlsError::Pin);
    }
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(hex.chunks(2)) {
        let s = std::str::from_utf8(pair).map_err(|_| TlsError::Pin)?;
        *o = u8::from_str_radix(s, 16).map_err(|_| TlsError::Pin)?;
    }
    Ok(out)
}

/// The SHA-256 fingerprint of a DER certificate, as `RCUD_TLS_PIN` takes it.
pub fn fingerprint(cert_der: &[u8]) -> String {
    Sha256::digest(cert_der)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The client's TLS settings.
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientTls")
    }
}

impl ClientTls {
    /// Settings that trust `trust`.
    pub fn new(trust: &Trust) -> Result<Self, TlsError> {
        let builder = ClientConfig::builder_with_provider(crypto())
            .with_protocol_versions(&[&rustls::version::TLS13])?;
        let mut config = match trust {
            Trust::Ca(path) => {
                let mut roots = rustls::RootCertStore::empty();
                for cert in certificates(path)? {
                    roots.add(cert).map_err(|e| TlsError::File {
                        path: path.clone(),
                        why: format!("not a usable CA certificate: {e}"),
                    })?;
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            Trust::Pin(pin) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(PinnedCertificate {
                    fingerprint: *pin,
                    provider: crypto(),
                }))
                .with_no_client_auth(),
        };
        config.enable_secret_extraction = true;
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// Runs the client's side of a TLS handshake on `socket` with the server
    /// at `addr` (`host:port`; the host is the name the certificate must
    /// carry), to finish before `deadline`.
    pub fn connect(
        &self,
        socket: TcpStream,
        addr: &str,
        deadline: Instant,
    ) -> Result<TlsLink, TlsError> {
        let host = addr
            .rsplit_once(':')
            .map_or(addr, |(h, _)| h)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let name = ServerName::try_from(host.to_string()).map_err(|e| TlsError::Handshake {
            peer: addr.into(),
            why: format!("`{host}` is not a valid server name: {e}"),
        })?;
        let conn = UnbufferedClientConnection::new(self.config.clone(), name)?;
        establish(conn, socket, addr, deadline)
    }
}

/// Runs a handshake on `socket` before `deadline`, turning rustls' and the
/// socket's errors into a sentence, and hands the session to the record
/// layer. The socket's own timeouts are restored afterwards.
fn establish<C: handshake::Unbuffered>(
    conn: C,
    mut socket: TcpStream,
    peer: &str,
    deadline: Instant,
) -> Result<TlsLink, TlsError> {
    let failed = |why: String| TlsError::Handshake {
        peer: peer.into(),
        why,
    };
    let timeouts = (socket.read_timeout(), socket.write_timeout());
    let finished =
        handshake::run(conn, &mut Deadline::until(&mut socket, deadline)).map_err(|e| {
            failed(match e {
                handshake::Failure::Closed => {
                    "the peer closed the connection (does it speak TLS?)".to_string()
                }
                handshake::Failure::Tls(e @ rustls::Error::InvalidMessage(_)) => {
                    format!("{e} (does the peer speak TLS?)")
                }
                handshake::Failure::Tls(e) => e.to_string(),
                handshake::Failure::Io(e) => match e.kind() {
                    io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => {
                        "the peer closed the connection (does it speak TLS?)".to_string()
                    }
                    io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
                        "the peer took too long".to_string()
                    }
                    _ => e.to_string(),
                },
            })
        })?;
    if let (Ok(read), Ok(write)) = timeouts {
        // Best effort: the socket works either way, with the deadline's.
        let _ = socket.set_read_timeout(read);
        let _ = socket.set_write_timeout(write);
    }
    let binding = channel_binding(&finished.secrets, &finished.schedule);
    TlsLink::new(record::Established {
        sock: socket,
        schedule: finished.schedule,
        secrets: finished.secrets,
        leftover: finished.leftover,
        early_plaintext: finished.early_plaintext,
        binding,
    })
    .map_err(|e| failed(e.to_string()))
}

/// The value the handshake's proofs are bound to: a hash of the session's
/// first traffic keys, client to server then server to client. Only the
/// two ends know them, and they differ in every session, so a proof made in
/// one session is worthless in another.
fn channel_binding(secrets: &rustls::ExtractedSecrets, schedule: &record::Schedule) -> [u8; 32] {
    fn key_and_iv(s: &rustls::ConnectionTrafficSecrets) -> (&[u8], &[u8]) {
        match s {
            rustls::ConnectionTrafficSecrets::Aes128Gcm { key, iv }
            | rustls::ConnectionTrafficSecrets::Aes256Gcm { key, iv }
            | rustls::ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (key.as_ref(), iv.as_ref())
            }
            _ => (&[], &[]),
        }
    }
    let (to_server, to_client) = match schedule {
        record::Schedule::Client(_) => (&secrets.tx.1, &secrets.rx.1),
        record::Schedule::Server(_) => (&secrets.rx.1, &secrets.tx.1),
    };
    let mut h = Sha256::new();
    h.update(TLS_BINDING_LABEL);
    for s in [to_server, to_client] {
        let (key, iv) = key_and_iv(s);
        h.update((key.len() as u32).to_be_bytes());
        h.update(key);
        h.update(iv);
    }
    h.finalize().into()
}

fn peer_of(socket: &TcpStream) -> String {
    socket
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Trusts exactly one certificate, by fingerprint, whatever its names and
/// dates; the handshake's signatures are still checked against its key.
#[derive(Debug)]
struct PinnedCertificate {
    fingerprint: [u8; 32],
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedCertificate {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let got: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        if got == self.fingerprint {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the server's certificate has fingerprint {}, not the pinned one",
                fingerprint(end_entity.as_ref())
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::net::TcpListener;
    use std::time::Duration;

    fn self_signed(name: &str) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>, String) {
        let cert = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
        let key = PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
        (vec![cert.cert.der().clone()], key, cert.cert.pem())
    }

    fn handshake(
        trust: Trust,
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<[u8; 32], TlsError> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = ServerTls::from_der(chain, key).unwrap();
        let t = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            server
                .accept(s, Instant::now() + Duration::from_secs(5))
                .map(|mut l| {
                    let mut b = [0u8; 5];
                    l.read_exact(&mut b).unwrap();
                    l.write_all(&b).unwrap();
                    l.flush().unwrap();
                    l.channel_binding().unwrap()
                })
        });
        let client = ClientTls::new(&trust)?;
        let sock = TcpStream::connect(addr).unwrap();
        let result = client.connect(
            sock,
            &format!("localhost:{}", addr.port()),
            Instant::now() + Duration::from_secs(5),
        );
        let mut link = match result {
            Ok(l) => l,
            Err(e) => {
                let _ = t.join();
                return Err(e);
            }
        };
        link.write_all(b"hello").unwrap();
        link.flush().unwrap();
        let mut b = [0u8; 5];
        link.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"hello");
        let ours = link.channel_binding().unwrap();
        let theirs = t.join().unwrap().unwrap();
        assert_eq!(ours, theirs, "both ends derive the same channel binding");
        Ok(ours)
    }

    #[test]
    fn a_pinned_certificate_is_trusted_and_another_is_not() {
        let (chain, key, _) = self_signed("localhost");
        let pin = parse_pin(&fingerprint(&chain[0])).unwrap();
        let one = handshake(Trust::Pin(pin), chain.clone(), key.clone_key()).unwrap();
        let two = handshake(Trust::Pin(pin), chain.clone(), key.clone_key()).unwrap();
        assert_ne!(one, two, "every session has its own binding");
        let err = handshake(Trust::Pin([0; 32]), chain, key).unwrap_err();
        assert!(err.to_string().contains("not the pinned one"), "{err}");
    }

    #[test]
    fn a_ca_file_is_trusted_for_the_right_name_only() {
        let dir = tempfile::tempdir().unwrap();
        let (chain, key, pem) = self_signed("localhost");
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, pem).unwrap();
        handshake(Trust::Ca(ca.clone()), chain, key).unwrap();
        let (other, other_key, _) = self_signed("elsewhere");
        assert!(handshake(Trust::Ca(ca), other, other_key).is_err());
    }

    /// Bytes that differ at every position, so a misplaced record shows.
    fn pattern(len: usize, seed: u32) -> Vec<u8> {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }

    fn pinned_pair() -> (ServerTls, ClientTls) {
        let (chain, key, _) = self_signed("localhost");
        let pin = parse_pin(&fingerprint(&chain[0])).unwrap();
        (
            ServerTls::from_der(chain, key).unwrap(),
            ClientTls::new(&Trust::Pin(pin)).unwrap(),
        )
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    /// rustls' own buffered stream: a standard TLS 1.3 peer.
    fn standard_server(
        tls: &ServerTls,
        sock: TcpStream,
    ) -> rustls::StreamOwned<rustls::ServerConnection, TcpStream> {
        let conn = rustls::ServerConnection::new(tls.config.clone()).unwrap();
        let mut stream = rustls::StreamOwned::new(conn, sock);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock).unwrap();
        }
        stream
    }

    /// rustls' own client, trusting any certificate: a standard TLS 1.3 peer.
    fn standard_client() -> rustls::ClientConnection {
        let config = rustls::ClientConfig::builder_with_provider(crypto())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(crypto())))
            .with_no_client_auth();
        let name = ServerName::try_from("localhost").unwrap();
        rustls::ClientConnection::new(Arc::new(config), name).unwrap()
    }

    #[test]
    fn the_record_layer_speaks_standard_tls_both_ways_across_key_updates() {
        let (server, client) = pinned_pair();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let data = pattern((1 << 20) + 7, 1);
        let expect = data.clone();
        let peer = std::thread::spawn(move || {
            let (sock, _) = listener.accept().unwrap();
            let mut s = standard_server(&server, sock);
            let mut got = vec![0u8; expect.len()];
            s.read_exact(&mut got).unwrap();
            assert!(got == expect, "the standard peer reads what we sealed");
            // Its own key update, asked of a record layer it does not know.
            s.conn.refresh_traffic_keys().unwrap();
            for piece in got.chunks(300_001) {
                s.write_all(piece).unwrap();
            }
            s.flush().unwrap();
            let mut tail = [0u8; 4];
            s.read_exact(&mut tail).unwrap();
            tail
        });
        let sock = TcpStream::connect(addr).unwrap();
        let mut link = client
            .connect(sock, &format!("localhost:{}", addr.port()), soon())
            .unwrap();
        // A key update every three records: dozens within the megabyte.
        link.rekey_after(3);
        for piece in data.chunks(70_000) {
            link.write_all(piece).unwrap();
        }
        link.flush().unwrap();
        let mut back = vec![0u8; data.len()];
        link.read_exact(&mut back).unwrap();
        assert!(back == data, "we open what the standard peer sealed");
        link.write_all(b"done").unwrap();
        link.flush().unwrap();
        assert_eq!(&peer.join().unwrap(), b"done");
    }

    #[test]
    fn data_sent_with_the_clients_finished_is_not_lost() {
        let (server, _) = pinned_pair();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let first = pattern(40_000, 2);
        let expect = first.clone();
        let srv = std::thread::spawn(move || {
            let (sock, _) = listener.accept().unwrap();
            let mut link = server.accept(sock, soon()).unwrap();
            let mut got = vec![0u8; expect.len()];
            link.read_exact(&mut got).unwrap();
            assert!(got == expect);
            link.write_all(b"ok").unwrap();
            link.flush().unwrap();
        });
        // rustls' client sends data written before the handshake's end
        // right behind its Finished, in the same flight.
        let conn = standard_client();
        let mut s = rustls::StreamOwned::new(conn, TcpStream::connect(addr).unwrap());
        s.conn.set_buffer_limit(None);
        s.conn.writer().write_all(&first).unwrap();
        let mut ok = [0u8; 2];
        s.read_exact(&mut ok).unwrap();
        assert_eq!(&ok, b"ok");
        srv.join().unwrap();
    }

    #[test]
    fn partial_and_forged_records_are_waited_for_and_refused() {
        let (server, _) = pinned_pair();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let srv = std::thread::spawn(move || {
            let (sock, _) = listener.accept().unwrap();
            let mut link = server.accept(sock, soon()).unwrap();
            // Half a record: a non-blocking read waits for the rest.
            let mut hello = [0u8; 5];
            link.socket().set_nonblocking(true).unwrap();
            let early = link.read(&mut hello).unwrap_err();
            assert_eq!(early.kind(), io::ErrorKind::WouldBlock);
            link.socket().set_nonblocking(false).unwrap();
            link.write_all(b"go").unwrap();
            link.flush().unwrap();
            link.read_exact(&mut hello).unwrap();
            assert_eq!(&hello, b"hello");
            // A record changed on the way fails authentication.
            let mut more = [0u8; 5];
            let forged = link.read_exact(&mut more).unwrap_err();
            assert_eq!(forged.kind(), io::ErrorKind::InvalidData);
            assert!(forged.to_string().contains("authentication"), "{forged}");
        });
        let mut conn = standard_client();
        let mut sock = TcpStream::connect(addr).unwrap();
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).unwrap();
        }
        let mut sealed = |data: &[u8]| {
            conn.writer().write_all(data).unwrap();
            let mut wire = Vec::new();
            while conn.wants_write() {
                conn.write_tls(&mut wire).unwrap();
            }
            wire
        };
        let hello = sealed(b"hello");
        sock.write_all(&hello[..9]).unwrap();
        let mut go = Vec::new();
        while go.len() < 10 {
            let mut b = [0u8; 64];
            let n = sock.read(&mut b).unwrap();
            assert!(n > 0);
            go.extend_from_slice(&b[..n]);
        }
        sock.write_all(&hello[9..]).unwrap();
        let mut forged = sealed(b"world");
        let last = forged.len() - 1;
        forged[last] ^= 1;
        sock.write_all(&forged).unwrap();
        srv.join().unwrap();
    }

    #[test]
    fn pins_parse_with_or_without_colons() {
        let hex = "ab".repeat(32);
        assert_eq!(parse_pin(&hex).unwrap(), [0xab; 32]);
        let colons = vec!["AB"; 32].join(":");
        assert_eq!(parse_pin(&colons).unwrap(), [0xab; 32]);
        assert!(parse_pin("abc").is_err());
        assert!(parse_pin(&"zz".repeat(32)).is_err());
    }

    /// Accepts any certificate (tests of the record layer only).
    #[derive(Debug)]
    struct AnyCertificate(Arc<CryptoProvider>);

    impl ServerCertVerifier for AnyCertificate {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }

        fn verify_tls12_signature(
            &self,
            _: &[u8],
            _: &CertificateDer<'_>,
            _: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            Ok(HandshakeSignatureValid::assertion())
        }

        fn verify_tls13_signature(
            &self,
            _: &[u8],
            _: &CertificateDer<'_>,
            _: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            Ok(HandshakeSignatureValid::assertion())
        }

        fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }
}
