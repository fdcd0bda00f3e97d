use num_complex::Complex64 as C;

use super::*;

/// The 5-point Laplacian on a k×k grid (symmetric positive definite).
fn lap2d(k: usize) -> Csr {
    let n = k * k;
    let (mut rowptr, mut colind, mut values) = (vec![0], Vec::new(), Vec::new());
    for i in 0..n {
        let (r, c) = (i / k, i % k);
        let mut push = |j: usize, v: f64| {
            colind.push(j);
            values.push(C::new(v, 0.0));
        };
        if r > 0 {
            push(i - k, -1.0);
        }
        if c > 0 {
            push(i - 1, -1.0);
        }
        push(i, 4.0);
        if c + 1 < k {
            push(i + 1, -1.0);
        }
        if r + 1 < k {
            push(i + k, -1.0);
        }
        rowptr.push(colind.len());
    }
    Csr {
        pattern: Pattern {
            m: n,
            n,
            rowptr,
            colind,
        },
        values,
    }
}

fn matvec(a: &Csr, x: &[C]) -> Vec<C> {
    let p = &a.pattern;
    (0..p.m)
        .map(|i| {
            (p.rowptr[i]..p.rowptr[i + 1])
                .map(|k| a.values[k] * x[p.colind[k]])
                .sum()
        })
        .collect()
}

fn residual(a: &Csr, x: &[C], b: &[C]) -> f64 {
    matvec(a, x)
        .iter()
        .zip(b)
        .map(|(ax, b)| (ax - b).norm())
        .fold(0.0, f64::max)
}

/// A fixed shuffle of 0..n (a linear congruential walk).
fn shuffle(n: usize) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    let mut s: u64 = 12345;
    for i in (1..n).rev() {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        p.swap(i, (s >> 33) as usize % (i + 1));
    }
    p
}

fn is_permutation(p: &[usize], n: usize) -> bool {
    let mut seen = vec![false; n];
    p.len() == n
        && p.iter()
            .all(|&v| v < n && !std::mem::replace(&mut seen[v], true))
}

#[test]
fn every_method_solves_the_laplacian() {
    let a = lap2d(12);
    let n = a.pattern.n;
    let b: Vec<C> = (0..n).map(|i| C::new(1.0 + i as f64 * 0.1, 0.0)).collect();
    for method in [Method::Lu, Method::Cholesky, Method::Qr] {
        for reorder in [false, true] {
            let (x, singular) = solve(&a, &b, method, 1e-12, reorder).unwrap();
            assert_eq!(singular, None, "{method:?}");
            assert!(residual(&a, &x, &b) < 1e-10, "{method:?} reorder {reorder}");
        }
    }
}

#[test]
fn lu_pivots_and_qr_solve_nonsymmetric_complex() {
    // Zero diagonal: LU must pivot; complex values.
    let rowptr = vec![0, 2, 4, 6];
    let colind = vec![1, 2, 0, 2, 0, 1];
    let values = vec![
        C::new(2.0, 1.0),
        C::new(1.0, 0.0),
        C::new(3.0, 0.0),
        C::new(0.0, -1.0),
        C::new(1.0, 1.0),
        C::new(4.0, 0.0),
    ];
    let a = Csr {
        pattern: Pattern {
            m: 3,
            n: 3,
            rowptr,
            colind,
        },
        values,
    };
    let b = vec![C::new(1.0, 0.0), C::new(0.0, 2.0), C::new(-1.0, 1.0)];
    for method in [Method::Lu, Method::Qr] {
        let (x, singular) = solve(&a, &b, method, 0.0, false).unwrap();
        assert_eq!(singular, None);
        assert!(residual(&a, &x, &b) < 1e-12, "{method:?}");
    }
}

#[test]
fn hermitian_cholesky_uses_the_lower_triangle() {
    // [[4, 1-i], [1+i, 3]] with a wrong upper entry, which must be ignored.
    let a = Csr {
        pattern: Pattern {
            m: 2,
            n: 2,
            rowptr: vec![0, 2, 4],
            colind: vec![0, 1, 0, 1],
        },
        values: vec![
            C::new(4.0, 0.0),
            C::new(99.0, 0.0),
            C::new(1.0, 1.0),
            C::new(3.0, 0.0),
        ],
    };
    let full = Csr {
        values: vec![
            C::new(4.0, 0.0),
            C::new(1.0, -1.0),
            C::new(1.0, 1.0),
            C::new(3.0, 0.0),
        ],
        ..a.clone()
    };
    let b = vec![C::new(1.0, 2.0), C::new(-3.0, 0.5)];
    let (x, singular) = solve(&a, &b, Method::Cholesky, 0.0, false).unwrap();
    assert_eq!(singular, None);
    assert!(residual(&full, &x, &b) < 1e-12);
}

