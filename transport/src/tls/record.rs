//! The TLS 1.3 record layer of an established session (RFC 8446 §5).
//!
//! rustls runs the handshake and keeps the key schedule (its kernel-TLS
//! interface: new secrets at a key update); this module seals and opens the
//! records itself, because rustls' buffered stream copies every byte four
//! times on the way in (socket buffer, deframer, a plaintext vector per
//! record, the caller's buffer) and allocates per record. Here a received
//! record is read into one buffer, decrypted in place and copied once into
//! the caller's; a sent one is copied once into the output buffer and
//! encrypted in place. The wire format is standard TLS 1.3, so either end may
//! be any TLS 1.3 implementation.

use std::fmt;
use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;
use std::ops::Range;

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use rustls::client::ClientConnectionData;
use rustls::kernel::KernelConnection;
use rustls::server::ServerConnectionData;
use rustls::ConnectionTrafficSecrets;

use super::Link;

/// Largest plaintext of one record.
const MAX_PLAINTEXT: usize = 1 << 14;
/// Largest ciphertext of one record (plaintext, content type, padding, tag).
const MAX_CIPHERTEXT: usize = MAX_PLAINTEXT + 256;
const HEADER: usize = 5;
const TAG: usize = 16;
/// Bytes read from the socket at once: many records per system call.
const READ_BUFFER: usize = 256 << 10;
/// Plaintext sealed per batch before it is written: records enough to keep
/// the socket busy, few enough to stay in the cache between copy and seal.
const WRITE_BATCH: usize = 15 * MAX_PLAINTEXT;
/// Handshake bytes (key updates, tickets) a peer may leave unfinished.
const MAX_HANDSHAKE_BUFFER: usize = 64 << 10;
/// Empty records in a row before the peer is taken for hostile.
const MAX_EMPTY_RECORDS: u32 = 64;

const CONTENT_ALERT: u8 = 21;
const CONTENT_HANDSHAKE: u8 = 22;
const CONTENT_APPLICATION_DATA: u8 = 23;
const HANDSHAKE_NEW_SESSION_TICKET: u8 = 4;
const HANDSHAKE_KEY_UPDATE: u8 = 24;
const ALERT_CLOSE_NOTIFY: u8 = 0;

fn protocol_error(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {}", why.into()))
}

/// One direction's AEAD: its key, IV and record sequence number.
struct Direction {
    key: LessSafeKey,
    iv: [u8; 12],
    seq: u64,
}

impl Direction {
    fn new(seq: u64, secrets: &ConnectionTrafficSecrets) -> io::Result<Self> {
        let (algorithm, key, iv) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&aead::AES_128_GCM, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&aead::AES_256_GCM, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (&aead::CHACHA20_POLY1305, key, iv)
            }
            _ => {
                return Err(protocol_error(
                    "a cipher suite the record layer does not know",
                ))
            }
        };
        let key = UnboundKey::new(algorithm, key.as_ref())
            .map_err(|_| protocol_error("a traffic key of the wrong length"))?;
        let iv: [u8; 12] = iv
            .as_ref()
            .try_into()
            .map_err(|_| protocol_error("an IV of the wrong length"))?;
        Ok(Self {
            key: LessSafeKey::new(key),
            iv,
            seq,
        })
    }

    /// The per-record nonce: the IV with the sequence number XORed into its
    /// last eight bytes (RFC 8446 §5.3). Counts the record.
    fn next_nonce(&mut self) -> io::Result<Nonce> {
        let mut nonce = self.iv;
        for (n, s) in nonce[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *n ^= s;
        }
        self.seq = self
            .seq
            .checked_add(1)
            .ok_or_else(|| protocol_error("record sequence number exhausted"))?;
        Ok(Nonce::assume_unique_for_key(nonce))
    }
}

/// rustls' side of the session after the handshake: the key schedule.
pub(super) enum Schedule {
    /// The client's end.
    Client(KernelConnection<ClientConnectionData>),
    /// The server's end.
    Server(KernelConnection<ServerConnectionData>),
}

impl Schedule {
    fn update_tx(&mut self) -> Result<(u64, ConnectionTrafficSecrets), rustls::Error> {
        match self {
            Schedule::Client(k) => k.update_tx_secret(),
            Schedule::Server(k) => k.update_tx_secret(),
        }
    }

    fn update_rx(&mut self) -> Result<(u64, ConnectionTrafficSecrets), rustls::Error> {
        match self {
            Schedule::Client(k) => k.update_rx_secret(),
            Schedule::Server(k) => k.update_rx_secret(),
        }
    }

