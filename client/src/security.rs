//! The client's credentials and TLS settings, from the environment.
//!
//! - `RCUD_TOKEN_FILE`: a file holding `tenant:secret` (what `rcud run
//!   --token-file` sets); `RCUD_TOKEN`: the same text directly (what `rcud
//!   run` sets for its embedded server's one-time tenant).
//! - `RCUD_TLS_CA`: PEM file of the CA that signed the server's certificate;
//!   or `RCUD_TLS_PIN`: the SHA-256 fingerprint of the server's certificate.

use std::sync::OnceLock;

use rcud_proto::auth::Credentials;
use rcud_transport::tls::{ClientTls, Trust};

/// How a client proves who it is and checks the server.
#[derive(Debug, Clone, Default)]
pub struct Security {
    /// The tenant and its secret; `None`: no proof (servers without tenants).
    pub credentials: Option<Credentials>,
    /// TLS settings; `None`: plain TCP.
    pub tls: Option<ClientTls>,
    /// The service class asked for (`RCUD_QOS`); empty: the tenant's.
    pub qos: String,
}

impl Security {
    /// The settings of this process's environment, read once.
    pub fn from_env() -> Result<&'static Security, String> {
        static SETTINGS: OnceLock<Result<Security, String>> = OnceLock::new();
        SETTINGS
            .get_or_init(Self::read_env)
            .as_ref()
            .map_err(Clone::clone)
    }

    fn read_env() -> Result<Security, String> {
        let token = match (
            std::env::var_os("RCUD_TOKEN_FILE"),
            std::env::var("RCUD_TOKEN"),
        ) {
            (Some(path), _) => Some(
                std::fs::read_to_string(&path)
                    .map_err(|e| format!("RCUD_TOKEN_FILE {}: {e}", path.to_string_lossy()))?,
            ),
            (None, Ok(token)) => Some(token),
            (None, Err(_)) => None,
        };
        let credentials = token
            .map(|t| Credentials::parse(&t).map_err(|e| format!("the rcud token: {e}")))
            .transpose()?;
        let tls = Trust::from_env()
            .and_then(|trust| trust.map(|t| ClientTls::new(&t)).transpose())
            .map_err(|e| e.to_string())?;
        let qos = std::env::var("RCUD_QOS").unwrap_or_default();
        Ok(Security {
            credentials,
            tls,
            qos,
        })
    }
}