#[test]
fn singular_matrices_report_the_first_small_pivot() {
    // diag(1, 2, 0, 3): singular at 2 for every method.
    let a = Csr {
        pattern: Pattern {
            m: 4,
            n: 4,
            rowptr: vec![0, 1, 2, 3, 4],
            colind: vec![0, 1, 2, 3],
        },
        values: [1.0, 2.0, 0.0, 3.0].map(|v| C::new(v, 0.0)).to_vec(),
    };
    let b = vec![C::new(1.0, 0.0); 4];
    for method in [Method::Lu, Method::Cholesky, Method::Qr] {
        assert_eq!(
            solve(&a, &b, method, 0.0, false).unwrap().1,
            Some(2),
            "{method:?}"
        );
        // tol above a pivot: that pivot counts as zero.
        assert_eq!(
            solve(&a, &b, method, 1.5, false).unwrap().1,
            Some(0),
            "{method:?}"
        );
    }
    // Indefinite for Cholesky, fine for LU.
    let indefinite = Csr {
        values: [1.0, -2.0, 1.0, 3.0].map(|v| C::new(v, 0.0)).to_vec(),
        ..a.clone()
    };
    assert_eq!(
        solve(&indefinite, &b, Method::Cholesky, 0.0, false)
            .unwrap()
            .1,
        Some(1)
    );
    assert_eq!(
        solve(&indefinite, &b, Method::Lu, 0.0, false).unwrap().1,
        None
    );
}

#[test]
fn qr_least_squares_and_shift() {
    // 3×2: columns (1,1,1) and (0,1,2); b = (1,2,4) → x = (5/6, 3/2).
    let a = Csr {
        pattern: Pattern {
            m: 3,
            n: 2,
            rowptr: vec![0, 1, 3, 5],
            colind: vec![0, 0, 1, 0, 1],
        },
        values: [1.0, 1.0, 1.0, 1.0, 2.0].map(|v| C::new(v, 0.0)).to_vec(),
    };
    let f = Factor::new(&a, Method::Qr, C::new(0.0, 0.0)).unwrap();
    let x = f.solve(&[1.0, 2.0, 4.0].map(|v| C::new(v, 0.0)));
    assert!((x[0] - C::new(5.0 / 6.0, 0.0)).norm() < 1e-12);
    assert!((x[1] - C::new(1.5, 0.0)).norm() < 1e-12);
    // (A - 0.5 I) on the Laplacian: still nonsingular.
    let lap = lap2d(4);
    let f = Factor::new(&lap, Method::Qr, C::new(0.5, 0.0)).unwrap();
    let mut shifted = lap.clone();
    for i in 0..16 {
        for k in shifted.pattern.rowptr[i]..shifted.pattern.rowptr[i + 1] {
            if shifted.pattern.colind[k] == i {
                shifted.values[k] -= C::new(0.5, 0.0);
            }
        }
    }
    let b = vec![C::new(1.0, 0.0); 16];
    assert_eq!(f.zero_pivot(1e-12), None);
    assert!(residual(&shifted, &f.solve(&b), &b) < 1e-10);
}

#[test]
fn orderings_are_permutations_and_rcm_narrows_the_band() {
    let a = lap2d(20);
    let n = a.pattern.n;
    let p = shuffle(n);
    let scrambled = a.permuted(&p, &p);
    let wide = scrambled.pattern.bandwidth();
    let rcm = symrcm(&scrambled.pattern);
    assert!(is_permutation(&rcm, n));
    let narrow = scrambled.permuted(&rcm, &rcm).pattern.bandwidth();
    assert!(narrow <= 25, "rcm band {narrow} (shuffled {wide})");
    assert!(wide > 5 * narrow);
    for order in [symamd(&scrambled.pattern), metisnd(&scrambled.pattern)] {
        assert!(is_permutation(&order, n));
    }
    // Disconnected and empty patterns.
    let diag = Pattern {
        m: 300,
        n: 300,
        rowptr: (0..=300).collect(),
        colind: (0..300).collect(),
    };
    for order in [symrcm(&diag), symamd(&diag), metisnd(&diag)] {
        assert!(is_permutation(&order, 300));
    }
    let empty = Pattern {
        m: 0,
        n: 0,
        rowptr: vec![0],
        colind: vec![],
    };
    assert!(symrcm(&empty).is_empty() && metisnd(&empty).is_empty());
}

