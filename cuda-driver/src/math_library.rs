//! Opening one of NVIDIA's math libraries (cuBLAS, cuFFT, ...) at run time:
//! the first of several file names that loads and has every entry point
//! the backend resolves from it.

use std::ffi::OsStr;
use std::fmt;

use crate::{loader_text, LoadError};

/// A math library could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryLoadError {
    /// The name or path that was tried.
    pub library: String,
    /// The dynamic loader's message, or the missing entry point.
    pub reason: String,
}

impl fmt::Display for LibraryLoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} could not be loaded: {}", self.library, self.reason)
    }
}

impl std::error::Error for LibraryLoadError {}

/// Opens the first of `candidates` (names or paths) that loads and whose
/// entry points `resolve` finds, answering what `resolve` made of it and
/// the name it was opened under; the error is the first candidate's.
/// `needed` names the oldest version that has every entry point, for the
/// message when one is missing.
pub(crate) fn open_first<S: AsRef<OsStr>, A>(
    candidates: &[S],
    needed: &str,
    resolve: impl Fn(libloading::Library) -> Result<A, LoadError>,
) -> Result<(A, String), LibraryLoadError> {
    let mut first = None;
    for name in candidates {
        let library = name.as_ref().to_string_lossy().into_owned();
        // SAFETY: opening a library runs its initialisers; NVIDIA's math
        // libraries are made to be opened by any process that uses CUDA.
        let opened = unsafe { libloading::Library::new(name.as_ref()) };
        let result = match opened {
            Ok(lib) => resolve(lib).map_err(|e| match e {
                LoadError::Symbol { symbol, reason } => {
                    format!("it lacks {symbol} ({needed} or newer is needed): {reason}")
                }
                other => other.to_string(),
            }),
            Err(e) => Err(loader_text(&e)),
        };
        match result {
            Ok(api) => return Ok((api, library)),
            Err(reason) => {
                first.get_or_insert(LibraryLoadError { library, reason });
            }
        }
    }
    Err(first.unwrap_or(LibraryLoadError {
        library: String::new(),
        reason: "no library name to try".into(),
    }))
}

/// One of NVIDIA's math libraries as the backend opens it.
pub trait MathLibrary: Sized {
    /// Its name in messages ("cuBLAS").
    const NAME: &'static str;
    /// The file names it is installed under, newest first.
    const LIBRARIES: &'static [&'static str];
    /// Opens the first of `candidates` that loads and has every entry point.
    fn load_from(candidates: &[std::ffi::OsString]) -> Result<Self, LibraryLoadError>;
    /// The name or path it was opened under.
    fn library(&self) -> &str;
}

/// Defines `$name`, one of NVIDIA's math libraries once loaded: its entry
/// points (`$api`, made by `$api::resolve`) shared by every handle made
/// from it, the name it was opened under, and its [`MathLibrary`] impl.
/// `$title` names it in messages, `$needed` the oldest version with every
/// entry point; the module's `LIBRARIES` lists its file names.
macro_rules! loaded_library {
    ($(#[$doc:meta])* $name:ident($api:ident), $title:literal, $needed:literal) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name {
            api: std::sync::Arc<$api>,
            library: String,
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("library", &self.library)
                    .finish_non_exhaustive()
            }
        }

        impl $name {
            /// Opens the first of `candidates` (names or paths) that loads
            /// and resolves every entry point; the error is the first
            /// candidate's.
            pub fn load_from<S: AsRef<std::ffi::OsStr>>(
                candidates: &[S],
            ) -> Result<Self, $crate::math_library::LibraryLoadError> {
                let (api, library) =
                    $crate::math_library::open_first(candidates, $needed, $api::resolve)?;
                Ok(Self {
                    api: std::sync::Arc::new(api),
                    library,
                })
            }

            /// The name or path it was loaded from.
            pub fn library(&self) -> &str {
                &self.library
            }
        }

        impl $crate::math_library::MathLibrary for $name {
            const NAME: &'static str = $title;
            const LIBRARIES: &'static [&'static str] = &LIBRARIES;

            fn load_from(
                candidates: &[std::ffi::OsString],
            ) -> Result<Self, $crate::math_library::LibraryLoadError> {
                $name::load_from(candidates)
            }

            fn library(&self) -> &str {
                $name::library(self)
            }
        }
    };
}
pub(crate) use loaded_library;
