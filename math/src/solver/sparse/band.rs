//! Band factorizations: LU with partial pivoting, Cholesky, Householder QR.

use num_complex::Complex64 as C;

use super::{Csr, SpError, MAX_BAND_ELEMENTS};
use crate::deadline;

const ZERO: C = C::new(0.0, 0.0);

/// Which factorization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// P A = L U, partial pivoting (square A).
    Lu,
    /// A = L Lᴴ from A's lower triangle (square Hermitian positive definite A).
    Cholesky,
    /// A = Q R, Householder reflections (m ≥ n); solves least squares.
    Qr,
}

/// A rows×cols matrix whose entry (i, j) may be nonzero only for
/// i - lo ≤ j ≤ i + hi, stored by rows.
#[derive(Debug, Clone)]
pub struct Band {
    rows: usize,
    cols: usize,
    lo: usize,
    hi: usize,
    data: Vec<C>,
}

impl Band {
    /// A zero band, or [`SpError::TooLarge`] past the memory bound.
    pub fn zeros(rows: usize, cols: usize, lo: usize, hi: usize) -> Result<Self, SpError> {
        let width = lo
            .checked_add(hi)
            .and_then(|w| w.checked_add(1))
            .ok_or(SpError::TooLarge)?;
        let len = rows.checked_mul(width).ok_or(SpError::TooLarge)?;
        if len > MAX_BAND_ELEMENTS {
            return Err(SpError::TooLarge);
        }
        Ok(Self {
            rows,
            cols,
            lo,
            hi,
            data: vec![ZERO; len],
        })
    }

    fn width(&self) -> usize {
        self.lo + self.hi + 1
    }

    /// The storage index of (i, j), which must lie in the band.
    fn at(&self, i: usize, j: usize) -> usize {
        debug_assert!(j + self.lo >= i && j <= i + self.hi);
        i * self.width() + (j + self.lo - i)
    }

    fn get(&self, i: usize, j: usize) -> C {
        self.data[self.at(i, j)]
    }

    fn set(&mut self, i: usize, j: usize, v: C) {
        let k = self.at(i, j);
        self.data[k] = v;
    }

    /// Columns of row i in the band: max(0, i - lo) .. min(cols, i + hi + 1).
    fn span(&self, i: usize) -> std::ops::Range<usize> {
        i.saturating_sub(self.lo)..(i + self.hi + 1).min(self.cols)
    }
}

/// A factorization of one matrix, ready to solve.
#[derive(Debug, Clone)]
pub struct Factor {
    method: Method,
    /// LU: multipliers below, U above; Cholesky: L; QR: reflectors below, R above.
    band: Band,
    /// LU: the row swapped with row k at step k.
    swaps: Vec<usize>,
    /// QR: the reflectors' scalars.
    tau: Vec<C>,
    /// |pivot| of each step (LU: |U(k,k)|, Cholesky: L(k,k), QR: |R(k,k)|);
    /// 0 from a step the factorization could not complete on.
    pivots: Vec<f64>,
}

/// Lower and upper bandwidths of `a`'s entries (only j ≤ i when `lower`).
fn bandwidths(a: &Csr, lower: bool) -> (usize, usize) {
    let p = &a.pattern;
    let (mut kl, mut ku) = (0, 0);
    for i in 0..p.m {
        for &j in p.row(i) {
            if j <= i {
                kl = kl.max(i - j);
            } else if !lower {
                ku = ku.max(j - i);
            }
        }
    }
    (kl, ku)
}

/// Bytes the factorization of a matrix of `pattern` holds by `method`, or
/// [`SpError::TooLarge`] past the bound.
pub fn band_bytes(pattern: &super::Pattern, method: Method) -> Result<usize, SpError> {
    let (mut kl, mut ku) = (0, 0);
    for i in 0..pattern.m {
        for &j in pattern.row(i) {
            if j <= i {
                kl = kl.max(i - j);
            } else {
                ku = ku.max(j - i);
            }
        }
    }
    let (lo, hi) = match method {
        Method::Cholesky => (kl.max(ku), 0),
        _ => (kl, kl + ku),
    };
    let band = Band::zeros(0, 0, lo, hi)?;
    let elements = pattern
        .m
        .checked_mul(band.width())
        .filter(|&e| e <= super::MAX_BAND_ELEMENTS)
        .ok_or(SpError::TooLarge)?;
    Ok(elements * 16)
}

