//! Tenants: who may use the server, with which secret, within which limits.
//!
//! `rcud-server --auth-file tenants.toml` reads one table per tenant:
//!
//! ```toml
//! [tenants.alice]
//! secret = "a long random string"   # at least 16 bytes
//! memory = "4GiB"                   # device memory over all its GPUs
//! max_connections = 8               # connections (one per GPU) at once
//! max_allocations = 100000          # per connection
//! max_modules = 1024                # per connection
//! max_functions = 65536             # per connection
//! module_memory = "1GiB"            # parsed device code, per connection
//! qos = "class=db,bandwidth=2GB/s"  # service class (with --qos-link)
//! ```
//!
//! Every limit is optional; an absent one takes the server's default
//! ([`ResourceLimits::default`]). Streams and events live in the client
//! library: the server holds nothing per stream or event, so they need no
//! limit here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytesize::ByteSize;
use rcud_proto::auth;
use serde::Deserialize;
use thiserror::Error;

/// What one client connection may hold on the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLimits {
    /// Device memory over all the tenant's connections, each allocation
    /// counted with its overhead; `None`: the device's own.
    pub memory: Option<u64>,
    /// Live allocations (`cudaMalloc` and module variables).
    pub allocations: u64,
    /// Loaded modules.
    pub modules: u32,
    /// Functions looked up (`cuModuleGetFunction`).
    pub functions: u32,
    /// Parsed device code, estimated in bytes.
    pub module_memory: u64,
    /// Connections of the tenant at once.
    pub connections: u32,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            memory: None,
            allocations: 1 << 20,
            modules: 1 << 14,
            functions: 1 << 18,
            module_memory: 4 << 30,
            connections: 64,
        }
    }
}

/// One tenant.
#[derive(Clone, PartialEq, Eq)]
pub struct Tenant {
    /// Its name.
    pub name: String,
    secret: Vec<u8>,
    /// Its limits.
    pub limits: ResourceLimits,
    /// Its service class, checked when read (`None`: best effort).
    qos: Option<String>,
}

impl Tenant {
    /// Its service class: what its connections get, and the most their
    /// clients may ask for.
    pub fn qos(&self) -> Option<rcud_qos::service::ServiceRequest> {
        self.qos.as_deref().and_then(|q| q.parse().ok())
    }

    /// The shared secret (never logged).
    pub fn secret(&self) -> &[u8] {
        &self.secret
    }
}

impl std::fmt::Debug for Tenant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tenant")
            .field("name", &self.name)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// The tenants of a server.
#[derive(Debug, Clone, Default)]
pub struct Tenants {
    by_name: BTreeMap<String, Arc<Tenant>>,
    /// Where they were read from, handed on to agent processes.
    path: Option<PathBuf>,
}

/// A tenant file that cannot be used.
#[derive(Debug, Error)]
pub enum TenantFileError {
    /// Unreadable.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not TOML of the expected shape.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A tenant with a bad name or secret.
    #[error("{path}: {source}")]
    Tenant {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: auth::CredentialsError,
    },
    /// No tenant at all: the server would refuse everyone.
    #[error("{0}: no [tenants.NAME] table")]
    Empty(PathBuf),
    /// A service class that cannot be read.
    #[error("{path}: tenant `{tenant}`: qos: {message}")]
    Qos {
        /// The file.
        path: PathBuf,
        /// The tenant.
        tenant: String,
        /// What is wrong.
        message: String,
    },
    /// Readable by other users: their secrets are not secret.
    #[error("{0}: readable by other users (chmod 600 it)")]
    Permissions(PathBuf),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    tenants: BTreeMap<String, Entry>,
}

/// The tenants of a server configuration file, whose other keys
/// [`crate::config`] checks.
#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    tenants: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    secret: String,
    memory: Option<ByteSize>,
    max_connections: Option<u32>,
    max_allocations: Option<u64>,
    max_modules: Option<u32>,
    max_functions: Option<u32>,
    module_memory: Option<ByteSize>,
    qos: Option<String>,
}

impl Tenants {
    /// Reads a tenant file.
    pub fn load(path: &Path) -> Result<Self, TenantFileError> {
        Self::load_as(path, false)
    }

    /// Reads the `[tenants.NAME]` tables of a server configuration file
    /// (`rcud-server --config`), whose other keys are not tenants'.
    pub fn load_config(path: &Path) -> Result<Self, TenantFileError> {
        Self::load_as(path, true)
    }

