//! Proofs of a shared secret for the handshake's challenge–response.
//!
//! Both ends draw a random nonce; each proves it knows the tenant's secret by
//! an HMAC-SHA-256 over both nonces, the tenant's name and its role, so a
//! proof can be neither replayed on another connection nor reflected back to
//! its sender. The secret itself never crosses the wire. After a TLS
//! handshake the client also proves the session key over the TLS session's
//! channel binding ([`binding_proof`]), which ties the authentication to that TLS
//! session: a man in the middle that relayed the challenge–response cannot
//! use it on a TLS session of its own.

use hmac::{KeyInit, Mac};
use sha2::Sha256;
use thiserror::Error;

type HmacSha256 = hmac::Hmac<Sha256>;

/// Length of nonces, proofs and session keys.
pub const PROOF_LEN: usize = 32;

/// Shortest secret accepted (bytes): the proofs travel in clear without
/// TLS, so a secret must resist an offline guessing attack.
pub const MIN_SECRET_LEN: usize = 16;

/// Label hashed into the TLS channel binding that [`binding_proof`] covers.
pub const TLS_BINDING_LABEL: &[u8] = b"rcud TLS 1.3 channel binding v2";

/// A tenant's name and secret, as a client presents them.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The tenant's name, as in the server's tenant file.
    pub tenant: String,
    /// The shared secret.
    pub secret: Vec<u8>,
}

/// A token that is not `tenant:secret`.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CredentialsError {
    /// No colon, or nothing before it.
    #[error("expected `tenant:secret`")]
    Format,
    /// A tenant name outside `[A-Za-z0-9._-]`, or longer than 64 bytes.
    #[error("tenant name `{0}` must be 1 to 64 of A-Z a-z 0-9 . _ -")]
    Tenant(String),
    /// A secret shorter than [`MIN_SECRET_LEN`].
    #[error("the secret of tenant `{0}` is shorter than {MIN_SECRET_LEN} bytes")]
    ShortSecret(String),
}

impl Credentials {
    /// Parses the content of a token file: `tenant:secret`, surrounding
    /// whitespace ignored.
    pub fn parse(token: &str) -> Result<Self, CredentialsError> {
        let (tenant, secret) = token
            .trim()
            .split_once(':')
            .ok_or(CredentialsError::Format)?;
        validate_tenant(tenant)?;
        validate_secret(tenant, secret.as_bytes())?;
        Ok(Self {
            tenant: tenant.into(),
            secret: secret.as_bytes().to_vec(),
        })
    }
}

/// Checks a tenant's name.
pub fn validate_tenant(tenant: &str) -> Result<(), CredentialsError> {
    let ok = !tenant.is_empty()
        && tenant.len() <= 64
        && tenant
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(CredentialsError::Tenant(tenant.escape_debug().to_string()))
    }
}

/// Checks a tenant's secret.
pub fn validate_secret(tenant: &str, secret: &[u8]) -> Result<(), CredentialsError> {
    if secret.len() < MIN_SECRET_LEN {
        return Err(CredentialsError::ShortSecret(tenant.into()));
    }
    Ok(())
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("tenant", &self.tenant)
            .field("secret", &"<hidden>")
            .finish()
    }
}

/// Who produced a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The client proves itself to the server.
    Client,
    /// The server proves itself to the client.
    Server,
}

fn mac(key: &[u8], parts: &[&[u8]]) -> HmacSha256 {
    // HMAC takes keys of any length.
    let mut m = <HmacSha256 as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    for p in parts {
        // Length-prefixed, so no two different part lists hash alike.
        m.update(&(p.len() as u32).to_le_bytes());
        m.update(p);
    }
    m
}

fn role_label(role: Role) -> &'static [u8] {
    match role {
        Role::Client => b"rcud-auth-v1 client",
        Role::Server => b"rcud-auth-v1 server",
    }
}

/// The proof `role` sends for `tenant` on the connection with these nonces.
pub fn proof(
    secret: &[u8],
    role: Role,
    tenant: &str,
    client_nonce: &[u8; PROOF_LEN],
    server_nonce: &[u8; PROOF_LEN],
) -> [u8; PROOF_LEN] {
    mac(
        secret,
        &[
            role_label(role),
            tenant.as_bytes(),
            client_nonce,
            server_nonce,
        ],
    )
    .finalize()
    .into_bytes()
    .into()
}

/// Checks a proof in constant time.
pub fn verify_proof(
    secret: &[u8],
    role: Role,
    tenant: &str,
    client_nonce: &[u8; PROOF_LEN],
    server_nonce: &[u8; PROOF_LEN],
    candidate: &[u8; PROOF_LEN],
) -> bool {
    mac(
        secret,
        &[
            role_label(role),
            tenant.as_bytes(),
            client_nonce,
            server_nonce,
        ],
    )
    .verify_slice(candidate)
    .is_ok()
}