#[test]
fn minimum_degree_reduces_fill_on_an_arrow() {
    // Arrow matrix with the dense row first: eliminating it first fills
    // everything; minimum degree eliminates it last.
    let n = 50;
    let (mut rowptr, mut colind) = (vec![0], Vec::new());
    for i in 0..n {
        if i == 0 {
            colind.extend(0..n);
        } else {
            colind.extend([0, i]);
        }
        rowptr.push(colind.len());
    }
    let arrow = Pattern {
        m: n,
        n,
        rowptr,
        colind,
    };
    let order = symamd(&arrow);
    assert!(order[n - 2..].contains(&0));
}

#[test]
fn csrperm_maps_entries_and_sorts_columns() {
    let a = lap2d(3);
    let p = shuffle(9);
    let q = shuffle(9).into_iter().rev().collect::<Vec<_>>();
    let (b, map) = csrperm(&a.pattern, &p, &q);
    let expect = a.permuted(&p, &q);
    for i in 0..9 {
        let row = b.row(i);
        assert!(row.windows(2).all(|w| w[0] < w[1]));
        let mut want: Vec<(usize, C)> = expect
            .pattern
            .row(i)
            .iter()
            .copied()
            .zip(
                expect.values[expect.pattern.rowptr[i]..expect.pattern.rowptr[i + 1]]
                    .iter()
                    .copied(),
            )
            .collect();
        want.sort_by_key(|e| e.0);
        let got: Vec<(usize, C)> = (b.rowptr[i]..b.rowptr[i + 1])
            .map(|k| (b.colind[k], a.values[map[k]]))
            .collect();
        assert_eq!(got, want);
    }
}

#[test]
fn patterns_are_checked_and_rebased() {
    let p = Pattern::new(2, 2, 3, 1, &[1, 3, 4], &[1, 2, 2]).unwrap();
    assert_eq!(p.rowptr, vec![0, 2, 3]);
    assert_eq!(p.colind, vec![0, 1, 1]);
    assert!(!p.is_symmetric());
    assert!(lap2d(3).pattern.is_symmetric());
    assert!(Pattern::new(2, 2, 3, 0, &[1, 3, 4], &[1, 2, 2]).is_err());
    assert!(Pattern::new(2, 2, 3, 1, &[1, 3, 3], &[1, 2, 2]).is_err());
    assert!(Pattern::new(2, 2, 3, 1, &[1, 3, 4], &[1, 3, 2]).is_err());
    assert!(Pattern::new(2, 2, 3, 1, &[1, 4, 3], &[1, 2, 2]).is_err());
    assert_eq!(permutation(&[2, 0, 1], 3), Some(vec![2, 0, 1]));
    assert_eq!(permutation(&[2, 0, 2], 3), None);
    assert_eq!(permutation(&[3, 0, 1], 3), None);
}

#[test]
fn bands_past_the_bound_are_refused() {
    assert_eq!(
        Band::zeros(1 << 20, 1 << 20, 100, 100).err(),
        Some(SpError::TooLarge)
    );
}

/// A nonsymmetric, diagonally weak sparse matrix: lap2d's pattern with
/// small diagonals and skewed off-diagonals, so that LU must pivot.
fn weak_diagonal(k: usize, shift: f64) -> Csr {
    let mut a = lap2d(k);
    for i in 0..a.pattern.m {
        for t in a.pattern.rowptr[i]..a.pattern.rowptr[i + 1] {
            let j = a.pattern.colind[t];
            a.values[t] = if i == j {
                C::new(0.01 + shift, 0.0)
            } else {
                C::new(
                    1.0 + ((i * 7 + j * 3) % 5) as f64 * 0.3,
                    0.1 * (i % 3) as f64,
                )
            };
        }
    }
    a
}

