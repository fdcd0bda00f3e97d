//! The TLS handshake, driven through rustls' unbuffered interface: the bytes
//! the peer sends after its handshake stay in our buffer, undecrypted, so
//! the record layer can take them over together with the session's keys.

use std::io::{self, Read, Write};

use rustls::client::{ClientConnectionData, UnbufferedClientConnection};
use rustls::server::{ServerConnectionData, UnbufferedServerConnection};
use rustls::unbuffered::{ConnectionState, EncodeError, InsufficientSizeError, UnbufferedStatus};
use rustls::ExtractedSecrets;

use super::record::Schedule;

/// Handshake bytes we hold at most: a long certificate chain fits.
const MAX_INCOMING: usize = 1 << 20;

/// Why a handshake failed: rustls' verdict, or the socket's.
#[derive(Debug)]
pub(super) enum Failure {
    Tls(rustls::Error),
    Io(io::Error),
    /// The peer closed the session inside the handshake.
    Closed,
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Io(e)
    }
}

impl From<rustls::Error> for Failure {
    fn from(e: rustls::Error) -> Self {
        Failure::Tls(e)
    }
}

/// Either end of an unbuffered rustls connection.
pub(super) trait Unbuffered: Sized {
    type Data;
    fn process<'c, 'i>(
        &'c mut self,
        incoming: &'i mut [u8],
    ) -> UnbufferedStatus<'c, 'i, Self::Data>;
    fn into_schedule(self) -> Result<(ExtractedSecrets, Schedule), rustls::Error>;
}

impl Unbuffered for UnbufferedClientConnection {
    type Data = ClientConnectionData;

    fn process<'c, 'i>(
        &'c mut self,
        incoming: &'i mut [u8],
    ) -> UnbufferedStatus<'c, 'i, Self::Data> {
        self.process_tls_records(incoming)
    }

    fn into_schedule(self) -> Result<(ExtractedSecrets, Schedule), rustls::Error> {
        let (secrets, kernel) = self.dangerous_into_kernel_connection()?;
        Ok((secrets, Schedule::Client(kernel)))
    }
}

impl Unbuffered for UnbufferedServerConnection {
    type Data = ServerConnectionData;

    fn process<'c, 'i>(
        &'c mut self,
        incoming: &'i mut [u8],
    ) -> UnbufferedStatus<'c, 'i, Self::Data> {
        self.process_tls_records(incoming)
    }

    fn into_schedule(self) -> Result<(ExtractedSecrets, Schedule), rustls::Error> {
        let (secrets, kernel) = self.dangerous_into_kernel_connection()?;
        Ok((secrets, Schedule::Server(kernel)))
    }
}

/// What a finished handshake leaves.
pub(super) struct Finished {
    pub secrets: ExtractedSecrets,
    pub schedule: Schedule,
    /// Records received after the handshake, still encrypted.
    pub leftover: Vec<u8>,
    /// Application data rustls decrypted while finishing the handshake.
    pub early_plaintext: Vec<u8>,
}

/// Appends one handshake record rustls has ready to `out`.
fn encode(
    mut encode: rustls::unbuffered::EncodeTlsData<'_, impl Sized>,
    out: &mut Vec<u8>,
) -> Result<(), Failure> {
    let at = out.len();
    out.resize(at + 4096, 0);
    let n = match encode.encode(&mut out[at..]) {
        Ok(n) => n,
        Err(EncodeError::InsufficientSize(InsufficientSizeError { required_size })) => {
            out.resize(at + required_size, 0);
            encode
                .encode(&mut out[at..])
                .map_err(|e| Failure::Tls(rustls::Error::General(e.to_string())))?
        }
        Err(e) => return Err(Failure::Tls(rustls::Error::General(e.to_string()))),
    };
    out.truncate(at + n);
    Ok(())
}

/// Runs the handshake of `conn` over `io` to its end.
pub(super) fn run<C: Unbuffered>(
    mut conn: C,
    io: &mut (impl Read + Write),
) -> Result<Finished, Failure> {
    let mut incoming = vec![0u8; 16 << 10];
    let mut used = 0;
    let mut outgoing = Vec::new();
    let mut early_plaintext = Vec::new();
    loop {
        let UnbufferedStatus { mut discard, state } = conn.process(&mut incoming[..used]);
        let mut done = false;
        match state? {
            ConnectionState::EncodeTlsData(e) => encode(e, &mut outgoing)?,
            ConnectionState::TransmitTlsData(t) => {
                io.write_all(&outgoing)?;
                io.flush()?;
                outgoing.clear();
                t.done();
            }
            ConnectionState::BlockedHandshake => {
                if used == incoming.len() {
                    if incoming.len() >= MAX_INCOMING {
                        return Err(Failure::Tls(rustls::Error::General(
                            "the peer's handshake is too large".into(),
                        )));
                    }
                    incoming.resize(incoming.len() * 2, 0);
                }
                let n = io.read(&mut incoming[used..])?;
                if n == 0 {
                    return Err(Failure::Closed);
                }
                used += n;
            }
            ConnectionState::WriteTraffic(_) => done = true,
            // The peer spoke first, right after its Finished: rustls has
            // opened one record; the rest stay for the record layer.
            ConnectionState::ReadTraffic(mut records) => {
                while let Some(record) = records.next_record() {
                    let record = record?;
                    discard += record.discard;
                    early_plaintext.extend_from_slice(record.payload);
                }
                done = true;
            }
            ConnectionState::PeerClosed | ConnectionState::Closed => return Err(Failure::Closed),
            _ => {
                return Err(Failure::Tls(rustls::Error::General(
                    "unexpected state of the handshake (early data?)".into(),
                )))
            }
        }
        incoming.copy_within(discard..used, 0);
        used -= discard;
        if done {
            incoming.truncate(used);
            let (secrets, schedule) = conn.into_schedule()?;
            return Ok(Finished {
                secrets,
                schedule,
                leftover: incoming,
                early_plaintext,
            });
        }
    }
}