impl Factor {
    /// Factors A - mu I by `method`. Refuses dimensions the method does not
    /// take (LU, Cholesky: square; QR: m ≥ n).
    pub fn new(a: &Csr, method: Method, mu: C) -> Result<Self, SpError> {
        let p = &a.pattern;
        let (m, n) = (p.m, p.n);
        match method {
            Method::Lu | Method::Cholesky if m != n => return Err(SpError::Invalid("not square")),
            Method::Qr if m < n => return Err(SpError::Invalid("m < n")),
            _ => {}
        }
        let lower = method == Method::Cholesky;
        let (kl, ku) = bandwidths(a, lower);
        let hi = match method {
            Method::Cholesky => 0,
            _ => kl + ku,
        };
        let mut band = Band::zeros(m, n, kl, hi)?;
        for i in 0..m {
            for k in p.rowptr[i]..p.rowptr[i + 1] {
                let j = p.colind[k];
                if lower && j > i {
                    continue;
                }
                let at = band.at(i, j);
                band.data[at] += a.values[k];
            }
        }
        for i in 0..m.min(n) {
            let at = band.at(i, i);
            band.data[at] -= mu;
        }
        let mut factor = Self {
            method,
            band,
            swaps: Vec::new(),
            tau: Vec::new(),
            pivots: vec![0.0; m.min(n)],
        };
        match method {
            Method::Lu => factor.lu(),
            Method::Cholesky => factor.cholesky(),
            Method::Qr => factor.qr(),
        }
        Ok(factor)
    }

    /// Rows of the factored matrix.
    pub fn rows(&self) -> usize {
        self.band.rows
    }

    /// Columns of the factored matrix.
    pub fn cols(&self) -> usize {
        self.band.cols
    }

    /// Bytes the factor holds (what `*BufferInfo` reports as internal data).
    pub fn bytes(&self) -> usize {
        (self.band.data.len() + self.tau.len()) * 16 + self.swaps.len() * 8
    }

    /// The pivots' sizes, one per step: Cholesky's diagonal of L, LU's
    /// |U(k,k)|, QR's |R(k,k)|; 0 from a step the factorization could not
    /// complete on.
    pub fn pivots(&self) -> &[f64] {
        &self.pivots
    }

    /// The first step whose pivot is at most `tol`, if any.
    pub fn zero_pivot(&self, tol: f64) -> Option<usize> {
        self.pivots.iter().position(|&p| p.is_nan() || p <= tol)
    }

    fn lu(&mut self) {
        let b = &mut self.band;
        let n = b.rows;
        let kl = b.lo;
        for k in 0..n {
            if deadline::passed() {
                return;
            }
            let last = (k + kl + 1).min(n);
            let (mut p, mut best) = (k, b.get(k, k).norm());
            for i in k + 1..last {
                let v = b.get(i, k).norm();
                if v > best {
                    (p, best) = (i, v);
                }
            }
            self.swaps.push(p);
            if best == 0.0 || !best.is_finite() {
                // Singular: stop here; pivots from k on stay 0.
                return;
            }
            self.pivots[k] = best;
            let reach = (k + b.hi + 1).min(n);
            if p != k {
                for j in k..reach {
                    let (x, y) = (b.at(k, j), b.at(p, j));
                    b.data.swap(x, y);
                }
            }
            let pivot = b.get(k, k);
            for i in k + 1..last {
                let l = b.get(i, k) / pivot;
                b.set(i, k, l);
                if l == ZERO {
                    continue;
                }
                for j in k + 1..reach {
                    let u = b.get(k, j);
                    let at = b.at(i, j);
                    b.data[at] -= l * u;
                }
            }
        }
    }

    fn cholesky(&mut self) {
        let b = &mut self.band;
        let n = b.rows;
        let w = b.width();
        let lo = b.lo;
        for j in 0..n {
            if deadline::passed() {
                return;
            }
            // Row j of L left of the diagonal: columns j - lo .. j.
            let start = j.saturating_sub(lo);
            let row_j = j * w + (start + lo - j);
            let mut d = b.data[j * w + lo].re;
            for t in 0..j - start {
                d -= b.data[row_j + t].norm_sqr();
            }
            if d <= 0.0 || !d.is_finite() {
                // Not positive definite at j; pivots from j on stay 0.
                return;
            }
            let ljj = d.sqrt();
            self.pivots[j] = ljj;
            b.data[j * w + lo] = C::new(ljj, 0.0);
            for i in j + 1..(j + lo + 1).min(n) {
                let k0 = i.saturating_sub(lo);
                let mut s = b.data[i * w + (j + lo - i)];
                for k in k0..j {
                    s -= b.data[i * w + (k + lo - i)] * b.data[j * w + (k + lo - j)].conj();
                }
                b.data[i * w + (j + lo - i)] = s / ljj;
            }
        }
    }