/// The dense product of CSR factors (small tests).
fn dense_product(n: usize, l: &CsrFactor, u: &CsrFactor, unit_l: bool) -> Vec<Vec<C>> {
    let dense = |f: &CsrFactor, unit: bool| {
        let mut d = vec![vec![C::new(0.0, 0.0); n]; n];
        for (i, row) in d.iter_mut().enumerate() {
            for t in f.rowptr[i]..f.rowptr[i + 1] {
                row[f.colind[t]] = f.values[t];
            }
            if unit {
                row[i] = C::new(1.0, 0.0);
            }
        }
        d
    };
    let (l, u) = (dense(l, unit_l), dense(u, false));
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| (0..n).map(|k| l[i][k] * u[k][j]).sum())
                .collect()
        })
        .collect()
}

fn dense_of(a: &Csr) -> Vec<Vec<C>> {
    let n = a.pattern.n;
    let mut d = vec![vec![C::new(0.0, 0.0); n]; a.pattern.m];
    for (i, row) in d.iter_mut().enumerate() {
        for t in a.pattern.rowptr[i]..a.pattern.rowptr[i + 1] {
            row[a.pattern.colind[t]] += a.values[t];
        }
    }
    d
}

fn factor_csr(n: usize, f: &CsrFactor) -> Csr {
    Csr {
        pattern: Pattern {
            m: n,
            n,
            rowptr: f.rowptr.clone(),
            colind: f.colind.clone(),
        },
        values: f.values.clone(),
    }
}

#[test]
fn sparse_lu_pivots_extracts_and_solves() {
    let a = weak_diagonal(6, 0.0);
    let n = a.pattern.n;
    let lu = SparseLu::factor(&a, 1.0).unwrap();
    assert!(is_permutation(lu.p(), n));
    assert_ne!(
        lu.p(),
        (0..n).collect::<Vec<_>>(),
        "weak diagonals must pivot"
    );
    assert_eq!(lu.zero_pivot(1e-14), None);
    let (l, u) = lu.extract();
    assert_eq!((l.colind.len(), u.colind.len()), lu.nnz());
    // L strictly lower, U upper, columns sorted.
    for i in 0..n {
        assert!(l.colind[l.rowptr[i]..l.rowptr[i + 1]]
            .iter()
            .all(|&j| j < i));
        assert!(u.colind[u.rowptr[i]..u.rowptr[i + 1]]
            .iter()
            .all(|&j| j >= i));
        assert!(u.colind[u.rowptr[i]..u.rowptr[i + 1]]
            .windows(2)
            .all(|w| w[0] < w[1]));
    }
    // P A = L U, entry by entry.
    let pa = dense_of(&a.permuted(lu.p(), &(0..n).collect::<Vec<_>>()));
    let prod = dense_product(n, &l, &u, true);
    for i in 0..n {
        for j in 0..n {
            assert!((pa[i][j] - prod[i][j]).norm() < 1e-10, "({i}, {j})");
        }
    }
    // Sparse: far fewer entries than dense.
    let (nl, nu) = lu.nnz();
    assert!(nl + nu < n * n / 2);
    let b: Vec<C> = (0..n).map(|i| C::new(i as f64, 1.0)).collect();
    assert!(residual(&a, &lu.solve(&b), &b) < 1e-10);
    // Threshold 0 keeps the diagonal wherever it is a candidate.
    let lu0 = SparseLu::factor(&lap2d(5), 0.0).unwrap();
    assert_eq!(lu0.p(), (0..25).collect::<Vec<_>>());
}

#[test]
fn sparse_lu_reports_singular_columns() {
    // Column 1 is empty: structurally singular; a repeated row: numerically.
    let a = Csr {
        pattern: Pattern {
            m: 3,
            n: 3,
            rowptr: vec![0, 2, 3, 5],
            colind: vec![0, 2, 0, 0, 2],
        },
        values: [1.0, 2.0, 3.0, 1.0, 2.0].map(|v| C::new(v, 0.0)).to_vec(),
    };
    let lu = SparseLu::factor(&a, 1.0).unwrap();
    assert!(is_permutation(lu.p(), 3));
    assert_eq!(lu.zero_pivot(0.0), Some(1));
    let b = Csr {
        pattern: Pattern {
            m: 2,
            n: 2,
            rowptr: vec![0, 2, 4],
            colind: vec![0, 1, 0, 1],
        },
        values: [1.0, 2.0, 2.0, 4.0].map(|v| C::new(v, 0.0)).to_vec(),
    };
    assert_eq!(
        SparseLu::factor(&b, 1.0).unwrap().zero_pivot(1e-12),
        Some(1)
    );
    let rect = Csr {
        pattern: Pattern {
            m: 1,
            n: 2,
            rowptr: vec![0, 1],
            colind: vec![0],
        },
        values: vec![C::new(1.0, 0.0)],
    };
    assert!(SparseLu::factor(&rect, 1.0).is_err());
}

