//! A TCP proxy that breaks connections on purpose, for tests of session
//! resumption: it forwards bytes between clients and a server and, as told,
//! resets both sides once a chosen number of bytes has crossed in one
//! direction (in a handshake, mid-batch, mid-payload), stalls a direction
//! for a while, or refuses every connection for an outage.
//!
//! A cut resets the connections (`SO_LINGER` 0, no FIN), as a network that
//! gave up or a middlebox would; a FIN would tell the server its client
//! left.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// Which way bytes go through the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the client to the server.
    Up = 0,
    /// From the server to the client.
    Down = 1,
}

/// What the proxy does once `after` more bytes crossed in `direction`,
/// counted from when the fault was armed, over all connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// The direction whose bytes are counted.
    pub direction: Direction,
    /// Bytes forwarded before the fault strikes.
    pub after: u64,
    /// What happens then.
    pub action: Action,
}

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Resets every connection through the proxy.
    Cut,
    /// Forwards nothing in that direction for this long, then goes on.
    Stall(Duration),
    /// Resets every connection and refuses new ones for this long.
    Outage(Duration),
}

#[derive(Debug, Default)]
struct State {
    /// Faults still to strike, in order.
    faults: VecDeque<Fault>,
    /// Bytes forwarded in each direction since the front fault was armed.
    counted: [u64; 2],
    /// New connections are reset until then.
    down_until: Option<Instant>,
    /// Cuts every `n` bytes in a direction, as many times as left.
    every: Option<(Direction, u64, u32)>,
    /// Connection generation: bumping it cuts every live connection.
    generation: u64,
    /// The next cut resets the clients' side only: the server's side stays
    /// open and silent, as when a network breaks nearer the client.
    client_side_only: bool,
    /// Server-side sockets of connections cut on the client's side only,
    /// held open until the proxy stops.
    orphans: Vec<TcpStream>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    stop: AtomicBool,
    cuts: AtomicU64,
    connections: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running fault-injecting proxy; it stops when dropped.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

/// How long a pump waits in a read before it looks at the proxy's state.
const POLL: Duration = Duration::from_millis(20);

impl FaultProxy {
    /// Listens on a free loopback port and forwards every connection to
    /// `upstream`.
    pub fn start(upstream: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let accept = shared.clone();
        thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || accept_loop(listener, upstream, accept))?;
        Ok(Self { addr, shared })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Arms `fault` after those armed before it.
    pub fn arm(&self, fault: Fault) {
        let mut st = self.shared.lock();
        if st.faults.is_empty() {
            st.counted = [0, 0];
        }
        st.faults.push_back(fault);
    }

    /// Cuts every connection each time `bytes` more bytes crossed in
    /// `direction`, `times` times.
    pub fn cut_every(&self, direction: Direction, bytes: u64, times: u32) {
        let mut st = self.shared.lock();
        st.counted = [0, 0];
        st.every = Some((direction, bytes.max(1), times));
    }

    /// Resets every connection now.
    pub fn cut_now(&self) {
        self.shared.lock().generation += 1;
        self.shared.cuts.fetch_add(1, Ordering::Relaxed);
    }

    /// Resets the clients' side of every connection now and leaves the
    /// server's side open and silent: the server does not see the break.
    pub fn cut_client_side_now(&self) {
        let mut st = self.shared.lock();
        st.client_side_only = true;
        st.generation += 1;
        self.shared.cuts.fetch_add(1, Ordering::Relaxed);
    }

    /// Resets every connection and refuses new ones for `duration`.
    pub fn outage(&self, duration: Duration) {
        let mut st = self.shared.lock();
        st.down_until = Some(Instant::now() + duration);
        st.generation += 1;
        self.shared.cuts.fetch_add(1, Ordering::Relaxed);
    }

