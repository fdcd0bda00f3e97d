//! Helpers for tests that run the `rcud-server` binary and speak the protocol
//! to it with raw frames.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use parking_lot::{Condvar, Mutex};
use rcud_proto::auth::Credentials;
use rcud_proto::codec::{Wire, Writer};
use rcud_proto::frame::{FrameHeader, FrameKind};
use rcud_proto::handshake::{self, ClientHello, HandshakeError, ServerHello};
use rcud_proto::ops::{self, req, Failure, Op};
use rcud_transport::tls::{ClientTls, TlsLink};
use rcud_transport::{Channel, Link, TcpChannel, TcpOptions, TransportError};

/// Everything the server printed, line by line.
#[derive(Default)]
struct Log {
    lines: Mutex<Vec<String>>,
    grew: Condvar,
}

/// A running `rcud-server` listening on a free loopback port.
pub struct ServerProc {
    child: Option<Child>,
    addr: String,
    log: Arc<Log>,
}

impl ServerProc {
    /// Starts the server with `args` (besides `--listen`).
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rcud-server"))
            .args(["--listen", "127.0.0.1:0", "--backend", "emu"])
            .args(args)
            .env("RCUD_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rcud-server");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Log::default());
        let sink = log.clone();
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lines.lock().push(line);
                sink.grew.notify_all();
            }
        });
        let mut server = Self {
            child: Some(child),
            addr: String::new(),
            log,
        };
        let line = server
            .wait_log(Duration::from_secs(20), |l| {
                l.contains("rcud-server listening")
            })
            .expect("the server announces its address");
        server.addr = field(&line, "addr").expect("addr= in the listening line");
        server
    }

    /// `host:port` to connect to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The listener's pid.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// A copy of the log so far.
    pub fn logs(&self) -> Vec<String> {
        self.log.lines.lock().clone()
    }

    /// Waits for a log line matching `pred`.
    pub fn wait_log(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + timeout;
        let mut lines = self.log.lines.lock();
        loop {
            if let Some(l) = lines.iter().find(|l| pred(l)) {
                return Some(l.clone());
            }
            if self.log.grew.wait_until(&mut lines, deadline).timed_out() {
                return lines.iter().find(|l| pred(l)).cloned();
            }
        }
    }

    /// Waits until `n` log lines match `pred`; returns how many do.
    pub fn wait_count(&self, n: usize, timeout: Duration, pred: impl Fn(&str) -> bool) -> usize {
        let deadline = Instant::now() + timeout;
        let mut lines = self.log.lines.lock();
        loop {
            let count = lines.iter().filter(|l| pred(l)).count();
            if count >= n || self.log.grew.wait_until(&mut lines, deadline).timed_out() {
                return lines.iter().filter(|l| pred(l)).count();
            }
        }
    }

    /// The pid of the agent process serving the client whose local port is
    /// `port`, from the listener's log.
    pub fn agent_pid(&self, port: u16) -> u32 {
        let peer = format!("peer=127.0.0.1:{port}");
        let line = self
            .wait_log(Duration::from_secs(10), |l| {
                l.contains("agent process started") && l.contains(&peer)
            })
            .expect("the listener logs the agent it started");
        field(&line, "pid")
            .and_then(|p| p.parse().ok())
            .expect("pid= in the log line")
    }

    /// Child processes of the listener (zombies included) and their states.
    pub fn children(&self) -> Vec<(u32, char)> {
        children_of(self.pid())
    }

    /// Waits until the listener has no child process left, zombies included.
    pub fn wait_no_children(&self, timeout: Duration) -> Vec<(u32, char)> {
        let deadline = Instant::now() + timeout;
        loop {
            let kids = self.children();
            if kids.is_empty() || Instant::now() > deadline {
                return kids;
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `signal` to the listener.
    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid() as i32), signal).expect("signal the server");
    }

    /// Waits for the listener to exit; `None` on timeout.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Prints the server's log (for failing tests).
    pub fn dump_log(&self) {
        for l in self.logs() {
            eprintln!("[server] {l}");
        }
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        if thread::panicking() || std::env::var_os("RCUD_TEST_SERVER_LOG").is_some() {
            self.dump_log();
        }
        if let Some(mut child) = self.child.take() {
            if let Ok(None) = child.try_wait() {
                let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
                let deadline = Instant::now() + Duration::from_secs(15);
                while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(20));
                }
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

/// The value of `name=` in a log line.
pub fn field(line: &str, name: &str) -> Option<String> {
    let key = format!("{name}=");
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&key))
        .map(|v| v.trim_matches('"').to_string())
}

/// Processes whose parent is `parent`, with their states (`Z`: zombie).
pub fn children_of(parent: u32) -> Vec<(u32, char)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold anything, so split
        // after its closing parenthesis.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = fields.next().and_then(|s| s.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push((pid, state));
        }
    }
    out
}