#[test]
fn refactor_on_the_fixed_pattern_solves_new_values() {
    let k = 6;
    let a = weak_diagonal(k, 0.0);
    let n = a.pattern.n;
    // The sample's recipe: reorder, LU, then P = order(Plu), Q = order.
    let order = symrcm(&a.pattern);
    let b = a.permuted(&order, &order);
    let lu = SparseLu::factor(&b, 1.0).unwrap();
    let p: Vec<usize> = lu.p().iter().map(|&i| order[i]).collect();
    let q = order.clone();
    let (l, u) = lu.extract();
    for diag in [
        UnitDiagonal::AssumedL,
        UnitDiagonal::StoredL,
        UnitDiagonal::StoredU,
    ] {
        let (lc, uc) = (factor_csr(n, &l), factor_csr(n, &u));
        let (lc, uc) = match diag {
            UnitDiagonal::AssumedL => (lc, uc),
            // Round-trip through the split of another convention.
            other => {
                let rf = Refactor::new(
                    a.clone(),
                    (p.clone(), q.clone()),
                    &lc,
                    &uc,
                    UnitDiagonal::AssumedL,
                )
                .unwrap();
                let (l2, u2) = rf.split(other);
                (factor_csr(n, &l2), factor_csr(n, &u2))
            }
        };
        let mut rf = Refactor::new(a.clone(), (p.clone(), q.clone()), &lc, &uc, diag).unwrap();
        // Solving right after the setup uses the given factors.
        let rhs: Vec<C> = (0..n).map(|i| C::new(1.0, i as f64 * 0.5)).collect();
        let mut x = rhs.clone();
        rf.solve(&mut x, &p, &q);
        assert!(residual(&a, &x, &rhs) < 1e-9, "{diag:?}");
        // New values on the same pattern (same pivots kept).
        let a2 = weak_diagonal(k, 0.5);
        rf.reset_values(a2.values.clone(), &p, &q).unwrap();
        let report = rf.refactor(0.0, 0.0);
        assert_eq!(report, PivotReport::default());
        let mut x = rhs.clone();
        rf.solve(&mut x, &p, &q);
        assert!(residual(&a2, &x, &rhs) < 1e-9, "{diag:?}");
        let (l3, u3) = rf.split(UnitDiagonal::AssumedL);
        assert_eq!(l3.colind.len() + u3.colind.len(), rf.bundled().colind.len());
    }
    let (lc, uc) = (factor_csr(n, &l), factor_csr(n, &u));
    let mut rf = Refactor::new(
        a.clone(),
        (p.clone(), q.clone()),
        &lc,
        &uc,
        UnitDiagonal::AssumedL,
    )
    .unwrap();
    // Another P is refused; so are an entry outside L + U and a zero pivot.
    let mut other = p.clone();
    other.swap(0, 1);
    assert!(rf.reset_values(a.values.clone(), &other, &q).is_err());
    assert!(Refactor::new(
        a.clone(),
        (other, q.clone()),
        &lc,
        &uc,
        UnitDiagonal::AssumedL
    )
    .is_err());
    let zeros = vec![C::new(0.0, 0.0); a.pattern.nnz()];
    rf.reset_values(zeros, &p, &q).unwrap();
    let report = rf.refactor(1e-14, 1.0);
    assert_eq!(report.zero_pivot, Some(0));
    assert!(report.boosted);
}

// ---- csrlsqvqr, csreigvsi, csreigs, csrzfd, csrsymmdq, csrcholDiag ----

/// A CSR matrix from dense rows (zeros left out).
fn csr_of(rows: &[Vec<C>]) -> Csr {
    let n = rows.first().map_or(0, Vec::len);
    let (mut rowptr, mut colind, mut values) = (vec![0], Vec::new(), Vec::new());
    for row in rows {
        for (j, &v) in row.iter().enumerate() {
            if v != C::new(0.0, 0.0) {
                colind.push(j);
                values.push(v);
            }
        }
        rowptr.push(colind.len());
    }
    Csr {
        pattern: Pattern {
            m: rows.len(),
            n,
            rowptr,
            colind,
        },
        values,
    }
}