    fn confidentiality_limit(&self) -> u64 {
        let suite = match self {
            Schedule::Client(k) => k.negotiated_cipher_suite(),
            Schedule::Server(k) => k.negotiated_cipher_suite(),
        };
        // TLS 1.2 never gets here: the configurations allow TLS 1.3 only.
        suite
            .tls13()
            .map_or(1 << 24, |s| s.common.confidentiality_limit)
    }
}

/// What the handshake hands the record layer.
pub(super) struct Established {
    pub sock: TcpStream,
    pub schedule: Schedule,
    pub secrets: rustls::ExtractedSecrets,
    /// Records the peer sent after its handshake, not yet decrypted.
    pub leftover: Vec<u8>,
    /// Application data rustls decrypted during the handshake.
    pub early_plaintext: Vec<u8>,
    pub binding: [u8; 32],
}

/// A TLS session on a TCP socket, either end.
pub struct TlsLink {
    sock: TcpStream,
    schedule: Schedule,
    tx: Direction,
    rx: Direction,
    /// Records sent under the current transmit key before it is replaced.
    rekey_after: u64,
    /// The peer asked for a key update; ours goes before our next record.
    owe_key_update: bool,
    binding: [u8; 32],
    /// Received bytes: `[start, end)` undecrypted records, `plain` the
    /// decrypted payload not yet read (before `start`).
    input: Box<[u8]>,
    start: usize,
    end: usize,
    plain: Range<usize>,
    /// Plaintext received before the record layer took over.
    stash: Vec<u8>,
    stash_read: usize,
    /// A post-handshake message cut across records.
    handshake: Vec<u8>,
    empty_records: u32,
    peer_closed: bool,
    /// Sealed records not yet written (a non-blocking socket was full).
    output: Vec<u8>,
    output_sent: usize,
}

impl fmt::Debug for TlsLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsLink")
            .field("sock", &self.sock)
            .field("tx_seq", &self.tx.seq)
            .field("rx_seq", &self.rx.seq)
            .finish_non_exhaustive()
    }
}

impl TlsLink {
    pub(super) fn new(e: Established) -> io::Result<Self> {
        let (tx_seq, tx) = &e.secrets.tx;
        let (rx_seq, rx) = &e.secrets.rx;
        let mut input = vec![0u8; READ_BUFFER.max(e.leftover.len() + HEADER + MAX_CIPHERTEXT)]
            .into_boxed_slice();
        input[..e.leftover.len()].copy_from_slice(&e.leftover);
        // Well inside the cipher's limit, so the update always lands first.
        let rekey_after = e.schedule.confidentiality_limit() / 2;
        Ok(Self {
            sock: e.sock,
            tx: Direction::new(*tx_seq, tx)?,
            rx: Direction::new(*rx_seq, rx)?,
            schedule: e.schedule,
            rekey_after,
            owe_key_update: false,
            binding: e.binding,
            input,
            start: 0,
            end: e.leftover.len(),
            plain: 0..0,
            stash: e.early_plaintext,
            stash_read: 0,
            handshake: Vec::new(),
            empty_records: 0,
            peer_closed: false,
            output: Vec::with_capacity(WRITE_BATCH + 16 * (HEADER + TAG + 1)),
            output_sent: 0,
        })
    }

    /// The session's channel binding for the handshake's proof: a hash of
    /// both directions' first traffic keys, which only the two ends know.
    pub fn channel_binding(&self) -> Result<[u8; 32], super::TlsError> {
        Ok(self.binding)
    }

    /// Replaces the transmit key after `records` records (tests).
    #[cfg(test)]
    pub(super) fn rekey_after(&mut self, records: u64) {
        self.rekey_after = records;
    }

    // ----- sending -----

