//! Device `printf` output of a real GPU. The driver writes it to the
//! process's standard output at synchronization points, so on its own it
//! would land in the server's log, not at the client. An agent process serves
//! one client: it can point its standard output at an in-memory file and send
//! what accumulates back with each launch reply, as the emulated device does.

use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

use nix::sys::memfd::{memfd_create, MFdFlags};

/// Standard output redirected into an anonymous in-memory file. Writes never
/// block (unlike a pipe that nobody drains during a long kernel).
#[derive(Debug)]
pub(crate) struct StdoutCapture {
    /// Shares its open file description, and so its offset, with descriptor 1.
    file: File,
}

impl StdoutCapture {
    /// Points descriptor 1 at a fresh in-memory file. Anything buffered for
    /// the old standard output is flushed there first.
    pub(crate) fn install() -> io::Result<StdoutCapture> {
        let fd = memfd_create("rcud-device-printf", MFdFlags::MFD_CLOEXEC)?;
        rcud_cuda_driver::flush_c_stdio();
        nix::unistd::dup2_stdout(&fd)?;
        Ok(StdoutCapture {
            file: File::from(fd),
        })
    }

    /// Everything written since the last call. Called once the device is
    /// idle (after a launch completed), when nothing writes concurrently.
    pub(crate) fn take(&self) -> io::Result<Vec<u8>> {
        rcud_cuda_driver::flush_c_stdio();
        let mut file = &self.file;
        let end = file.stream_position()?;
        let mut out = vec![0u8; usize::try_from(end).unwrap_or(0)];
        file.read_exact_at(&mut out, 0)?;
        // Start over, so the file does not grow with the session.
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        Ok(out)
    }
}