/// Whether process `pid` exists (as anything but a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next())
            .is_some_and(|s| s != "Z"),
        Err(_) => false,
    }
}

/// Why a connection did not come up.
#[derive(Debug)]
pub enum ConnectError {
    /// The server answered the hello with a refusal.
    Refused(String),
    /// Anything else.
    Failed(String),
}

/// A transport failure of a call.
#[derive(Debug)]
pub struct Broken(pub String);

/// One client connection speaking raw frames, over TCP or TLS.
pub struct Conn<S: Link = TcpStream> {
    chan: TcpChannel<S>,
    hello: ServerHello,
    next_id: u32,
    body: Vec<u8>,
    moved: u64,
}

impl Conn {
    /// Connects and performs the handshake without credentials.
    pub fn connect(addr: &str, name: &str) -> Result<Self, ConnectError> {
        Self::connect_as(addr, name, None)
    }

    /// Connects and performs the handshake, proving `credentials`.
    pub fn connect_as(
        addr: &str,
        name: &str,
        credentials: Option<&Credentials>,
    ) -> Result<Self, ConnectError> {
        Self::connect_with(addr, ClientHello::new(name), credentials)
    }

    /// Connects without credentials asking for service class `qos`.
    #[allow(dead_code)]
    pub fn connect_qos(addr: &str, name: &str, qos: &str) -> Result<Self, ConnectError> {
        let mut hello = ClientHello::new(name);
        hello.qos = qos.into();
        Self::connect_with(addr, hello, None)
    }

    fn connect_with(
        addr: &str,
        mut hello: ClientHello,
        credentials: Option<&Credentials>,
    ) -> Result<Self, ConnectError> {
        let fail = |e: std::io::Error| ConnectError::Failed(e.to_string());
        let mut chan = TcpChannel::connect(addr, &TcpOptions::default()).map_err(fail)?;
        let stream = chan.stream();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .map_err(fail)?;
        if let Some(c) = credentials {
            hello.tenant = c.tenant.clone();
        }
        hello.nonce = [7; 32];
        let hello = match handshake::client_exchange(stream, &hello, credentials) {
            Ok(a) => a.hello,
            Err(HandshakeError::Refused(why)) => {
                // The server closes after a refusal.
                let mut rest = [0u8; 16];
                return match stream.read(&mut rest) {
                    Ok(0) => Err(ConnectError::Refused(why)),
                    other => Err(ConnectError::Failed(format!(
                        "refused connection not closed: {other:?}"
                    ))),
                };
            }
            Err(e) => return Err(ConnectError::Failed(e.to_string())),
        };
        // Calls must not hang a test forever.
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(fail)?;
        Ok(Self {
            chan,
            hello,
            next_id: 1,
            body: Vec::new(),
            moved: 0,
        })
    }

    /// Connects, handshakes and attaches to GPU 0; panics on failure.
    pub fn attached(addr: &str, name: &str) -> Self {
        let mut c = Conn::connect(addr, name).unwrap_or_else(|e| panic!("connect: {e:?}"));
        c.attach();
        c
    }

    /// Attaches to GPU 0; panics on failure.
    pub fn attach(&mut self) {
        self.call(&req::Attach { gpu: 0, window: 0 }, &[], &mut [])
            .expect("transport")
            .expect("attach");
    }

    /// Connects over TLS with `credentials`, trusting `tls`.
    pub fn connect_tls(
        addr: &str,
        name: &str,
        credentials: &Credentials,
        tls: &ClientTls,
    ) -> Result<Conn<TlsLink>, ConnectError> {
        let failed = |e: &dyn std::fmt::Display| ConnectError::Failed(e.to_string());
        let mut stream = TcpStream::connect(addr).map_err(|e| failed(&e))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .map_err(|e| failed(&e))?;
        let mut hello = ClientHello::new(name);
        hello.tenant = credentials.tenant.clone();
        hello.tls = true;
        hello.nonce = [9; 32];
        let auth = match handshake::client_exchange(&mut stream, &hello, Some(credentials)) {
            Ok(a) => a,
            Err(HandshakeError::Refused(why)) => return Err(ConnectError::Refused(why)),
            Err(e) => return Err(failed(&e)),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut link = tls
            .connect(stream, addr, deadline)
            .map_err(|e| failed(&e))?;
        let binding = link.channel_binding().map_err(|e| failed(&e))?;
        handshake::client_bind(&mut link, &auth.session_key, &binding).map_err(|e| failed(&e))?;
        let opts = TcpOptions {
            read_timeout: Some(Duration::from_secs(30)),
            ..TcpOptions::default()
        };
        Ok(Conn {
            chan: TcpChannel::from_stream(link, &opts).map_err(|e| failed(&e))?,
            hello: auth.hello,
            next_id: 1,
            body: Vec::new(),
            moved: 0,
        })
    }
}

impl<S: Link> Conn<S> {
    /// What the server said in the handshake.
    pub fn hello(&self) -> &ServerHello {
        &self.hello
    }

