//! Device memory of the server's own in a client's context: the scratch
//! space NVIDIA's math libraries want for a call (cuSOLVER's and
//! cuSPARSE's buffers, cuBLASLt's workspace), which rcud's wire protocol
//! does not carry because the client's workspace is a client-side notion.

use std::fmt;
use std::sync::Arc;

use crate::{Context, CtxInner, DriverError};

/// A device buffer that grows to the largest size asked of it and is freed
/// with it. Every use of it is complete when the call that used it returns
/// (the backend waits for the context's stream), so growing may free the
/// old buffer at once.
pub struct Workspace {
    ctx: Arc<CtxInner>,
    ptr: u64,
    len: u64,
}

impl fmt::Debug for Workspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workspace")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl Workspace {
    /// An empty workspace in `ctx`; nothing is allocated until asked.
    pub fn new(ctx: &Context) -> Self {
        Self {
            ctx: ctx.inner.clone(),
            ptr: 0,
            len: 0,
        }
    }

    /// The address of at least `len` bytes (0 when `len` is 0).
    pub fn at_least(&mut self, len: u64) -> Result<u64, DriverError> {
        if len == 0 || len <= self.len {
            return Ok(self.ptr);
        }
        let ctx = Context {
            inner: self.ctx.clone(),
        };
        self.release(&ctx);
        self.ptr = ctx.alloc(len)?;
        self.len = len;
        Ok(self.ptr)
    }

    /// The bytes held now.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn release(&mut self, ctx: &Context) {
        if self.len != 0 {
            if let Err(e) = ctx.free(self.ptr) {
                tracing::warn!("freeing a math library workspace: {e}");
            }
            self.ptr = 0;
            self.len = 0;
        }
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let ctx = Context {
            inner: self.ctx.clone(),
        };
        self.release(&ctx);
    }
}
