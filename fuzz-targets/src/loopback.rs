//! Connected socket pairs for code that takes a `TcpStream`: real TCP
//! connections on the loopback interface, or, where the code only reads,
//! writes and sets timeouts, the cheaper Unix socket pairs behind a
//! `TcpStream`.

use std::net::{TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::time::Duration;

fn listener() -> &'static TcpListener {
    static LISTENER: OnceLock<TcpListener> = OnceLock::new();
    LISTENER.get_or_init(|| TcpListener::bind("127.0.0.1:0").expect("a loopback port"))
}

/// A connected pair: (the connecting end, the accepted end). Each run of a
/// target makes its own; the listener is shared.
pub(crate) fn pair() -> (TcpStream, TcpStream) {
    let l = listener();
    let near = TcpStream::connect(l.local_addr().expect("address")).expect("connect");
    let (far, _) = l.accept().expect("accept");
    near.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    far.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    (near, far)
}

/// Closes `stream` with a reset rather than a FIN: millions of runs must not
/// leave millions of sockets in TIME_WAIT.
pub(crate) fn close_hard(stream: TcpStream) {
    let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
    drop(stream);
}

/// A connected pair of Unix stream sockets, each behind a `TcpStream`:
/// reads, writes, shutdowns and timeouts behave as on TCP; addresses do
/// not (`peer_addr` fails). Five times cheaper than [`pair`], for code that
/// asks for no address.
pub(crate) fn socket_pair() -> (TcpStream, TcpStream) {
    let (a, b) = UnixStream::pair().expect("a socket pair");
    let wrap = |s: UnixStream| {
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        TcpStream::from(OwnedFd::from(s))
    };
    (wrap(a), wrap(b))
}