    fn qr(&mut self) {
        let b = &mut self.band;
        let (m, n) = (b.rows, b.cols);
        let kl = b.lo;
        for k in 0..n {
            if deadline::passed() {
                return;
            }
            let last = (k + kl + 1).min(m);
            let alpha = b.get(k, k);
            let xnorm = (k + 1..last)
                .map(|i| b.get(i, k).norm_sqr())
                .sum::<f64>()
                .sqrt();
            let tau = if xnorm == 0.0 && alpha.im == 0.0 {
                ZERO
            } else {
                let norm = (alpha.norm_sqr() + xnorm * xnorm).sqrt();
                let beta = if alpha.re >= 0.0 { -norm } else { norm };
                let tau = C::new((beta - alpha.re) / beta, -alpha.im / beta);
                let scale = C::new(1.0, 0.0) / (alpha - beta);
                for i in k + 1..last {
                    let v = b.get(i, k) * scale;
                    b.set(i, k, v);
                }
                b.set(k, k, C::new(beta, 0.0));
                tau
            };
            self.tau.push(tau);
            self.pivots[k] = b.get(k, k).norm();
            if tau == ZERO {
                continue;
            }
            // Apply Hᴴ = I - conj(tau) v vᴴ to the columns right of k.
            let reach = (k + b.hi + 1).min(n);
            for j in k + 1..reach {
                let mut dot = b.get(k, j);
                for i in k + 1..last {
                    dot += b.get(i, k).conj() * b.get(i, j);
                }
                let s = tau.conj() * dot;
                let at = b.at(k, j);
                b.data[at] -= s;
                for i in k + 1..last {
                    let v = b.get(i, k);
                    let at = b.at(i, j);
                    b.data[at] -= s * v;
                }
            }
        }
    }

    /// x with A x = b (QR: the least-squares solution). `rhs` has `rows()`
    /// values; the answer `cols()`. Call only when [`Self::zero_pivot`]
    /// found no zero pivot.
    // Indices address the band and the vector together.
    #[allow(clippy::needless_range_loop)]
    pub fn solve(&self, rhs: &[C]) -> Vec<C> {
        let b = &self.band;
        let mut y = rhs.to_vec();
        y.resize(b.rows, ZERO);
        match self.method {
            Method::Lu => {
                let n = b.rows;
                for k in 0..n {
                    let p = self.swaps.get(k).copied().unwrap_or(k);
                    y.swap(k, p);
                    for i in k + 1..(k + b.lo + 1).min(n) {
                        let yk = y[k];
                        y[i] -= b.get(i, k) * yk;
                    }
                }
                self.back_substitute(y)
            }
            Method::Cholesky => {
                let n = b.rows;
                for i in 0..n {
                    let mut s = y[i];
                    for k in i.saturating_sub(b.lo)..i {
                        s -= b.get(i, k) * y[k];
                    }
                    y[i] = s / b.get(i, i);
                }
                for i in (0..n).rev() {
                    let mut s = y[i];
                    for k in i + 1..(i + b.lo + 1).min(n) {
                        s -= b.get(k, i).conj() * y[k];
                    }
                    y[i] = s / b.get(i, i).conj();
                }
                y
            }
            Method::Qr => {
                let (m, n) = (b.rows, b.cols);
                for (k, &tau) in self.tau.iter().enumerate() {
                    if tau == ZERO {
                        continue;
                    }
                    let last = (k + b.lo + 1).min(m);
                    let mut dot = y[k];
                    for i in k + 1..last {
                        dot += b.get(i, k).conj() * y[i];
                    }
                    let s = tau.conj() * dot;
                    y[k] -= s;
                    for i in k + 1..last {
                        let v = b.get(i, k);
                        y[i] -= s * v;
                    }
                }
                y.truncate(n);
                self.back_substitute(y)
            }
        }
    }

    /// Solves U x = y with U the band's upper part (n×n).
    #[allow(clippy::needless_range_loop)]
    fn back_substitute(&self, mut y: Vec<C>) -> Vec<C> {
        let b = &self.band;
        let n = b.cols;
        for i in (0..n).rev() {
            let mut s = y[i];
            for j in i + 1..b.span(i).end {
                s -= b.get(i, j) * y[j];
            }
            y[i] = s / b.get(i, i);
        }
        y
    }
}
