//! The low-level API's `csrcholInfo_t` / `csrqrInfo_t` (and their `Host`
//! twins): a pattern from the analysis, QR's values from its setup, and the
//! factor.

use num_complex::Complex64 as C;

use super::{band_bytes, Csr, Factor, Method, Pattern, SpError};

/// One `csrcholInfo(Host)_t` or `csrqrInfo(Host)_t`.
#[derive(Debug, Clone)]
pub struct Info {
    method: Method,
    pattern: Option<Pattern>,
    /// QR: the values and shift of the setup.
    setup: Option<(Vec<C>, C)>,
    factor: Option<Factor>,
}

/// A call made out of order (no analysis, setup or factor yet).
const ORDER: SpError = SpError::Invalid("the info has not been analyzed, set up or factored");

impl Info {
    /// A new info for Cholesky or QR.
    /// Bytes the server holds for it: the pattern, the setup's values and
    /// the factor.
    pub fn bytes(&self) -> usize {
        self.pattern.as_ref().map_or(0, Pattern::bytes)
            + self.setup.as_ref().map_or(0, |(v, _)| v.len() * 16)
            + self.factor.as_ref().map_or(0, Factor::bytes)
    }

    pub fn new(method: Method) -> Self {
        Self {
            method,
            pattern: None,
            setup: None,
            factor: None,
        }
    }

    /// Its factorization.
    pub fn method(&self) -> Method {
        self.method
    }

    /// `Xcsr{chol,qr}Analysis`: records the pattern (Cholesky: square).
    pub fn analysis(&mut self, pattern: Pattern) -> Result<(), SpError> {
        match self.method {
            Method::Qr if pattern.m < pattern.n => return Err(SpError::Invalid("m < n")),
            Method::Qr => {}
            _ if pattern.m != pattern.n => return Err(SpError::Invalid("not square")),
            _ => {}
        }
        self.pattern = Some(pattern);
        self.setup = None;
        self.factor = None;
        Ok(())
    }

    /// The analyzed pattern.
    pub fn pattern(&self) -> Option<&Pattern> {
        self.pattern.as_ref()
    }

    /// `?csr{chol,qr}BufferInfo`: the factor's bytes and the workspace's
    /// (one vector), or [`SpError::TooLarge`].
    pub fn buffer_info(&self) -> Result<(usize, usize), SpError> {
        let pattern = self.pattern.as_ref().ok_or(ORDER)?;
        let internal = band_bytes(pattern, self.method)?;
        Ok((internal, 16 * pattern.m.max(pattern.n).max(1)))
    }

    /// `?csrqrSetup`: A's values and the shift.
    pub fn setup(&mut self, values: Vec<C>, mu: C) -> Result<(), SpError> {
        let pattern = self.pattern.as_ref().ok_or(ORDER)?;
        if values.len() != pattern.nnz() {
            return Err(SpError::Invalid("nnz"));
        }
        self.setup = Some((values, mu));
        self.factor = None;
        Ok(())
    }

    /// `?csr{chol,qr}Factor`: Cholesky of `values`, QR of the setup's.
    pub fn factor(&mut self, values: Option<Vec<C>>) -> Result<(), SpError> {
        let pattern = self.pattern.clone().ok_or(ORDER)?;
        let (values, mu) = match (self.method, values) {
            (Method::Qr, _) => self.setup.clone().ok_or(ORDER)?,
            (_, Some(values)) => (values, C::new(0.0, 0.0)),
            (_, None) => return Err(ORDER),
        };
        if values.len() != pattern.nnz() {
            return Err(SpError::Invalid("nnz"));
        }
        let a = Csr { pattern, values };
        self.factor = Some(Factor::new(&a, self.method, mu)?);
        Ok(())
    }

    /// `?csr{chol,qr}ZeroPivot`: the first pivot at most `tol`.
    pub fn zero_pivot(&self, tol: f64) -> Result<Option<usize>, SpError> {
        Ok(self.factor.as_ref().ok_or(ORDER)?.zero_pivot(tol))
    }

    /// `?csr{chol,qr}Solve`: x from b (`b` has the factor's rows).
    pub fn solve(&self, b: &[C]) -> Result<Vec<C>, SpError> {
        let factor = self.factor.as_ref().ok_or(ORDER)?;
        if b.len() != factor.rows() {
            return Err(SpError::Invalid("b"));
        }
        Ok(factor.solve(b))
    }

    /// `?csrcholDiag`: the diagonal of L (A = L Lᴴ; rcud's Cholesky does
    /// not reorder, so P is the identity). Cholesky infos only, after a
    /// factor; entries from the first step that was not positive definite
    /// on are 0.
    pub fn chol_diag(&self) -> Result<Vec<f64>, SpError> {
        if self.method != Method::Cholesky {
            return Err(SpError::Invalid("not a Cholesky info"));
        }
        Ok(self.factor.as_ref().ok_or(ORDER)?.pivots().to_vec())
    }

    /// Rows and columns of the analyzed pattern.
    pub fn dims(&self) -> Option<(usize, usize)> {
        self.pattern.as_ref().map(|p| (p.m, p.n))
    }
}