    /// Connections cut so far.
    pub fn cuts(&self) -> u64 {
        self.shared.cuts.load(Ordering::Relaxed)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// Whether every armed fault has struck.
    pub fn idle(&self) -> bool {
        let st = self.shared.lock();
        st.faults.is_empty() && st.every.is_none_or(|(_, _, left)| left == 0)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.lock().generation += 1;
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn reset(stream: &TcpStream) {
    let _ = socket2::SockRef::from(stream).set_linger(Some(Duration::ZERO));
}

fn accept_loop(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>) {
    for client in listener.incoming() {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(client) = client else { continue };
        let down = shared
            .lock()
            .down_until
            .is_some_and(|until| Instant::now() < until);
        if down {
            // No route: the connection is reset at once.
            reset(&client);
            continue;
        }
        let Ok(server) = TcpStream::connect(upstream) else {
            reset(&client);
            continue;
        };
        shared.connections.fetch_add(1, Ordering::Relaxed);
        let generation = shared.lock().generation;
        for s in [&client, &server] {
            let _ = s.set_nodelay(true);
            let _ = s.set_read_timeout(Some(POLL));
            reset(s);
        }
        let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
            continue;
        };
        let up = shared.clone();
        let down = shared.clone();
        let _ = thread::Builder::new()
            .name("fault-proxy-up".into())
            .spawn(move || pump(client, server, Direction::Up, generation, up));
        let _ = thread::Builder::new()
            .name("fault-proxy-down".into())
            .spawn(move || pump(server2, client2, Direction::Down, generation, down));
    }
}

/// What the state says about the next `n` bytes of one direction.
enum Verdict {
    /// Forward this many, then look again.
    Forward(usize),
    /// Forward this many, then cut.
    CutAfter(usize),
    /// Forward this many, then wait this long.
    StallAfter(usize, Duration),
}

fn judge(shared: &Shared, dir: Direction, n: usize) -> Verdict {
    let mut st = shared.lock();
    let d = dir as usize;
    let counted = st.counted[d];
    if let Some(f) = st.faults.front().copied() {
        if f.direction == dir && counted + n as u64 >= f.after {
            let k = f.after.saturating_sub(counted) as usize;
            st.faults.pop_front();
            st.counted = [0, 0];
            return match f.action {
                Action::Cut => {
                    st.generation += 1;
                    shared.cuts.fetch_add(1, Ordering::Relaxed);
                    Verdict::CutAfter(k)
                }
                Action::Outage(t) => {
                    st.generation += 1;
                    st.down_until = Some(Instant::now() + t);
                    shared.cuts.fetch_add(1, Ordering::Relaxed);
                    Verdict::CutAfter(k)
                }
                Action::Stall(t) => Verdict::StallAfter(k, t),
            };
        }
    }
    if let Some((every_dir, bytes, left)) = st.every {
        if left > 0 && every_dir == dir && counted + n as u64 >= bytes {
            let k = bytes.saturating_sub(counted) as usize;
            st.every = Some((every_dir, bytes, left - 1));
            st.counted = [0, 0];
            st.generation += 1;
            shared.cuts.fetch_add(1, Ordering::Relaxed);
            return Verdict::CutAfter(k);
        }
    }
    st.counted[d] += n as u64;
    Verdict::Forward(n)
}

/// Forwards bytes from `from` to `to` until the connection ends or is cut.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    dir: Direction,
    generation: u64,
    shared: Arc<Shared>,
) {
    let mut buf = vec![0u8; 64 << 10];
    let live = |shared: &Shared| shared.lock().generation == generation;
    // Dropping both ends with SO_LINGER 0 resets them; on a cut of the
    // clients' side only, the server's end is kept open instead.
    let hold_server_side = |from: TcpStream, to: TcpStream| {
        let mut st = shared.lock();
        if st.client_side_only {
            let server = if dir == Direction::Up { to } else { from };
            st.orphans.push(server);
        }
    };
    loop {
        if !live(&shared) {
            hold_server_side(from, to);
            return;
        }
        let n = match from.read(&mut buf) {
            Ok(0) => {
                // The peer closed: pass the close on.
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(_) => {
                shared.lock().generation += 1;
                return;
            }
        };
        if !live(&shared) {
            hold_server_side(from, to);
            return;
        }
        let (k, then) = match judge(&shared, dir, n) {
            Verdict::Forward(k) => (k, None),
            Verdict::CutAfter(k) => (k, Some(None)),
            Verdict::StallAfter(k, t) => (k, Some(Some(t))),
        };
        if to.write_all(&buf[..k]).is_err() {
            shared.lock().generation += 1;
            return;
        }
        match then {
            None => {}
            Some(None) => return,
            Some(Some(stall)) => {
                let _ = to.flush();
                thread::sleep(stall);
                if to.write_all(&buf[k..n]).is_err() {
                    shared.lock().generation += 1;
                    return;
                }
            }
        }
    }
}
