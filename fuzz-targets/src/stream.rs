//! An in-memory byte stream: reads come from a script, writes are kept.

use std::io::{Read, Write};

/// A peer that has said `input` and then closed; what it is told is kept
/// in `output`.
#[derive(Debug)]
pub(crate) struct Script<'a> {
    input: &'a [u8],
    pub(crate) output: Vec<u8>,
}

impl<'a> Script<'a> {
    pub(crate) fn new(input: &'a [u8]) -> Self {
        Self {
            input,
            output: Vec::new(),
        }
    }
}

impl Read for Script<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.input.len());
        let (head, tail) = self.input.split_at(n);
        buf[..n].copy_from_slice(head);
        self.input = tail;
        Ok(n)
    }
}

impl Write for Script<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