    /// Seals one record of `content_type` holding the bytes of `parts`
    /// (at most `MAX_PLAINTEXT`) onto `output`.
    fn seal(&mut self, content_type: u8, parts: &[&[u8]]) -> io::Result<()> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        debug_assert!(len <= MAX_PLAINTEXT);
        let at = self.output.len();
        let wire_len = len + 1 + TAG;
        let header = [
            CONTENT_APPLICATION_DATA,
            3,
            3,
            (wire_len >> 8) as u8,
            wire_len as u8,
        ];
        self.output.extend_from_slice(&header);
        for p in parts {
            self.output.extend_from_slice(p);
        }
        self.output.push(content_type);
        let nonce = self.tx.next_nonce()?;
        let tag = self
            .tx
            .key
            .seal_in_place_separate_tag(nonce, Aad::from(header), &mut self.output[at + HEADER..])
            .map_err(|_| protocol_error("sealing a record failed"))?;
        self.output.extend_from_slice(tag.as_ref());
        Ok(())
    }

    /// Seals one record of application data, replacing the key first when
    /// it is due (the peer asked, or the key has sealed enough records).
    fn seal_data(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        if self.owe_key_update || self.tx.seq >= self.rekey_after {
            self.update_tx_key()?;
        }
        self.seal(CONTENT_APPLICATION_DATA, parts)
    }

    /// Sends a KeyUpdate under the old key, then moves to the new one.
    fn update_tx_key(&mut self) -> io::Result<()> {
        self.seal(CONTENT_HANDSHAKE, &[&[HANDSHAKE_KEY_UPDATE, 0, 0, 1, 0]])?;
        let (seq, secrets) = self
            .schedule
            .update_tx()
            .map_err(|e| protocol_error(format!("key update: {e}")))?;
        self.tx = Direction::new(seq, &secrets)?;
        self.owe_key_update = false;
        Ok(())
    }

    /// Writes what is sealed; on a non-blocking socket what does not fit
    /// stays for the next call.
    fn drain_output(&mut self) -> io::Result<()> {
        while self.output_sent < self.output.len() {
            match self.sock.write(&self.output[self.output_sent..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.output_sent += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.output.clear();
        self.output_sent = 0;
        Ok(())
    }

    /// Seals up to one batch of the bytes of `bufs` into records and starts
    /// writing them; returns how many plaintext bytes it took.
    fn send(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.drain_output()?;
        let mut taken = 0;
        let mut parts: Vec<&[u8]> = Vec::with_capacity(4);
        let mut in_record = 0;
        for buf in bufs {
            let mut rest: &[u8] = buf;
            while !rest.is_empty() && taken < WRITE_BATCH {
                let n = rest
                    .len()
                    .min(MAX_PLAINTEXT - in_record)
                    .min(WRITE_BATCH - taken);
                parts.push(&rest[..n]);
                rest = &rest[n..];
                in_record += n;
                taken += n;
                if in_record == MAX_PLAINTEXT {
                    self.seal_data(&parts)?;
                    parts.clear();
                    in_record = 0;
                }
            }
        }
        if in_record > 0 {
            self.seal_data(&parts)?;
        }
        // The bytes are taken once sealed; a full non-blocking socket keeps
        // the rest of the records for the next write or flush.
        match self.drain_output() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && taken > 0 => Ok(taken),
            Err(e) => Err(e),
            Ok(()) => Ok(taken),
        }
    }

    // ----- receiving -----

    /// A whole record at `start`, if the buffer holds one: (content type
    /// from the header, wire length).
    fn whole_record(&self) -> io::Result<Option<usize>> {
        let have = &self.input[self.start..self.end];
        if have.len() < HEADER {
            return Ok(None);
        }
        if have[0] != CONTENT_APPLICATION_DATA || have[1] != 3 {
            return Err(protocol_error(format!(
                "unexpected record type {} (a plaintext peer, or not TLS 1.3?)",
                have[0]
            )));
        }
        let len = usize::from(u16::from_be_bytes([have[3], have[4]]));
        if !(TAG + 1..=MAX_CIPHERTEXT).contains(&len) {
            return Err(protocol_error(format!("a record of {len} bytes")));
        }
        Ok((have.len() >= HEADER + len).then_some(len))
    }

    /// Opens the record at `start` in place; leaves an application payload
    /// in `plain`, and acts on anything else.
    fn open(&mut self, len: usize) -> io::Result<()> {
        let at = self.start;
        let header: [u8; HEADER] = self.input[at..at + HEADER]
            .try_into()
            .map_err(|_| protocol_error("short header"))?;
        self.start += HEADER + len;
        let nonce = self.rx.next_nonce()?;
        let body = &mut self.input[at + HEADER..at + HEADER + len];
        let inner = self
            .rx
            .key
            .open_in_place(nonce, Aad::from(header), body)
            .map_err(|_| protocol_error("a record failed authentication"))?;
        // The content type is the last non-zero byte (zeros are padding).
        let Some(type_at) = inner.iter().rposition(|&b| b != 0) else {
            return Err(protocol_error("a record without a content type"));
        };
        let content_type = inner[type_at];
        let payload = at + HEADER..at + HEADER + type_at;
        match content_type {
            CONTENT_APPLICATION_DATA => {
                if payload.is_empty() {
                    self.empty_records += 1;
                    if self.empty_records > MAX_EMPTY_RECORDS {
                        return Err(protocol_error("too many empty records"));
                    }
                } else {
                    self.empty_records = 0;
                    if !self.handshake.is_empty() {
                        return Err(protocol_error("data inside a handshake message"));
                    }
                }
                self.plain = payload;
                Ok(())
            }
            CONTENT_HANDSHAKE => {
                if self.handshake.len() + payload.len() > MAX_HANDSHAKE_BUFFER {
                    return Err(protocol_error("an oversized handshake message"));
                }
                let bytes = self.input[payload].to_vec();
                self.handshake.extend_from_slice(&bytes);
                self.handshake_messages()
            }
            CONTENT_ALERT => {
                let alert = &self.input[payload];
                match alert {
                    [_, ALERT_CLOSE_NOTIFY] => {
                        self.peer_closed = true;
                        Ok(())
                    }
                    [_, description] => Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        format!("TLS: the peer sent alert {description}"),
                    )),
                    _ => Err(protocol_error("a malformed alert")),
                }
            }
            other => Err(protocol_error(format!("unexpected content type {other}"))),
        }
    }

    /// Acts on the whole post-handshake messages received.
    fn handshake_messages(&mut self) -> io::Result<()> {
        while self.handshake.len() >= 4 {
            let len = usize::from(self.handshake[1]) << 16
                | usize::from(self.handshake[2]) << 8
                | usize::from(self.handshake[3]);
            if self.handshake.len() < 4 + len {
                return Ok(());
            }
            let kind = self.handshake[0];
            let body: Vec<u8> = self.handshake.drain(..4 + len).skip(4).collect();
            match (kind, &self.schedule) {
                (HANDSHAKE_KEY_UPDATE, _) => {
                    let requested = match body.as_slice() {
                        [0] => false,
                        [1] => true,
                        _ => return Err(protocol_error("a malformed KeyUpdate")),
                    };
                    // A key update must end its record (RFC 8446 §5.1).
                    if !self.handshake.is_empty() {
                        return Err(protocol_error("a KeyUpdate not at a record boundary"));
                    }
                    let (seq, secrets) = self
                        .schedule
                        .update_rx()
                        .map_err(|e| protocol_error(format!("key update: {e}")))?;
                    self.rx = Direction::new(seq, &secrets)?;
                    self.owe_key_update |= requested;
                }
                (HANDSHAKE_NEW_SESSION_TICKET, Schedule::Client(_)) => {
                    if let Schedule::Client(k) = &mut self.schedule {
                        k.handle_new_session_ticket(&body)
                            .map_err(|e| protocol_error(format!("session ticket: {e}")))?;
                    }
                }
                (kind, _) => {
                    return Err(protocol_error(format!(
                        "unexpected handshake message {kind} after the handshake"
                    )))
                }
            }
        }
        Ok(())
    }

    /// Copies decrypted bytes into `out`.
    fn take_plain(&mut self, out: &mut [u8]) -> usize {
        if self.stash_read < self.stash.len() {
            let n = out.len().min(self.stash.len() - self.stash_read);
            out[..n].copy_from_slice(&self.stash[self.stash_read..self.stash_read + n]);
            self.stash_read += n;
            if self.stash_read == self.stash.len() {
                self.stash = Vec::new();
                self.stash_read = 0;
            }
            return n;
        }
        let n = out.len().min(self.plain.len());
        out[..n].copy_from_slice(&self.input[self.plain.start..self.plain.start + n]);
        self.plain.start += n;
        n
    }

    fn receive(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let mut done = self.take_plain(out);
        loop {
            // Every whole record already here, as far as `out` takes them.
            while done < out.len() && self.plain.is_empty() && !self.peer_closed {
                let Some(len) = self.whole_record()? else {
                    break;
                };
                self.open(len)?;
                done += self.take_plain(&mut out[done..]);
            }
            if done > 0 || self.peer_closed || !self.plain.is_empty() {
                return Ok(done);
            }
            // Nothing decrypted is left here: the buffer may be rewound.
            if self.start == self.end {
                (self.start, self.end) = (0, 0);
            } else if self.input.len() - self.end < HEADER + MAX_CIPHERTEXT {
                self.input.copy_within(self.start..self.end, 0);
                (self.start, self.end) = (0, self.end - self.start);
            }
            let n = self.sock.read(&mut self.input[self.end..])?;
            if n == 0 {
                if self.start == self.end {
                    return Ok(0);
                }
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "TLS: the peer closed the connection inside a record",
                ));
            }
            self.end += n;
        }
    }
}

impl Read for TlsLink {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.receive(out)
    }
}

impl Write for TlsLink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.send(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.send(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain_output()?;
        self.sock.flush()
    }
}

impl Link for TlsLink {
    fn socket(&self) -> &TcpStream {
        &self.sock
    }
}