    fn load_as(path: &Path, config: bool) -> Result<Self, TenantFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TenantFileError::Read {
            path: path.into(),
            source,
        })?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path)
                .map_err(|source| TenantFileError::Read {
                    path: path.into(),
                    source,
                })?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                return Err(TenantFileError::Permissions(path.into()));
            }
        }
        let mut tenants = if config {
            Self::parse_config(&text, path)?
        } else {
            Self::parse(&text, path)?
        };
        tenants.path = Some(path.into());
        Ok(tenants)
    }

    /// Parses the text of a tenant file (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Self, TenantFileError> {
        let file: File = toml::from_str(text).map_err(|e| TenantFileError::Parse {
            path: path.into(),
            message: e.to_string(),
        })?;
        Self::from_entries(file.tenants, path)
    }

    /// Parses the tenants of the text of a server configuration file.
    pub fn parse_config(text: &str, path: &Path) -> Result<Self, TenantFileError> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| TenantFileError::Parse {
            path: path.into(),
            message: e.to_string(),
        })?;
        Self::from_entries(file.tenants, path)
    }

    fn from_entries(
        entries: BTreeMap<String, Entry>,
        path: &Path,
    ) -> Result<Self, TenantFileError> {
        if entries.is_empty() {
            return Err(TenantFileError::Empty(path.into()));
        }
        let defaults = ResourceLimits::default();
        let mut by_name = BTreeMap::new();
        for (name, e) in entries {
            let bad = |source| TenantFileError::Tenant {
                path: path.into(),
                source,
            };
            auth::validate_tenant(&name).map_err(bad)?;
            auth::validate_secret(&name, e.secret.as_bytes()).map_err(bad)?;
            let limits = ResourceLimits {
                memory: e.memory.map(|m| m.as_u64()),
                allocations: e.max_allocations.unwrap_or(defaults.allocations),
                modules: e.max_modules.unwrap_or(defaults.modules),
                functions: e.max_functions.unwrap_or(defaults.functions),
                module_memory: e
                    .module_memory
                    .map_or(defaults.module_memory, |m| m.as_u64()),
                connections: e.max_connections.unwrap_or(defaults.connections),
            };
            let qos = e
                .qos
                .map(|q| {
                    q.parse::<rcud_qos::service::ServiceRequest>()
                        .map(|r| r.to_string())
                        .map_err(|err| TenantFileError::Qos {
                            path: path.into(),
                            tenant: name.clone(),
                            message: err.to_string(),
                        })
                })
                .transpose()?;
            by_name.insert(
                name.clone(),
                Arc::new(Tenant {
                    name,
                    secret: e.secret.into_bytes(),
                    limits,
                    qos,
                }),
            );
        }
        Ok(Self {
            by_name,
            path: None,
        })
    }

    /// One tenant with the default limits (an embedded server's).
    pub fn single(name: &str, secret: &[u8]) -> Result<Self, auth::CredentialsError> {
        auth::validate_tenant(name)?;
        auth::validate_secret(name, secret)?;
        let tenant = Tenant {
            name: name.into(),
            secret: secret.to_vec(),
            limits: ResourceLimits::default(),
            qos: None,
        };
        Ok(Self {
            by_name: BTreeMap::from([(name.to_string(), Arc::new(tenant))]),
            path: None,
        })
    }

    /// The position of tenant `name` in name order (the same in the
    /// listener and in agent processes, which read the same file).
    pub fn index_of(&self, name: &str) -> Option<u32> {
        self.by_name
            .keys()
            .position(|n| n == name)
            .and_then(|i| u32::try_from(i).ok())
    }

    /// Whether some tenant has a `memory` limit.
    pub fn any_memory_limit(&self) -> bool {
        self.by_name.values().any(|t| t.limits.memory.is_some())
    }

    /// A tenant by name.
    pub fn get(&self, name: &str) -> Option<&Arc<Tenant>> {
        self.by_name.get(name)
    }

    /// Number of tenants.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether there are none (never, once loaded).
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The file they came from.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The tenants' names, in name order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_parse_with_defaults_and_limits() {
        let t = Tenants::parse(
            r#"
            [tenants.alice]
            secret = "0123456789abcdef0123"
            memory = "4GiB"
            max_allocations = 10
            [tenants.bob]
            secret = "fedcba9876543210fedc"
            "#,
            Path::new("t.toml"),
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        let alice = t.get("alice").unwrap();
        assert_eq!(alice.secret(), b"0123456789abcdef0123");
        assert_eq!(alice.limits.memory, Some(4 << 30));
        assert_eq!(alice.limits.allocations, 10);
        assert_eq!(t.get("bob").unwrap().limits, ResourceLimits::default());
        assert!(!format!("{alice:?}").contains("0123"));
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let err = |text: &str| {
            Tenants::parse(text, Path::new("t.toml"))
                .unwrap_err()
                .to_string()
        };
        assert!(err("").contains("no [tenants.NAME]"));
        assert!(err("[tenants.a]\nsecret = \"short\"").contains("shorter than 16"));
        assert!(err("[tenants.a]\nsecret = \"0123456789abcdef\"\nmemroy = 1").contains("memroy"));
        assert!(err("[tenants.\"a b\"]\nsecret = \"0123456789abcdef\"").contains("a b"));
        assert!(err("[tenants.a]").contains("secret"));
    }

    #[test]
    fn a_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.toml");
        std::fs::write(&p, "[tenants.a]\nsecret = \"0123456789abcdef\"\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            Tenants::load(&p),
            Err(TenantFileError::Permissions(_))
        ));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Tenants::load(&p).unwrap().path(), Some(p.as_path()));
    }
}