fn c(re: f64, im: f64) -> C {
    C::new(re, im)
}

/// Aᴴ (A x − b): zero at a least-squares solution.
fn normal_residual(a: &Csr, x: &[C], b: &[C]) -> f64 {
    let d = dense_of(a);
    let r: Vec<C> = matvec(a, x).iter().zip(b).map(|(u, v)| u - v).collect();
    (0..a.pattern.n)
        .map(|j| {
            d.iter()
                .zip(&r)
                .map(|(row, ri)| row[j].conj() * ri)
                .sum::<C>()
                .norm()
        })
        .fold(0.0, f64::max)
}

#[test]
fn lsqvqr_matches_the_normal_equations() {
    // 7×4 complex, full rank.
    let rows: Vec<Vec<C>> = (0..7)
        .map(|i| {
            (0..4)
                .map(|j| {
                    if (i + 2 * j) % 3 == 0 || i == j {
                        c(1.0 + i as f64 - j as f64 * 0.5, 0.3 * (i * j) as f64)
                    } else {
                        c(0.0, 0.0)
                    }
                })
                .collect()
        })
        .collect();
    let a = csr_of(&rows);
    let b: Vec<C> = (0..7).map(|i| c(1.0 + i as f64, -0.5 * i as f64)).collect();
    let ls = lsqvqr(&a, &b, 1e-12).unwrap();
    assert_eq!(ls.rank, 4);
    assert!(is_permutation(&ls.p, 4));
    assert!(normal_residual(&a, &ls.x, &b) < 1e-9);
    let r: Vec<C> = matvec(&a, &ls.x)
        .iter()
        .zip(&b)
        .map(|(u, v)| u - v)
        .collect();
    let norm = r.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
    assert!((ls.min_norm - norm).abs() < 1e-12 && norm > 1e-3);
    // The dense reference: solve AᴴA x = Aᴴb.
    let d = dense_of(&a);
    let mut g = crate::solver::dense::Mat::zeros(4, 4);
    let mut rhs = crate::solver::dense::Mat::zeros(4, 1);
    for i in 0..4 {
        for j in 0..4 {
            g[(i, j)] = d.iter().map(|row| row[i].conj() * row[j]).sum();
        }
        rhs[(i, 0)] = d.iter().zip(&b).map(|(row, bk)| row[i].conj() * bk).sum();
    }
    let (ipiv, info) = crate::solver::dense::getrf(&mut g, true);
    assert_eq!(info, 0);
    crate::solver::dense::getrs(crate::solver::dense::Op::N, &g, Some(&ipiv), &mut rhs);
    for j in 0..4 {
        assert!((rhs[(j, 0)] - ls.x[j]).norm() < 1e-9, "x[{j}]");
    }
    // m < n is refused.
    let wide = csr_of(&[vec![c(1.0, 0.0), c(2.0, 0.0)]]);
    assert!(lsqvqr(&wide, &[c(1.0, 0.0)], 0.0).is_err());
}

#[test]
fn lsqvqr_rank_deficient_gives_the_minimum_norm_solution() {
    // Column 3 = column 0 + column 1: rank 3, null vector (1, 1, 0, −1).
    let rows: Vec<Vec<C>> = [
        [1.0, 0.0, 2.0],
        [0.0, 1.0, 0.0],
        [3.0, 0.0, 1.0],
        [0.0, 2.0, 0.0],
        [1.0, 1.0, 1.0],
        [0.0, 0.0, 4.0],
    ]
    .iter()
    .map(|r| {
        vec![
            c(r[0], 0.0),
            c(r[1], 0.0),
            c(r[2], 0.0),
            c(r[0] + r[1], 0.0),
        ]
    })
    .collect();
    let a = csr_of(&rows);
    let b: Vec<C> = (0..6).map(|i| c((i * i) as f64 - 2.0, 0.0)).collect();
    let ls = lsqvqr(&a, &b, 1e-10).unwrap();
    assert_eq!(ls.rank, 3);
    assert!(is_permutation(&ls.p, 4));
    assert!(normal_residual(&a, &ls.x, &b) < 1e-9);
    // Minimum norm: x ⟂ the null space.
    let along = ls.x[0] + ls.x[1] - ls.x[3];
    assert!(along.norm() < 1e-9, "{along}");
    assert!(ls.x.iter().all(|v| v.im.abs() < 1e-12));
}

