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