/// The key both ends derive for the connection once authenticated; the
/// agent that serves the client gets it from the listener.
pub fn session_key(
    secret: &[u8],
    tenant: &str,
    client_nonce: &[u8; PROOF_LEN],
    server_nonce: &[u8; PROOF_LEN],
) -> [u8; PROOF_LEN] {
    mac(
        secret,
        &[
            b"rcud-session-v1",
            tenant.as_bytes(),
            client_nonce,
            server_nonce,
        ],
    )
    .finalize()
    .into_bytes()
    .into()
}

fn resume_mac(secret: &[u8; PROOF_LEN], session_key: &[u8; PROOF_LEN]) -> HmacSha256 {
    mac(secret, &[b"rcud-resume-v1", session_key])
}

/// The client's proof that it owns the session it resumes: a MAC of the new
/// connection's session key (fresh nonces, so a proof cannot be replayed)
/// under the secret the session was opened with.
pub fn resume_proof(secret: &[u8; PROOF_LEN], session_key: &[u8; PROOF_LEN]) -> [u8; PROOF_LEN] {
    resume_mac(secret, session_key)
        .finalize()
        .into_bytes()
        .into()
}

/// Checks a resume proof in constant time.
pub fn verify_resume(
    secret: &[u8; PROOF_LEN],
    session_key: &[u8; PROOF_LEN],
    candidate: &[u8; PROOF_LEN],
) -> bool {
    resume_mac(secret, session_key)
        .verify_slice(candidate)
        .is_ok()
}

fn binding_mac(session_key: &[u8; PROOF_LEN], binding: &[u8]) -> HmacSha256 {
    mac(session_key, &[b"rcud-binding-v2", binding])
}

/// The client's proof, inside TLS, that the TLS session is its own: a MAC of
/// the session's channel binding under the session key.
pub fn binding_proof(session_key: &[u8; PROOF_LEN], binding: &[u8]) -> [u8; PROOF_LEN] {
    binding_mac(session_key, binding)
        .finalize()
        .into_bytes()
        .into()
}

/// Checks a binding proof in constant time.
pub fn verify_binding(
    session_key: &[u8; PROOF_LEN],
    binding: &[u8],
    candidate: &[u8; PROOF_LEN],
) -> bool {
    binding_mac(session_key, binding)
        .verify_slice(candidate)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CN: [u8; 32] = [1; 32];
    const SN: [u8; 32] = [2; 32];

    #[test]
    fn proofs_verify_only_with_the_same_secret_role_tenant_and_nonces() {
        let p = proof(b"0123456789abcdef", Role::Client, "alice", &CN, &SN);
        assert!(verify_proof(
            b"0123456789abcdef",
            Role::Client,
            "alice",
            &CN,
            &SN,
            &p
        ));
        assert!(!verify_proof(
            b"0123456789abcdeX",
            Role::Client,
            "alice",
            &CN,
            &SN,
            &p
        ));
        // A client's proof reflected back as the server's fails.
        assert!(!verify_proof(
            b"0123456789abcdef",
            Role::Server,
            "alice",
            &CN,
            &SN,
            &p
        ));
        assert!(!verify_proof(
            b"0123456789abcdef",
            Role::Client,
            "bob",
            &CN,
            &SN,
            &p
        ));
        assert!(!verify_proof(
            b"0123456789abcdef",
            Role::Client,
            "alice",
            &SN,
            &CN,
            &p
        ));
    }

    #[test]
    fn binding_depends_on_the_key_and_the_tls_session() {
        let k = session_key(b"0123456789abcdef", "alice", &CN, &SN);
        let b = binding_proof(&k, b"binding A");
        assert!(verify_binding(&k, b"binding A", &b));
        assert!(!verify_binding(&k, b"binding B", &b));
        let other = session_key(b"0123456789abcdef", "alice", &SN, &CN);
        assert!(!verify_binding(&other, b"binding A", &b));
    }

    #[test]
    fn tokens_parse_and_bad_ones_say_why() {
        let c = Credentials::parse(" alice:0123456789abcdef:x\n").unwrap();
        assert_eq!(c.tenant, "alice");
        assert_eq!(c.secret, b"0123456789abcdef:x");
        assert!(!format!("{c:?}").contains("0123"));
        assert_eq!(Credentials::parse("alice"), Err(CredentialsError::Format));
        assert!(matches!(
            Credentials::parse("al ice:0123456789abcdef"),
            Err(CredentialsError::Tenant(_))
        ));
        assert_eq!(
            Credentials::parse("alice:short"),
            Err(CredentialsError::ShortSecret("alice".into()))
        );
    }
}