/// The 1-D Laplacian tridiag(−1, 2, −1) of order n.
fn lap1d(n: usize) -> Csr {
    let rows: Vec<Vec<C>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| match i.abs_diff(j) {
                    0 => c(2.0, 0.0),
                    1 => c(-1.0, 0.0),
                    _ => c(0.0, 0.0),
                })
                .collect()
        })
        .collect();
    csr_of(&rows)
}

#[test]
fn eigvsi_finds_the_eigenvalue_nearest_the_shift() {
    let n = 12;
    let a = lap1d(n);
    let lambda = |k: usize| 2.0 - 2.0 * (k as f64 * std::f64::consts::PI / (n + 1) as f64).cos();
    let x0 = vec![c(1.0, 0.0); n];
    for (mu0, k) in [(0.0, 1), (lambda(5) + 0.01, 5), (4.0, n)] {
        let (mu, x) = eigvsi(&a, c(mu0, 0.0), &x0, 200, 1e-12).unwrap();
        assert!((mu.re - lambda(k)).abs() < 1e-9, "{mu} vs {}", lambda(k));
        let r: f64 = matvec(&a, &x)
            .iter()
            .zip(&x)
            .map(|(u, v)| (u - mu * v).norm())
            .fold(0.0, f64::max);
        assert!(r < 1e-8);
    }
    // Complex triangular: the eigenvalues are the diagonal.
    let diag = [c(1.0, 1.0), c(2.0, 0.0), c(3.0, -1.0), c(5.0, 0.0)];
    let rows: Vec<Vec<C>> = (0..4)
        .map(|i| {
            (0..4)
                .map(|j| match (j as usize).wrapping_sub(i) {
                    0 => diag[i],
                    1 => c(0.5, 0.25),
                    _ => c(0.0, 0.0),
                })
                .collect()
        })
        .collect();
    let t = csr_of(&rows);
    let (mu, _) = eigvsi(&t, c(2.9, -0.8), &[c(1.0, 0.0); 4], 100, 1e-12).unwrap();
    assert!((mu - diag[2]).norm() < 1e-9, "{mu}");
    // A shift on an eigenvalue still converges; bad input is refused.
    let (mu, _) = eigvsi(&t, diag[1], &[c(1.0, 0.0); 4], 100, 1e-12).unwrap();
    assert!((mu - diag[1]).norm() < 1e-6, "{mu}");
    assert!(eigvsi(&t, c(0.0, 0.0), &[c(1.0, 0.0); 4], 0, 1e-12).is_err());
    assert!(eigvsi(&t, c(0.0, 0.0), &[c(0.0, 0.0); 4], 10, 1e-12).is_err());
}

#[test]
fn eigs_counts_against_dense_eigenvalues() {
    let a = lap2d(4);
    let mut d = crate::solver::dense::Mat::zeros(16, 16);
    for (i, row) in dense_of(&a).iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            d[(i, j)] = v;
        }
    }
    let (w, _) = crate::solver::dense::syevd(crate::solver::dense::Uplo::Lower, &d, false).unwrap();
    for (lo, hi) in [(0.0, 2.5), (2.5, 5.0), (-1.0, 9.0), (3.1, 3.2)] {
        let expect = w.iter().filter(|&&l| lo <= l && l <= hi).count();
        assert_eq!(
            eigs(&a, c(lo, -0.5), c(hi, 0.5)).unwrap(),
            expect,
            "[{lo}, {hi}]"
        );
    }
    // Complex: diagonal 1+i, 2, 3−i, 5 (triangular).
    let rows = vec![
        vec![c(1.0, 1.0), c(1.0, 0.0), c(0.0, 0.0), c(0.0, 0.0)],
        vec![c(0.0, 0.0), c(2.0, 0.0), c(1.0, 0.0), c(0.0, 0.0)],
        vec![c(0.0, 0.0), c(0.0, 0.0), c(3.0, -1.0), c(1.0, 0.0)],
        vec![c(0.0, 0.0), c(0.0, 0.0), c(0.0, 0.0), c(5.0, 0.0)],
    ];
    let t = csr_of(&rows);
    assert_eq!(eigs(&t, c(0.5, -2.0), c(3.5, 0.5)).unwrap(), 2);
    assert_eq!(eigs(&t, c(0.0, -2.0), c(6.0, 2.0)).unwrap(), 4);
    assert!(eigs(&t, c(1.0, 0.0), c(0.0, 1.0)).is_err());
}

