//! Failures of the client below the CUDA API.

use rcud_proto::CudaError;
use thiserror::Error;

/// Why a remote call could not be completed.
#[derive(Debug, Error)]
pub enum ClientError {
    /// The server could not be reached.
    #[error("cannot connect to rcud server {server}: {source}")]
    Connect {
        /// The server address.
        server: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The server refused the handshake.
    #[error("rcud server {server} refused the connection: {message}")]
    Refused {
        /// The server address.
        server: String,
        /// The server's reason.
        message: String,
    },
    /// The connection failed after it was established.
    #[error("connection to rcud server {server} failed: {source}")]
    Transport {
        /// The server address.
        server: String,
        /// The transport's error.
        source: rcud_transport::TransportError,
    },
    /// Authentication or TLS failed, or their settings are wrong.
    #[error("rcud server {server}: {message}")]
    Security {
        /// The server address.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// The connection broke and the session could not be resumed (past
    /// the outage budget, or the server no longer holds it).
    #[error("rcud server {server}: session lost: {message}")]
    SessionLost {
        /// The server address.
        server: String,
        /// Why.
        message: String,
    },
    /// The server sent something this client does not understand.
    #[error("rcud server {server} broke the protocol: {message}")]
    Protocol {
        /// The server address.
        server: String,
        /// What was wrong.
        message: String,
    },
}

impl ClientError {
    /// The CUDA error an application sees for this failure.
    pub fn cuda_error(&self) -> CudaError {
        CudaError::DEVICES_UNAVAILABLE
    }
}
