//! Descriptors passed between the processes of one server: the listener
//! hands a resumed client's new connection to the agent process that holds
//! its session, with a message about it, over a datagram socket pair.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};

/// Largest message that travels with a descriptor.
pub const MAX_MESSAGE: usize = 16 << 10;

/// Sends `message` and a duplicate of `fd` as one datagram.
pub fn send_fd(socket: &UnixDatagram, message: &[u8], fd: BorrowedFd<'_>) -> io::Result<()> {
    if message.len() > MAX_MESSAGE {
        return Err(io::Error::other(
            "message too long to pass with a descriptor",
        ));
    }
    let fds = [fd.as_raw_fd()];
    let sent = sendmsg::<()>(
        socket.as_fd().as_raw_fd(),
        &[IoSlice::new(message)],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::MSG_NOSIGNAL,
        None,
    )
    .map_err(io::Error::from)?;
    if sent != message.len() {
        return Err(io::Error::other("message cut short"));
    }
    Ok(())
}

/// Waits up to `timeout` for a datagram from [`send_fd`]: its message and
/// its descriptor. `Ok(None)`: nothing came in time.
pub fn recv_fd(socket: &UnixDatagram, timeout: Duration) -> io::Result<Option<(Vec<u8>, OwnedFd)>> {
    socket.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    let mut space = nix::cmsg_space!([RawFd; 4]);
    let (len, fds) = {
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = match recvmsg::<()>(
            socket.as_fd().as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(m) => m,
            Err(nix::errno::Errno::EAGAIN) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let mut fds = Vec::new();
        for c in msg.cmsgs().map_err(io::Error::from)? {
            if let ControlMessageOwned::ScmRights(received) = c {
                fds.extend(received);
            }
        }
        (msg.bytes, fds)
    };
    // SAFETY: the kernel just installed these descriptors in this process
    // for this message; nothing else owns them.
    let mut owned: Vec<OwnedFd> = fds
        .into_iter()
        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
        .collect();
    if owned.len() != 1 {
        return Err(io::Error::other(format!(
            "expected one descriptor with the message, got {}",
            owned.len()
        )));
    }
    buf.truncate(len);
    Ok(owned.pop().map(|fd| (buf, fd)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_descriptor_and_its_message_cross_a_socket_pair() {
        let (a, b) = UnixDatagram::pair().unwrap();
        let (mut left, right) = std::os::unix::net::UnixStream::pair().unwrap();
        send_fd(&a, b"hello", right.as_fd()).unwrap();
        drop(right);
        let (message, fd) = recv_fd(&b, Duration::from_secs(1)).unwrap().unwrap();
        assert_eq!(message, b"hello");
        let mut got = std::os::unix::net::UnixStream::from(fd);
        left.write_all(b"ping").unwrap();
        let mut buf = [0u8; 4];
        got.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ping");
        assert!(recv_fd(&b, Duration::from_millis(10)).unwrap().is_none());
        // A message without a descriptor is refused, not trusted.
        a.send(b"no descriptor").unwrap();
        assert!(recv_fd(&b, Duration::from_millis(10)).is_err());
    }
}
