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
use rustls::crypto::{ring as provider, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, ServerConfig, ServerConnection,
};
use sha2::{Digest, Sha256};
use thiserror::Error;

use rcud_proto::auth::TLS_EXPORTER_LABEL;

use crate::deadline::Deadline;

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
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        // Session tickets would be written while the channel polls the socket
        // without blocking; clients reconnect rarely enough to do without.
        config.send_tls13_tickets = 0;
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// Runs the server's side of a TLS handshake on `socket`, to finish
    /// before `deadline`.
    pub fn accept(&self, socket: TcpStream, deadline: Instant) -> Result<TlsLink, TlsError> {
        let peer = peer_of(&socket);
        let mut conn = ServerConnection::new(self.config.clone())?;
        conn.set_buffer_limit(Some(TLS_SEND_BUFFER));
        let mut stream = rustls::StreamOwned::new(conn, BufferedSocket::new(socket));
        complete(&mut stream.conn, &mut stream.sock, &peer, deadline)?;
        Ok(TlsLink::Server(stream))
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
        let builder =
            ClientConfig::builder_with_provider(crypto()).with_safe_default_protocol_versions()?;
        let config = match trust {
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
        let mut conn = ClientConnection::new(self.config.clone(), name)?;
        conn.set_buffer_limit(Some(TLS_SEND_BUFFER));
        let mut stream = rustls::StreamOwned::new(conn, BufferedSocket::new(socket));
        complete(&mut stream.conn, &mut stream.sock, addr, deadline)?;
        Ok(TlsLink::Client(stream))
    }
}

/// Drives a handshake to its end before `deadline`, turning rustls' errors
/// into a sentence. The socket's own timeouts are restored afterwards.
fn complete<C, D>(
    conn: &mut C,
    buffered: &mut BufferedSocket,
    peer: &str,
    deadline: Instant,
) -> Result<(), TlsError>
where
    C: std::ops::DerefMut<Target = rustls::ConnectionCommon<D>>,
{
    // The handshake reads little, and must not read past its own records
    // into a buffer the deadline does not cover: it runs unbuffered.
    debug_assert!(buffered.is_empty());
    let sock = &mut buffered.sock;
    let timeouts = (sock.read_timeout(), sock.write_timeout());
    let mut io = Deadline::until(sock, deadline);
    while conn.is_handshaking() {
        conn.complete_io(&mut io).map_err(|e| {
            let why = match e.kind() {
                io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => {
                    "the peer closed the connection (does it speak TLS?)".to_string()
                }
                io::ErrorKind::InvalidData => format!("{e} (does the peer speak TLS?)"),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
                    "the peer took too long".to_string()
                }
                _ => e.to_string(),
            };
            TlsError::Handshake {
                peer: peer.into(),
                why,
            }
        })?;
    }
    if let (Ok(read), Ok(write)) = timeouts {
        // Best effort: the socket works either way, with the deadline's.
        let _ = sock.set_read_timeout(read);
        let _ = sock.set_write_timeout(write);
    }
    Ok(())
}

fn peer_of(socket: &TcpStream) -> String {
    socket
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A socket read through a large buffer. rustls reads at most 4 KiB per
/// call; without the buffer a 32 MB copy would cost thousands of system
/// calls more than plain TCP.
#[derive(Debug)]
pub struct BufferedSocket {
    sock: TcpStream,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

/// Encrypted bytes rustls may hold before they are written: large, so a
/// bulk chunk goes out in few system calls.
const TLS_SEND_BUFFER: usize = 1 << 20;

/// Bytes read from the socket at once.
const TLS_READ_BUFFER: usize = 256 << 10;

impl BufferedSocket {
    fn new(sock: TcpStream) -> Self {
        Self {
            sock,
            buf: vec![0u8; TLS_READ_BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

impl Read for BufferedSocket {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.is_empty() {
            // On an error (a non-blocking poll that found nothing) the
            // buffer stays empty.
            let n = self.sock.read(&mut self.buf)?;
            (self.start, self.end) = (0, n);
        }
        let n = (self.end - self.start).min(out.len());
        out[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
        self.start += n;
        Ok(n)
    }
}

impl Write for BufferedSocket {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.sock.write(data)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.sock.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sock.flush()
    }
}

/// A TLS session on a TCP socket, either end.
#[derive(Debug)]
pub enum TlsLink {
    /// The server's end.
    Server(rustls::StreamOwned<ServerConnection, BufferedSocket>),
    /// The client's end.
    Client(rustls::StreamOwned<ClientConnection, BufferedSocket>),
}

impl TlsLink {
    /// The session's exporter value for the handshake's binding proof.
    pub fn exporter(&self) -> Result<[u8; 32], TlsError> {
        let mut out = [0u8; 32];
        match self {
            TlsLink::Server(s) => s
                .conn
                .export_keying_material(&mut out, TLS_EXPORTER_LABEL, None),
            TlsLink::Client(s) => s
                .conn
                .export_keying_material(&mut out, TLS_EXPORTER_LABEL, None),
        }?;
        Ok(out)
    }
}

impl Read for TlsLink {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            TlsLink::Server(s) => s.read(buf),
            TlsLink::Client(s) => s.read(buf),
        }
    }
}

impl Write for TlsLink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            TlsLink::Server(s) => s.write(buf),
            TlsLink::Client(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            TlsLink::Server(s) => s.flush(),
            TlsLink::Client(s) => s.flush(),
        }
    }
}

impl Link for TlsLink {
    fn socket(&self) -> &TcpStream {
        match self {
            TlsLink::Server(s) => &s.sock.sock,
            TlsLink::Client(s) => &s.sock.sock,
        }
    }
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
    ) -> Result<(), TlsError> {
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
                    l.exporter().unwrap()
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
        let ours = link.exporter().unwrap();
        let theirs = t.join().unwrap().unwrap();
        assert_eq!(ours, theirs, "both ends derive the same exporter value");
        Ok(())
    }

    #[test]
    fn a_pinned_certificate_is_trusted_and_another_is_not() {
        let (chain, key, _) = self_signed("localhost");
        let pin = parse_pin(&fingerprint(&chain[0])).unwrap();
        handshake(Trust::Pin(pin), chain.clone(), key.clone_key()).unwrap();
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

    #[test]
    fn pins_parse_with_or_without_colons() {
        let hex = "ab".repeat(32);
        assert_eq!(parse_pin(&hex).unwrap(), [0xab; 32]);
        let colons = vec!["AB"; 32].join(":");
        assert_eq!(parse_pin(&colons).unwrap(), [0xab; 32]);
        assert!(parse_pin("abc").is_err());
        assert!(parse_pin(&"zz".repeat(32)).is_err());
    }
}