    /// The client side's port: the `peer` the server logs.
    pub fn local_port(&mut self) -> u16 {
        self.chan
            .stream()
            .socket()
            .local_addr()
            .expect("local addr")
            .port()
    }

    /// One call with its request and reply payloads.
    pub fn call<O: Op>(
        &mut self,
        req: &O,
        bulk_out: &[u8],
        bulk_in: &mut [u8],
    ) -> Result<Result<O::Reply, Failure>, Broken> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.moved += (bulk_out.len() + bulk_in.len()) as u64;
        self.body.clear();
        req.encode(&mut Writer::new(&mut self.body));
        let header = FrameHeader {
            flags: 0,
            kind: FrameKind::REQUEST,
            op: O::ID.0,
            body_len: self.body.len() as u32,
            id,
            bulk_len: bulk_out.len() as u64,
        };
        let broken = |e: TransportError| Broken(e.to_string());
        self.chan
            .send_frame(&header, &self.body, bulk_out)
            .map_err(broken)?;
        let reply = self.chan.recv_header().map_err(broken)?;
        if reply.kind != FrameKind::REPLY || reply.id != id || reply.op != O::ID.0 {
            return Err(Broken(format!("unexpected reply {reply:?} to {id}")));
        }
        let body = self.chan.recv_body(reply.body_len).map_err(broken)?;
        let result = ops::decode_reply::<O::Reply>(body).map_err(|e| Broken(e.to_string()))?;
        let expected = if result.is_ok() {
            bulk_in.len() as u64
        } else {
            0
        };
        if reply.bulk_len != expected {
            return Err(Broken(format!(
                "reply payload {} bytes, expected {expected}",
                reply.bulk_len
            )));
        }
        if expected > 0 {
            self.chan.recv_bulk_into(bulk_in).map_err(broken)?;
        }
        Ok(result)
    }

    /// Payload bytes sent and received so far.
    pub fn moved(&self) -> u64 {
        self.moved
    }

    /// `cudaMalloc`; panics on any failure.
    pub fn malloc(&mut self, size: u64) -> u64 {
        self.call(&req::Malloc { size }, &[], &mut [])
            .expect("transport")
            .expect("malloc")
            .ptr
    }

    /// `cudaFree`; panics on any failure.
    pub fn free(&mut self, ptr: u64) {
        self.call(&req::Free { ptr }, &[], &mut [])
            .expect("transport")
            .expect("free");
    }

    /// Host-to-device copy; panics on any failure.
    pub fn htod(&mut self, dst: u64, data: &[u8]) {
        let r = req::MemcpyHtoD {
            dst,
            len: data.len() as u64,
        };
        self.call(&r, data, &mut [])
            .expect("transport")
            .expect("memcpy HtoD");
    }

    /// Device-to-host copy; panics on any failure.
    pub fn dtoh(&mut self, src: u64, out: &mut [u8]) {
        let r = req::MemcpyDtoH {
            src,
            len: out.len() as u64,
        };
        self.call(&r, &[], out)
            .expect("transport")
            .expect("memcpy DtoH");
    }

    /// `cudaMemset`; panics on any failure.
    pub fn memset(&mut self, dst: u64, value: u8, len: u64) {
        self.call(&req::Memset { dst, value, len }, &[], &mut [])
            .expect("transport")
            .expect("memset");
    }

    /// `cudaMemGetInfo`: (free, total); panics on any failure.
    pub fn mem_info(&mut self) -> (u64, u64) {
        let r = self
            .call(&req::MemGetInfo {}, &[], &mut [])
            .expect("transport")
            .expect("mem info");
        (r.free, r.total)
    }

    /// Starts a host-to-device copy of `len` bytes, sends only `sent` of
    /// them, then tears the connection down: a client dying mid-transfer.
    pub fn abort_htod(mut self, dst: u64, len: u64, sent: &[u8]) {
        self.body.clear();
        req::MemcpyHtoD { dst, len }.encode(&mut Writer::new(&mut self.body));
        let header = FrameHeader {
            flags: 0,
            kind: FrameKind::REQUEST,
            op: <req::MemcpyHtoD as Op>::ID.0,
            body_len: self.body.len() as u32,
            id: self.next_id,
            bulk_len: len,
        };
        self.chan
            .send_frame(&header, &self.body, sent)
            .expect("send the first part of the payload");
        let _ = self.chan.stream().socket().shutdown(Shutdown::Both);
    }
}

/// xorshift64*: a small deterministic generator for test data and choices.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..hi` (`hi > lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }

    /// `len` pseudo-random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}
