//! A server embedded in a tool (`rcud run`, `rcud info`, `rcud bench`):
//! on a free loopback port, on background threads, admitting only the
//! programs the tool hands a one-time token, so that other users of the
//! machine cannot use it.

use std::sync::Arc;

use rcud_transport::tls::ServerTls;
use thiserror::Error;

use crate::backend::{BackendKind, EmuSettings};
use crate::gate::Policy;
use crate::tenants::Tenants;
use crate::{select_backend, Server, ServerHandle};

/// The embedded server's one tenant.
const LOCAL_TENANT: &str = "local";

/// Why the embedded server did not start.
#[derive(Debug, Error)]
#[error("cannot start the embedded server: {0}")]
pub struct EmbeddedError(String);

/// The one-time credentials of an embedded server: a tenant whose random
/// secret only the programs the tool starts are given.
pub struct LocalToken {
    secret: String,
}

impl LocalToken {
    /// A fresh random secret.
    pub fn generate() -> Result<Self, EmbeddedError> {
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw).map_err(|e| EmbeddedError(format!("random source: {e}")))?;
        Ok(Self {
            secret: raw.iter().map(|b| format!("{b:02x}")).collect(),
        })
    }

    /// The value of `RCUD_TOKEN` that proves it.
    pub fn as_env(&self) -> String {
        format!("{LOCAL_TENANT}:{}", self.secret)
    }

    /// Makes this process's own client use the token. Call before any
    /// thread is started: it changes the environment.
    pub fn export_here(&self) {
        std::env::set_var("RCUD_TOKEN", self.as_env());
        std::env::remove_var("RCUD_TOKEN_FILE");
        std::env::remove_var("RCUD_TLS_CA");
        std::env::remove_var("RCUD_TLS_PIN");
    }
}

/// A server on a free loopback port that admits the holders of `token`
/// only, over TLS with `tls`.
pub fn spawn(
    backend: BackendKind,
    emu: &EmuSettings,
    token: &LocalToken,
    tls: Option<ServerTls>,
) -> Result<ServerHandle, EmbeddedError> {
    let failed = |e: &dyn std::fmt::Display| EmbeddedError(e.to_string());
    let tenants = Tenants::single(LOCAL_TENANT, token.secret.as_bytes()).map_err(|e| failed(&e))?;
    let backend = select_backend(backend, emu).map_err(|e| failed(&e))?;
    let server = Server::bind("127.0.0.1:0", backend)
        .map_err(|e| failed(&e))?
        .with_policy(Policy {
            tenants: Some(Arc::new(tenants)),
            ..Policy::default()
        });
    let server = match tls {
        Some(tls) => server.with_tls(tls),
        None => server,
    };
    server.spawn().map_err(|e| failed(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fresh_and_name_the_local_tenant() {
        let (a, b) = (LocalToken::generate(), LocalToken::generate());
        let (a, b) = (a.map(|t| t.as_env()), b.map(|t| t.as_env()));
        let (Ok(a), Ok(b)) = (a, b) else {
            panic!("no random source")
        };
        assert_ne!(a, b);
        assert!(
            a.starts_with("local:") && a.len() == "local:".len() + 64,
            "{a}"
        );
    }
}