/// Whether A(p, :) has `numnz` nonzero diagonal entries.
fn diagonal_nonzeros(a: &Csr, p: &[usize]) -> usize {
    let d = dense_of(a);
    (0..p.len())
        .filter(|&j| d[p[j]][j] != C::new(0.0, 0.0))
        .count()
}

#[test]
fn zfd_permutes_zeros_off_the_diagonal() {
    // Zeros on the diagonal (one stored explicitly); MC21 must augment.
    let rows = vec![
        vec![c(0.0, 0.0), c(1.0, 0.0), c(2.0, 0.0), c(0.0, 0.0)],
        vec![c(3.0, 0.0), c(0.0, 0.0), c(0.0, 0.0), c(0.0, 0.0)],
        vec![c(0.0, 0.0), c(4.0, 0.0), c(0.0, 0.0), c(5.0, 0.0)],
        vec![c(0.0, 0.0), c(0.0, 0.0), c(6.0, 0.0), c(0.0, 0.0)],
    ];
    let mut a = csr_of(&rows);
    // Store A(0, 0) = 0 explicitly.
    a.pattern.colind.insert(0, 0);
    a.values.insert(0, c(0.0, 0.0));
    for r in &mut a.pattern.rowptr[1..] {
        *r += 1;
    }
    let (p, numnz) = zfd(&a).unwrap();
    assert!(is_permutation(&p, 4));
    assert_eq!(numnz, 4);
    assert_eq!(diagonal_nonzeros(&a, &p), 4);
    // The augmenting path case of the notes: r0 {c0, c1}, r1 {c0}, r2 {c1, c2}.
    let rows = vec![
        vec![c(1.0, 0.0), c(1.0, 0.0), c(0.0, 0.0)],
        vec![c(1.0, 0.0), c(0.0, 0.0), c(0.0, 0.0)],
        vec![c(0.0, 0.0), c(1.0, 0.0), c(1.0, 0.0)],
    ];
    let b = csr_of(&rows);
    let (p, numnz) = zfd(&b).unwrap();
    assert_eq!((p.clone(), numnz), (vec![1, 0, 2], 3));
    assert_eq!(diagonal_nonzeros(&b, &p), 3);
    // Structurally singular: an empty row and column.
    let rows = vec![
        vec![c(1.0, 0.0), c(1.0, 0.0), c(0.0, 0.0)],
        vec![c(1.0, 0.0), c(1.0, 0.0), c(0.0, 0.0)],
        vec![c(0.0, 0.0), c(0.0, 0.0), c(0.0, 0.0)],
    ];
    let s = csr_of(&rows);
    let (p, numnz) = zfd(&s).unwrap();
    assert!(is_permutation(&p, 3));
    assert_eq!(numnz, 2);
    assert_eq!(diagonal_nonzeros(&s, &p), 2);
}

#[test]
fn symmdq_is_a_minimum_degree_permutation() {
    let a = lap2d(5);
    let p = symmdq(&a.pattern);
    assert!(is_permutation(&p, 25));
    assert_eq!(p, symamd(&a.pattern));
}

#[test]
fn chol_diag_is_the_diagonal_of_l() {
    let a = lap2d(3);
    let mut info = Info::new(Method::Cholesky);
    assert!(info.chol_diag().is_err(), "before the analysis");
    info.analysis(a.pattern.clone()).unwrap();
    assert!(info.chol_diag().is_err(), "before the factor");
    info.factor(Some(a.values.clone())).unwrap();
    let diag = info.chol_diag().unwrap();
    let mut d = crate::solver::dense::Mat::zeros(9, 9);
    for (i, row) in dense_of(&a).iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            d[(i, j)] = v;
        }
    }
    assert_eq!(
        crate::solver::dense::potrf(crate::solver::dense::Uplo::Lower, &mut d),
        0
    );
    for (k, &l) in diag.iter().enumerate() {
        assert!((l - d[(k, k)].re).abs() < 1e-12);
    }
    let det: f64 = diag.iter().map(|l| l * l).product();
    assert!(det > 0.0);
    assert!(Info::new(Method::Qr).chol_diag().is_err());
}
