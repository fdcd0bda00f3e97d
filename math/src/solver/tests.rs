//! Residual checks of the cuSOLVER calls against straightforward products,
//! through a device memory of one allocation.

use super::*;
use rcud_proto::math::solver::Call;

/// One allocation at `BASE`.
struct Memory {
    bytes: Vec<u8>,
}

const BASE: u64 = 0x1000_0000;

impl DeviceMemory for Memory {
    fn read(&self, ptr: u64, len: u64) -> Result<&[u8], Fault> {
        let fault = Fault { ptr, len };
        let start = ptr.checked_sub(BASE).ok_or(fault)? as usize;
        self.bytes.get(start..start + len as usize).ok_or(fault)
    }
    fn write(&mut self, ptr: u64, data: &[u8]) -> Result<(), Fault> {
        let fault = Fault {
            ptr,
            len: data.len() as u64,
        };
        let start = ptr.checked_sub(BASE).ok_or(fault)? as usize;
        self.bytes
            .get_mut(start..start + data.len())
            .ok_or(fault)?
            .copy_from_slice(data);
        Ok(())
    }
}

/// Regions of the test memory, 64 KiB apart.
fn at(slot: u64) -> u64 {
    BASE + slot * 0x1_0000
}

struct Fixture {
    state: State,
    memory: Memory,
    handle: u64,
}

impl Fixture {
    fn new() -> Self {
        let mut state = State::default();
        let mut memory = Memory {
            bytes: vec![0; 16 * 0x1_0000],
        };
        let reply = state.call(&mut memory, Call::Create {}).expect("create");
        let handle = u64::from_le_bytes(reply.out.try_into().expect("id"));
        Self {
            state,
            memory,
            handle,
        }
    }

    fn call(&mut self, call: Call) -> i32 {
        self.state
            .call(&mut self.memory, call)
            .expect("call")
            .status
    }

    fn put(&mut self, slot: u64, dtype: u8, m: &Mat) {
        Place::new(at(slot), m.rows.max(1) as i32, dtype)
            .write(&mut self.memory, m, m.cols)
            .expect("put");
    }

    fn get(&self, slot: u64, dtype: u8, rows: usize, cols: usize) -> Mat {
        self.get_ld(slot, dtype, rows, cols, rows.max(1))
    }

    fn get_ld(&self, slot: u64, dtype: u8, rows: usize, cols: usize, ld: usize) -> Mat {
        Place::new(at(slot), ld as i32, dtype)
            .read(&self.memory, rows, cols)
            .expect("get")
    }

    fn info(&self) -> i32 {
        read_ints(&self.memory, at(15), 1).expect("info")[0]
    }

    fn reals(&self, slot: u64, dtype: u8, count: usize) -> Vec<f64> {
        let size = real_size(dtype).expect("dtype") as usize;
        let bytes = self
            .memory
            .read(at(slot), (count * size) as u64)
            .expect("reals");
        bytes
            .chunks_exact(size)
            .map(|c| {
                if size == 4 {
                    f64::from(f32::from_le_bytes(c.try_into().expect("4")))
                } else {
                    f64::from_le_bytes(c.try_into().expect("8"))
                }
            })
            .collect()
    }
}

/// A deterministic pseudo-random matrix (complex only for C and Z).
fn sample(rows: usize, cols: usize, dtype: u8, seed: u64) -> Mat {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let mut m = Mat::zeros(rows, cols);
    for z in m.data.iter_mut() {
        let re = next();
        let im = if dtype >= 2 { next() } else { 0.0 };
        *z = C::new(re, im);
    }
    m
}

fn mul(a: &Mat, b: &Mat) -> Mat {
    let mut c = Mat::zeros(a.rows, b.cols);
    for j in 0..b.cols {
        for k in 0..a.cols {
            for i in 0..a.rows {
                c[(i, j)] += a[(i, k)] * b[(k, j)];
            }
        }
    }
    c
}

fn adjoint(a: &Mat) -> Mat {
    let mut t = Mat::zeros(a.cols, a.rows);
    for j in 0..a.cols {
        for i in 0..a.rows {
            t[(j, i)] = a[(i, j)].conj();
        }
    }
    t
}

fn max_diff(a: &Mat, b: &Mat) -> f64 {
    assert_eq!((a.rows, a.cols), (b.rows, b.cols));
    a.data
        .iter()
        .zip(&b.data)
        .map(|(x, y)| (x - y).norm())
        .fold(0.0, f64::max)
}

/// A tolerance for `dtype`'s precision on small matrices.
fn tol(dtype: u8) -> f64 {
    if dtype.is_multiple_of(2) {
        1e-4
    } else {
        1e-11
    }
}

/// Rounds a matrix to `dtype`, as storing it in device memory does.
fn rounded(m: &Mat, dtype: u8) -> Mat {
    let mut bytes = Vec::new();
    let mut out = m.clone();
    let es = element_size(dtype).expect("dtype") as usize;
    for z in out.data.iter_mut() {
        bytes.clear();
        encode(dtype, *z, &mut bytes);
        *z = decode(dtype, &bytes[..es]);
    }
    out
}

#[test]
fn getrf_getrs_solve_all_types() {
    for dtype in 0..4u8 {
        for trans in [OP_N, OP_T, OP_C] {
            let mut f = Fixture::new();
            let n = 5;
            let a = rounded(&sample(n, n, dtype, 1 + dtype as u64), dtype);
            let b = rounded(&sample(n, 2, dtype, 7), dtype);
            f.put(0, dtype, &a);
            f.put(1, dtype, &b);
            let h = f.handle;
            assert_eq!(
                f.call(Call::Getrf {
                    handle: h,
                    dtype,
                    m: 5,
                    n: 5,
                    a: at(0),
                    lda: 5,
                    ipiv: at(2),
                    info: at(15)
                }),
                0
            );
            assert_eq!(f.info(), 0);
            let ipiv = read_ints(&f.memory, at(2), n).expect("ipiv");
            assert!(
                ipiv.iter()
                    .enumerate()
                    .all(|(i, &p)| p as usize > i && p as usize <= n),
                "{ipiv:?}"
            );
            assert_eq!(
                f.call(Call::Getrs {
                    handle: h,
                    dtype,
                    trans,
                    n: 5,
                    nrhs: 2,
                    a: at(0),
                    lda: 5,
                    ipiv: at(2),
                    b: at(1),
                    ldb: 5,
                    info: at(15)
                }),
                0
            );
            let x = f.get(1, dtype, n, 2);
            let opa = match trans {
                OP_N => a.clone(),
                OP_T => {
                    let mut t = adjoint(&a);
                    t.data.iter_mut().for_each(|z| *z = z.conj());
                    t
                }
                _ => adjoint(&a),
            };
            assert!(
                max_diff(&mul(&opa, &x), &b) < 100.0 * tol(dtype),
                "dtype {dtype} trans {trans}"
            );
        }
    }
}

#[test]
fn getrf_packs_p_l_u_of_a_rectangular_matrix() {
    let mut f = Fixture::new();
    let (m, n) = (8, 3);
    let a = sample(m, n, 1, 3);
    f.put(0, 1, &a);
    let h = f.handle;
    assert_eq!(
        f.call(Call::Getrf {
            handle: h,
            dtype: 1,
            m: 8,
            n: 3,
            a: at(0),
            lda: 8,
            ipiv: at(2),
            info: at(15)
        }),
        0
    );
    let lu = f.get(0, 1, m, n);
    let ipiv = read_ints(&f.memory, at(2), n).expect("ipiv");
    let mut l = Mat::zeros(m, n);
    let mut u = Mat::zeros(n, n);
    for j in 0..n {
        for i in 0..m {
            if i > j {
                l[(i, j)] = lu[(i, j)];
            } else if i == j {
                l[(i, j)] = C::new(1.0, 0.0);
                u[(i, j)] = lu[(i, j)];
            } else {
                u[(i, j)] = lu[(i, j)];
            }
        }
    }
    // P A = L U with P the row swaps in order.
    let mut pa = a.clone();
    for (i, &p) in ipiv.iter().enumerate() {
        pa.swap_rows(i, p as usize - 1);
    }
    assert!(max_diff(&mul(&l, &u), &pa) < 1e-13);
    // Partial pivoting bounds L by 1.
    assert!(l.data.iter().all(|z| z.norm() <= 1.0 + 1e-15));
}

#[test]
fn getrf_reports_a_singular_pivot() {
    let mut f = Fixture::new();
    // Column 1 is twice column 0; with powers of two the elimination is
    // exact and U(2,2) is exactly zero.
    let mut a = Mat::zeros(3, 3);
    for (i, row) in [[2.0, 4.0, 1.0], [1.0, 2.0, 3.0], [4.0, 8.0, 5.0]]
        .iter()
        .enumerate()
    {
        for (j, &x) in row.iter().enumerate() {
            a[(i, j)] = C::new(x, 0.0);
        }
    }
    f.put(0, 1, &a);
    let h = f.handle;
    assert_eq!(
        f.call(Call::Getrf {
            handle: h,
            dtype: 1,
            m: 3,
            n: 3,
            a: at(0),
            lda: 3,
            ipiv: at(2),
            info: at(15)
        }),
        0
    );
    assert_eq!(f.info(), 2);
}

fn hermitian(n: usize, dtype: u8, seed: u64, shift: f64) -> Mat {
    let b = sample(n, n, dtype, seed);
    let mut a = mul(&b, &adjoint(&b));
    for i in 0..n {
        a[(i, i)] += shift;
        a[(i, i)].im = 0.0;
    }
    rounded(&a, dtype)
}

#[test]
fn potrf_potrs_solve_both_triangles() {
    for dtype in 0..4u8 {
        for uplo in [0, 1] {
            let mut f = Fixture::new();
            let n = 6;
            let a = hermitian(n, dtype, 11, 1.0);
            let b = rounded(&sample(n, 3, dtype, 12), dtype);
            f.put(0, dtype, &a);
            f.put(1, dtype, &b);
            let h = f.handle;
            assert_eq!(
                f.call(Call::Potrf {
                    handle: h,
                    dtype,
                    uplo,
                    n: 6,
                    a: at(0),
                    lda: 6,
                    info: at(15)
                }),
                0
            );
            assert_eq!(f.info(), 0);
            assert_eq!(
                f.call(Call::Potrs {
                    handle: h,
                    dtype,
                    uplo,
                    n: 6,
                    nrhs: 3,
                    a: at(0),
                    lda: 6,
                    b: at(1),
                    ldb: 6,
                    info: at(15)
                }),
                0
            );
            let x = f.get(1, dtype, n, 3);
            assert!(
                max_diff(&mul(&a, &x), &b) < 100.0 * tol(dtype),
                "dtype {dtype} uplo {uplo}"
            );
        }
    }
}

#[test]
fn potrf_reports_the_first_non_positive_minor() {
    let mut f = Fixture::new();
    let mut a = hermitian(5, 1, 4, 1.0);
    a[(3, 3)] = C::new(-100.0, 0.0);
    f.put(0, 1, &a);
    let h = f.handle;
    assert_eq!(
        f.call(Call::Potrf {
            handle: h,
            dtype: 1,
            uplo: 0,
            n: 5,
            a: at(0),
            lda: 5,
            info: at(15)
        }),
        0
    );
    assert_eq!(f.info(), 4);
}

#[test]
fn geqrf_ormqr_reconstruct_a() {
    for dtype in 0..4u8 {
        let mut f = Fixture::new();
        let (m, n) = (8, 3);
        let a = rounded(&sample(m, n, dtype, 21), dtype);
        f.put(0, dtype, &a);
        let h = f.handle;
        assert_eq!(
            f.call(Call::Geqrf {
                handle: h,
                dtype,
                m: 8,
                n: 3,
                a: at(0),
                lda: 8,
                tau: at(2),
                info: at(15)
            }),
            0
        );
        let qr = f.get(0, dtype, m, n);
        let mut r = Mat::zeros(m, n);
        for j in 0..n {
            for i in 0..=j {
                r[(i, j)] = qr[(i, j)];
            }
        }
        // Q R = A: Q applied from the left to R.
        f.put(3, dtype, &r);
        assert_eq!(
            f.call(Call::Ormqr {
                handle: h,
                dtype,
                side: 0,
                trans: OP_N,
                m: 8,
                n: 3,
                k: 3,
                a: at(0),
                lda: 8,
                tau: at(2),
                c: at(3),
                ldc: 8,
                info: at(15)
            }),
            0
        );
        assert!(
            max_diff(&f.get(3, dtype, m, n), &a) < 10.0 * tol(dtype),
            "dtype {dtype}"
        );
        // Qᴴ A = R.
        let adjoint_op = if dtype >= 2 { OP_C } else { OP_T };
        f.put(3, dtype, &a);
        assert_eq!(
            f.call(Call::Ormqr {
                handle: h,
                dtype,
                side: 0,
                trans: adjoint_op,
                m: 8,
                n: 3,
                k: 3,
                a: at(0),
                lda: 8,
                tau: at(2),
                c: at(3),
                ldc: 8,
                info: at(15)
            }),
            0
        );
        assert!(
            max_diff(&f.get(3, dtype, m, n), &r) < 10.0 * tol(dtype),
            "dtype {dtype}"
        );
        // From the right: (I Q) Qᴴ = I.
        let eye = Mat::identity(m);
        f.put(4, dtype, &eye);
        for trans in [OP_N, adjoint_op] {
            assert_eq!(
                f.call(Call::Ormqr {
                    handle: h,
                    dtype,
                    side: 1,
                    trans,
                    m: 8,
                    n: 8,
                    k: 3,
                    a: at(0),
                    lda: 8,
                    tau: at(2),
                    c: at(4),
                    ldc: 8,
                    info: at(15)
                }),
                0
            );
        }
        assert!(
            max_diff(&f.get(4, dtype, m, m), &eye) < 10.0 * tol(dtype),
            "dtype {dtype}"
        );
        // orgqr: Q's first 3 columns, orthonormal, with Q R = A.
        assert_eq!(
            f.call(Call::Orgqr {
                handle: h,
                dtype,
                m: 8,
                n: 3,
                k: 3,
                a: at(0),
                lda: 8,
                tau: at(2),
                info: at(15)
            }),
            0
        );
        let q = f.get(0, dtype, m, n);
        let mut r3 = Mat::zeros(n, n);
        for j in 0..n {
            for i in 0..=j {
                r3[(i, j)] = r[(i, j)];
            }
        }
        assert!(
            max_diff(&mul(&q, &r3), &a) < 10.0 * tol(dtype),
            "dtype {dtype}"
        );
        assert!(max_diff(&mul(&adjoint(&q), &q), &Mat::identity(n)) < 10.0 * tol(dtype));
        // A transpose-not-adjoint of a complex Q is refused, as cuSOLVER does.
        if dtype >= 2 {
            assert_eq!(
                f.call(Call::Ormqr {
                    handle: h,
                    dtype,
                    side: 0,
                    trans: OP_T,
                    m: 8,
                    n: 3,
                    k: 3,
                    a: at(0),
                    lda: 8,
                    tau: at(2),
                    c: at(3),
                    ldc: 8,
                    info: at(15)
                }),
                INVALID_VALUE
            );
        }
    }
}

#[test]
fn syevd_gives_ascending_eigenpairs() {
    for dtype in 0..4u8 {
        for uplo in [0, 1] {
            let mut f = Fixture::new();
            let n = 7;
            let a = hermitian(n, dtype, 31, -1.0);
            f.put(0, dtype, &a);
            let h = f.handle;
            assert_eq!(
                f.call(Call::Syevd {
                    handle: h,
                    dtype,
                    jobz: 1,
                    uplo,
                    n: 7,
                    a: at(0),
                    lda: 7,
                    w: at(1),
                    info: at(15)
                }),
                0
            );
            assert_eq!(f.info(), 0);
            let w = f.reals(1, dtype, n);
            assert!(w.windows(2).all(|p| p[0] <= p[1]), "{w:?}");
            let v = f.get(0, dtype, n, n);
            let mut vl = v.clone();
            for j in 0..n {
                for i in 0..n {
                    vl[(i, j)] *= w[j];
                }
            }
            assert!(
                max_diff(&mul(&a, &v), &vl) < 100.0 * tol(dtype),
                "dtype {dtype}"
            );
            assert!(max_diff(&mul(&adjoint(&v), &v), &Mat::identity(n)) < 10.0 * tol(dtype));
        }
    }
}

#[test]
fn gesvd_reconstructs_a_with_every_job() {
    for dtype in 0..4u8 {
        let (m, n) = (8, 3);
        let a = rounded(&sample(m, n, dtype, 41), dtype);
        for (jobu, jobvt) in [
            (b'A', b'A'),
            (b'S', b'S'),
            (b'O', b'S'),
            (b'S', b'O'),
            (b'N', b'N'),
        ] {
            let mut f = Fixture::new();
            f.put(0, dtype, &a);
            let h = f.handle;
            let call = Call::Gesvd {
                handle: h,
                dtype,
                jobu,
                jobvt,
                m: 8,
                n: 3,
                a: at(0),
                lda: 8,
                s: at(1),
                u: at(2),
                ldu: 8,
                vt: at(3),
                ldvt: 3,
                info: at(15),
            };
            assert_eq!(f.call(call), 0);
            assert_eq!(f.info(), 0);
            let s = f.reals(1, dtype, n);
            assert!(
                s.windows(2).all(|p| p[0] >= p[1]) && s[n - 1] >= 0.0,
                "{s:?}"
            );
            if jobu == b'N' {
                continue;
            }
            let u = if jobu == b'O' {
                f.get(0, dtype, m, n)
            } else {
                f.get(2, dtype, m, if jobu == b'A' { m } else { n })
            };
            let vt = if jobvt == b'O' {
                f.get_ld(0, dtype, n, n, m)
            } else {
                f.get(3, dtype, n, n)
            };
            let mut us = Mat::zeros(m, n);
            for j in 0..n {
                for i in 0..m {
                    us[(i, j)] = u[(i, j)] * s[j];
                }
            }
            assert!(
                max_diff(&mul(&us, &vt), &a) < 100.0 * tol(dtype),
                "dtype {dtype} {jobu} {jobvt}"
            );
            assert!(max_diff(&mul(&adjoint(&u), &u), &Mat::identity(u.cols)) < 10.0 * tol(dtype));
        }
    }
}

#[test]
fn gesvd_of_a_rank_deficient_matrix_has_orthonormal_u() {
    let mut a = sample(6, 4, 3, 51);
    for i in 0..6 {
        a[(i, 3)] = a[(i, 0)] + a[(i, 1)];
    }
    let svd = dense::gesvd(&a, a.rows).expect("svd");
    assert!(svd.s[3] < 1e-13);
    assert!(max_diff(&mul(&adjoint(&svd.u), &svd.u), &Mat::identity(6)) < 1e-12);
}

/// A tall matrix's full U: half of its columns come from completing the
/// basis (one pass over the unit vectors with a fixed bar left the last
/// four columns of a 64×32 matrix's U zero).
#[test]
fn gesvd_of_a_tall_matrix_has_a_complete_unitary_u() {
    for dtype in [1u8, 3] {
        let a = sample(64, 32, dtype, 52);
        let svd = dense::gesvd(&a, a.rows).expect("svd");
        assert!(
            max_diff(&mul(&adjoint(&svd.u), &svd.u), &Mat::identity(64)) < 1e-12,
            "dtype {dtype}"
        );
    }
}

#[test]
fn bad_arguments_and_handles_get_cusolver_statuses() {
    let mut f = Fixture::new();
    let h = f.handle;
    let getrf = |handle, lda, a| Call::Getrf {
        handle,
        dtype: 1,
        m: 4,
        n: 4,
        a,
        lda,
        ipiv: at(2),
        info: at(15),
    };
    assert_eq!(f.call(getrf(h, 3, at(0))), INVALID_VALUE);
    assert_eq!(
        f.call(Call::Getrf {
            handle: h,
            dtype: 1,
            m: -1,
            n: 4,
            a: at(0),
            lda: 4,
            ipiv: at(2),
            info: at(15)
        }),
        INVALID_VALUE
    );
    assert_eq!(
        f.call(Call::Getrf {
            handle: h,
            dtype: 9,
            m: 4,
            n: 4,
            a: at(0),
            lda: 4,
            ipiv: at(2),
            info: at(15)
        }),
        INVALID_VALUE
    );
    assert_eq!(f.call(getrf(h + 100, 4, at(0))), NOT_INITIALIZED);
    // Outside the memory: a fault, before anything is written.
    let err = f
        .state
        .call(&mut f.memory, getrf(h, 4, BASE - 64))
        .expect_err("fault");
    assert!(matches!(err, MathError::Fault(_)));
    let gesvd = Call::Gesvd {
        handle: h,
        dtype: 1,
        jobu: b'A',
        jobvt: b'A',
        m: 3,
        n: 8,
        a: at(0),
        lda: 8,
        s: at(1),
        u: at(2),
        ldu: 8,
        vt: at(3),
        ldvt: 8,
        info: at(15),
    };
    assert_eq!(f.call(gesvd), INVALID_VALUE);
    assert_eq!(f.call(Call::Destroy { handle: h }), 0);
    assert_eq!(f.call(getrf(h, 4, at(0))), NOT_INITIALIZED);
    assert_eq!(f.call(Call::Destroy { handle: h }), NOT_INITIALIZED);
}

/// Writes the device pointers `ptrs` at `slot`.
fn put_pointers(f: &mut Fixture, slot: u64, ptrs: &[u64]) {
    let bytes: Vec<u8> = ptrs.iter().flat_map(|p| p.to_le_bytes()).collect();
    f.memory.write(at(slot), &bytes).expect("pointers");
}

#[test]
fn potrf_potrs_batched_solve_each_matrix() {
    for dtype in 0..4u8 {
        let mut f = Fixture::new();
        let n = 5;
        // Matrix 0 positive definite, matrix 1 not (its info is the first
        // bad minor), matrix 2 positive definite again.
        let good = [hermitian(n, dtype, 41, 1.0), hermitian(n, dtype, 43, 1.0)];
        let mut bad = good[0].clone();
        bad[(2, 2)] = C::new(-100.0, 0.0);
        f.put(0, dtype, &good[0]);
        f.put(1, dtype, &bad);
        f.put(2, dtype, &good[1]);
        put_pointers(&mut f, 10, &[at(0), at(1), at(2)]);
        let h = f.handle;
        let status = f.call(Call::PotrfBatched {
            handle: h,
            dtype,
            uplo: 0,
            n: 5,
            a: at(10),
            lda: 5,
            info: at(15),
            batch: 3,
        });
        assert_eq!(status, 0);
        let infos = read_ints(&f.memory, at(15), 3).expect("infos");
        assert_eq!(infos, vec![0, 3, 0], "dtype {dtype}");
        // Solve with matrices 0 and 2 (the pointer array may repeat).
        let rhs = [
            rounded(&sample(n, 1, dtype, 44), dtype),
            rounded(&sample(n, 1, dtype, 45), dtype),
        ];
        f.put(3, dtype, &rhs[0]);
        f.put(4, dtype, &rhs[1]);
        put_pointers(&mut f, 11, &[at(0), at(2)]);
        put_pointers(&mut f, 12, &[at(3), at(4)]);
        let solve = |nrhs| Call::PotrsBatched {
            handle: h,
            dtype,
            uplo: 0,
            n: 5,
            nrhs,
            a: at(11),
            lda: 5,
            b: at(12),
            ldb: 5,
            info: at(15),
            batch: 2,
        };
        assert_eq!(f.call(solve(2)), INVALID_VALUE, "nrhs must be 1");
        assert_eq!(f.call(solve(1)), 0);
        for (k, slot) in [3, 4].into_iter().enumerate() {
            let x = f.get(slot, dtype, n, 1);
            assert!(
                max_diff(&mul(&good[k], &x), &rhs[k]) < 100.0 * tol(dtype),
                "dtype {dtype} matrix {k}"
            );
        }
    }
}

#[test]
fn batched_pointer_outside_memory_faults_before_writing() {
    let mut f = Fixture::new();
    let a = hermitian(4, 1, 7, 1.0);
    f.put(0, 1, &a);
    put_pointers(&mut f, 10, &[at(0), 0xdead_0000]);
    let h = f.handle;
    let got = f.state.call(
        &mut f.memory,
        Call::PotrfBatched {
            handle: h,
            dtype: 1,
            uplo: 0,
            n: 4,
            a: at(10),
            lda: 4,
            info: at(15),
            batch: 2,
        },
    );
    assert!(matches!(got, Err(MathError::Fault(_))), "{got:?}");
    // The first matrix was not factored either.
    assert_eq!(f.get(0, 1, 4, 4), a);
}

#[test]
fn syevj_batched_gives_each_matrix_its_eigenpairs() {
    for dtype in 0..4u8 {
        let mut f = Fixture::new();
        let (n, batch) = (6usize, 3usize);
        let mats: Vec<Mat> = (0..batch)
            .map(|k| hermitian(n, dtype, 50 + k as u64, -1.0))
            .collect();
        let mut stacked = Mat::zeros(n, n * batch);
        for (k, m) in mats.iter().enumerate() {
            stacked.data[k * n * n..(k + 1) * n * n].copy_from_slice(&m.data);
        }
        f.put(0, dtype, &stacked);
        let h = f.handle;
        let call = |batched, n: i32, batch| Call::Syevj {
            handle: h,
            dtype,
            jobz: 1,
            uplo: 1,
            n,
            a: at(0),
            lda: n.max(1),
            w: at(1),
            info: at(15),
            batch,
            batched,
            tol: 0.0,
            max_sweeps: 0,
            sort: 1,
        };
        assert_eq!(f.call(call(1, 33, 1)), INVALID_VALUE, "n > 32 batched");
        assert_eq!(f.call(call(0, 6, 3)), INVALID_VALUE, "batch, not batched");
        assert_eq!(f.call(call(1, 6, 3)), 0);
        assert_eq!(read_ints(&f.memory, at(15), 3).expect("info"), vec![0; 3]);
        let w = f.reals(1, dtype, n * batch);
        let vectors = f.get(0, dtype, n, n * batch);
        for (k, a) in mats.iter().enumerate() {
            let wk = &w[k * n..(k + 1) * n];
            assert!(wk.windows(2).all(|p| p[0] <= p[1]), "{wk:?}");
            let v = Mat {
                rows: n,
                cols: n,
                data: vectors.data[k * n * n..(k + 1) * n * n].to_vec(),
            };
            let mut vl = v.clone();
            for j in 0..n {
                for i in 0..n {
                    vl[(i, j)] *= wk[j];
                }
            }
            assert!(
                max_diff(&mul(a, &v), &vl) < 100.0 * tol(dtype),
                "dtype {dtype} matrix {k}"
            );
        }
    }
}

#[test]
fn gesvdj_reconstructs_tall_and_wide_matrices() {
    for dtype in 0..4u8 {
        for (m, n, econ, batched, batch) in [
            (5usize, 3usize, 0, 0u8, 1usize),
            (3, 5, 0, 0, 1),
            (5, 3, 1, 0, 1),
            (3, 5, 1, 0, 1),
            (4, 3, 0, 1, 2),
            (2, 4, 0, 1, 3),
        ] {
            let mut f = Fixture::new();
            let k = m.min(n);
            let mats: Vec<Mat> = (0..batch)
                .map(|b| rounded(&sample(m, n, dtype, 60 + b as u64), dtype))
                .collect();
            let mut stacked = Mat::zeros(m, n * batch);
            for (b, a) in mats.iter().enumerate() {
                stacked.data[b * m * n..(b + 1) * m * n].copy_from_slice(&a.data);
            }
            f.put(0, dtype, &stacked);
            let (ucols, vcols) = if econ == 1 { (k, k) } else { (m, n) };
            let h = f.handle;
            let status = f.call(Call::Gesvdj {
                handle: h,
                dtype,
                jobz: 1,
                econ,
                m: m as i32,
                n: n as i32,
                a: at(0),
                lda: m as i32,
                s: at(1),
                u: at(2),
                ldu: m as i32,
                v: at(3),
                ldv: n as i32,
                info: at(15),
                batch: batch as i32,
                batched,
                tol: 0.0,
                max_sweeps: 0,
                sort: 1,
            });
            assert_eq!(status, 0, "dtype {dtype} {m}x{n}");
            assert_eq!(
                read_ints(&f.memory, at(15), batch).expect("info"),
                vec![0; batch]
            );
            let s = f.reals(1, dtype, k * batch);
            let us = f.get(2, dtype, m, ucols * batch);
            let vs = f.get(3, dtype, n, vcols * batch);
            for (b, a) in mats.iter().enumerate() {
                let u = &us.data[b * m * ucols..];
                let v = &vs.data[b * n * vcols..];
                let sb = &s[b * k..(b + 1) * k];
                assert!(sb.windows(2).all(|p| p[0] >= p[1]), "{sb:?}");
                for i in 0..m {
                    for j in 0..n {
                        let x: C = (0..k)
                            .map(|l| u[i + l * m] * sb[l] * v[j + l * n].conj())
                            .sum();
                        assert!(
                            (x - a[(i, j)]).norm() < 100.0 * tol(dtype),
                            "dtype {dtype} {m}x{n} econ {econ} matrix {b} A[{i},{j}]"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn gesvdj_batched_refuses_large_matrices() {
    let mut f = Fixture::new();
    let h = f.handle;
    let status = f.call(Call::Gesvdj {
        handle: h,
        dtype: 1,
        jobz: 0,
        econ: 0,
        m: 33,
        n: 2,
        a: at(0),
        lda: 33,
        s: at(1),
        u: at(2),
        ldu: 33,
        v: at(3),
        ldv: 2,
        info: at(15),
        batch: 1,
        batched: 1,
        tol: 0.0,
        max_sweeps: 0,
        sort: 1,
    });
    assert_eq!(status, INVALID_VALUE);
}

/// A singular integer matrix (rank 2, CuPy's `lstsq` test): Jacobi's
/// rotations must stop once the null column is negligible, not chase its
/// rounding noise until the sweep limit.
#[test]
fn gesvd_of_a_singular_integer_matrix_converges() {
    let mut a = Mat::zeros(3, 3);
    for (i, x) in [4.0, 4.0, 2.0, 4.0, 4.0, 4.0, 2.0, 2.0, 5.0]
        .into_iter()
        .enumerate()
    {
        a.data[i] = C::new(x, 0.0);
    }
    let svd = dense::gesvd(&a, a.rows).expect("converges");
    assert!(svd.s[2] < 1e-14, "{:?}", svd.s);
    let (u, vt) = (&svd.u, &svd.vt);
    let mut us = u.clone();
    for j in 0..3 {
        for i in 0..3 {
            us[(i, j)] *= svd.s[j];
        }
    }
    assert!(max_diff(&mul(&us, vt), &a) < 1e-13);
}

/// Runs `Xgeev` on `a` (slot 0) with both eigenvector sets: W in slot 1,
/// VL in 2, VR in 3, info in 4. Answers (status, info).
fn geev_call(f: &mut Fixture, dtype: u8, w_real: u8, a: &Mat) -> (i32, i32) {
    let n = a.rows as i32;
    f.put(0, dtype, a);
    let status = f.call(Call::Geev {
        handle: f.handle,
        dtype,
        w_real,
        jobvl: 1,
        jobvr: 1,
        n,
        a: at(0),
        lda: n.max(1),
        w: at(1),
        vl: at(2),
        ldvl: n.max(1),
        vr: at(3),
        ldvr: n.max(1),
        info: at(15),
    });
    (status, f.info())
}

/// The complex eigenvalues and eigenvectors of a `geev_call`, with a real
/// matrix's pairs of real columns assembled into complex vectors as
/// LAPACK documents them.
fn geev_results(f: &Fixture, dtype: u8, n: usize) -> (Vec<C>, Mat, Mat) {
    let complex = dtype >= 2;
    let w_dtype = if complex { dtype } else { dtype + 2 };
    let w = f.get(1, w_dtype, n, 1).data;
    let assemble = |m: Mat| {
        if complex {
            return m;
        }
        let mut out = Mat::zeros(n, n);
        let mut j = 0;
        while j < n {
            if w[j].im == 0.0 {
                for i in 0..n {
                    out[(i, j)] = m[(i, j)];
                }
                j += 1;
            } else {
                assert!(j + 1 < n, "a complex eigenvalue without its pair");
                assert_eq!(w[j + 1], w[j].conj(), "pairs are exact conjugates");
                assert!(w[j].im > 0.0, "the positive imaginary part first");
                for i in 0..n {
                    let v = C::new(m[(i, j)].re, m[(i, j + 1)].re);
                    out[(i, j)] = v;
                    out[(i, j + 1)] = v.conj();
                }
                j += 2;
            }
        }
        out
    };
    let vl = assemble(f.get(2, dtype, n, n));
    let vr = assemble(f.get(3, dtype, n, n));
    (w, vl, vr)
}

fn check_eigenpairs(a: &Mat, w: &[C], vl: &Mat, vr: &Mat, dtype: u8) {
    let n = a.rows;
    let scale = a.data.iter().map(|z| z.norm()).fold(1.0, f64::max) * n as f64;
    let lambda = {
        let mut d = Mat::zeros(n, n);
        for (i, &x) in w.iter().enumerate() {
            d[(i, i)] = x;
        }
        d
    };
    let right = max_diff(&mul(a, vr), &mul(vr, &lambda));
    assert!(
        right <= tol(dtype) * scale,
        "A V - V Λ = {right} (n {n}, dtype {dtype})"
    );
    let left = max_diff(&mul(&adjoint(vl), a), &mul(&lambda, &adjoint(vl)));
    assert!(
        left <= tol(dtype) * scale,
        "Uᴴ A - Λ Uᴴ = {left} (n {n}, dtype {dtype})"
    );
    for m in [vl, vr] {
        for j in 0..n {
            let col: Vec<C> = (0..n).map(|i| m[(i, j)]).collect();
            let norm = col.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
            assert!(
                (norm - 1.0).abs() <= tol(dtype),
                "column {j} has norm {norm}"
            );
            let big = col
                .iter()
                .copied()
                .max_by(|a, b| a.norm().total_cmp(&b.norm()))
                .expect("column");
            assert!(
                big.im.abs() <= tol(dtype),
                "largest component {big} is not real"
            );
        }
    }
}

#[test]
fn geev_gives_left_and_right_eigenpairs_of_every_type() {
    for dtype in 0..4u8 {
        for (n, seed) in [(1, 1), (2, 2), (5, 3), (12, 4), (31, 5)] {
            let mut f = Fixture::new();
            let a = rounded(&sample(n, n, dtype, seed), dtype);
            assert_eq!(geev_call(&mut f, dtype, 0, &a), (0, 0));
            let (w, vl, vr) = geev_results(&f, dtype, n);
            check_eigenpairs(&a, &w, &vl, &vr, dtype);
        }
    }
}

#[test]
fn geev_of_a_real_matrix_pairs_conjugates_and_keeps_real_eigenvalues_real() {
    // A rotation by 90° in the first plane (±i), a real eigenvalue 3, and a
    // 2×2 block with eigenvalues 1 ± 2i.
    let mut a = Mat::zeros(5, 5);
    for (i, j, x) in [
        (0, 1, -1.0),
        (1, 0, 1.0),
        (2, 2, 3.0),
        (3, 3, 1.0),
        (3, 4, 2.0),
        (4, 3, -2.0),
        (4, 4, 1.0),
    ] {
        a[(i, j)] = C::new(x, 0.0);
    }
    for dtype in [0u8, 1] {
        let mut f = Fixture::new();
        assert_eq!(geev_call(&mut f, dtype, 0, &a), (0, 0));
        let (w, vl, vr) = geev_results(&f, dtype, 5);
        check_eigenpairs(&a, &w, &vl, &vr, dtype);
        let mut sorted: Vec<(f64, f64)> = w.iter().map(|z| (z.re, z.im)).collect();
        sorted.sort_by(|x, y| x.partial_cmp(y).expect("finite"));
        let expected = [(0.0, -1.0), (0.0, 1.0), (1.0, -2.0), (1.0, 2.0), (3.0, 0.0)];
        for (got, want) in sorted.iter().zip(expected) {
            assert!((got.0 - want.0).abs() < tol(dtype) && (got.1 - want.1).abs() < tol(dtype));
        }
        let three = w.iter().find(|z| (z.re - 3.0).abs() < 1e-3).expect("3");
        assert_eq!(three.im, 0.0, "a real eigenvalue stays exactly real");

        // W as 2n reals: real parts, then imaginary parts, in the same
        // order.
        let mut g = Fixture::new();
        assert_eq!(geev_call(&mut g, dtype, 1, &a), (0, 0));
        let parts = g.get(1, dtype, 10, 1).data;
        for (k, z) in w.iter().enumerate() {
            assert_eq!((parts[k].re, parts[5 + k].re), (z.re, z.im));
        }
    }
}

#[test]
fn geev_of_defective_and_degenerate_matrices_gives_finite_vectors() {
    // Jordan blocks (the long one would overflow an unscaled
    // substitution), the zero matrix, and the identity.
    let jordan = |n: usize| {
        let mut m = Mat::zeros(n, n);
        for i in 0..n {
            m[(i, i)] = C::new(2.0, 0.0);
            if i + 1 < n {
                m[(i, i + 1)] = C::new(1.0, 0.0);
            }
        }
        m
    };
    for (a, value) in [
        (jordan(3), 2.0),
        (jordan(40), 2.0),
        (Mat::zeros(4, 4), 0.0),
        (Mat::identity(4), 1.0),
    ] {
        for dtype in 0..4u8 {
            let mut f = Fixture::new();
            let n = a.rows;
            assert_eq!(geev_call(&mut f, dtype, 0, &a), (0, 0));
            let (w, _, vr) = geev_results(&f, dtype, n);
            // A defective eigenvalue is only accurate to ε^(1/k).
            assert!(w.iter().all(|z| (z - C::new(value, 0.0)).norm() < 1e-2));
            assert!(
                vr.data.iter().all(|z| z.re.is_finite() && z.im.is_finite()),
                "{value} {dtype} {w:?} {vr:?}"
            );
            let right = max_diff(&mul(&a, &vr), &{
                let mut m = vr.clone();
                for j in 0..n {
                    for i in 0..n {
                        m[(i, j)] *= w[j];
                    }
                }
                m
            });
            assert!(right < 1e-2, "A V - V Λ = {right}");
        }
    }
}

#[test]
fn geev_reports_nan_input_and_refuses_bad_arguments() {
    let mut f = Fixture::new();
    let mut a = sample(3, 3, 1, 9);
    a[(1, 2)] = C::new(f64::NAN, 0.0);
    assert_eq!(
        geev_call(&mut f, 1, 0, &a),
        (0, 3),
        "info = n: nothing converged"
    );

    let good = Call::Geev {
        handle: f.handle,
        dtype: 3,
        w_real: 0,
        jobvl: 0,
        jobvr: 1,
        n: 4,
        a: at(0),
        lda: 4,
        w: at(1),
        vl: 0,
        ldvl: 1,
        vr: at(3),
        ldvr: 4,
        info: at(15),
    };
    assert_eq!(f.call(good.clone()), 0, "no left vectors: VL may be NULL");
    let with = |edit: &dyn Fn(&mut Call)| {
        let mut call = good.clone();
        edit(&mut call);
        call
    };
    for (what, call) in [
        (
            "jobvr 2",
            with(&|c| {
                if let Call::Geev { jobvr, .. } = c {
                    *jobvr = 2
                }
            }),
        ),
        (
            "ldvr < n",
            with(&|c| {
                if let Call::Geev { ldvr, .. } = c {
                    *ldvr = 3
                }
            }),
        ),
        (
            "ldvl 0",
            with(&|c| {
                if let Call::Geev { ldvl, .. } = c {
                    *ldvl = 0
                }
            }),
        ),
        (
            "lda < n",
            with(&|c| {
                if let Call::Geev { lda, .. } = c {
                    *lda = 3
                }
            }),
        ),
        (
            "n < 0",
            with(&|c| {
                if let Call::Geev { n, .. } = c {
                    *n = -1
                }
            }),
        ),
        (
            "real W of complex A",
            with(&|c| {
                if let Call::Geev { w_real, .. } = c {
                    *w_real = 1
                }
            }),
        ),
    ] {
        assert_eq!(f.call(call), INVALID_VALUE, "{what}");
    }
    let unknown = with(&|c| {
        if let Call::Geev { handle, .. } = c {
            *handle += 100;
        }
    });
    assert_eq!(f.call(unknown), NOT_INITIALIZED);
}

/// Runs `call` on `f` with a deadline that has already passed.
fn past_deadline(f: &mut Fixture, call: Call) -> Result<i32, crate::deadline::Expired> {
    crate::deadline::within(Some(std::time::Instant::now()), || f.call(call))
}

#[test]
fn cubic_calls_stop_at_their_deadline() {
    // Each does O(n³) work on O(n²) bytes: without the checks in their
    // loops a request naming a large matrix held the server for hours.
    let n = 48;
    let d = 1u8;
    let mut f = Fixture::new();
    f.put(0, d, &hermitian(n, d, 5, 0.0));
    let h = f.handle;
    let (a, info) = (at(0), at(15));
    let calls = [
        Call::Syevd {
            handle: h,
            dtype: d,
            jobz: 1,
            uplo: 0,
            n: n as i32,
            a,
            lda: n as i32,
            w: at(1),
            info,
        },
        Call::Gesvd {
            handle: h,
            dtype: d,
            jobu: b'A',
            jobvt: b'A',
            m: n as i32,
            n: n as i32,
            a,
            lda: n as i32,
            s: at(1),
            u: at(2),
            ldu: n as i32,
            vt: at(3),
            ldvt: n as i32,
            info,
        },
        Call::Geev {
            handle: h,
            dtype: d,
            w_real: 1,
            jobvl: 1,
            jobvr: 1,
            n: n as i32,
            a,
            lda: n as i32,
            w: at(1),
            vl: at(2),
            ldvl: n as i32,
            vr: at(3),
            ldvr: n as i32,
            info,
        },
    ];
    for call in calls {
        let name = format!("{call:?}").chars().take(8).collect::<String>();
        assert_eq!(
            past_deadline(&mut f, call.clone()),
            Err(crate::deadline::Expired),
            "{name}"
        );
        // The same call with time to spare finishes.
        assert_eq!(f.call(call), 0, "{name}");
        assert_eq!(f.info(), 0, "{name}");
    }
}

#[test]
fn a_tall_svd_without_u_never_forms_the_square_u() {
    // m × 1 with jobu = 'N': all of U would be m² entries (16 TiB here),
    // and the server aborted on the allocation.
    let m: usize = 1 << 20;
    let d = 1u8;
    let mut memory = Memory {
        bytes: vec![0; (m + 64) * 8],
    };
    let a = BASE;
    let x: Vec<u8> = (0..m)
        .flat_map(|i| ((i % 7) as f64).to_le_bytes())
        .collect();
    memory.write(a, &x).expect("A");
    let (s, info) = (BASE + (m * 8) as u64, BASE + (m * 8 + 32) as u64);
    let mut state = State::default();
    let reply = state.call(&mut memory, Call::Create {}).expect("create");
    let handle = u64::from_le_bytes(reply.out.try_into().expect("id"));
    let call = Call::Gesvd {
        handle,
        dtype: d,
        jobu: b'N',
        jobvt: b'N',
        m: m as i32,
        n: 1,
        a,
        lda: m as i32,
        s,
        u: 0,
        ldu: 1,
        vt: 0,
        ldvt: 1,
        info,
    };
    assert_eq!(state.call(&mut memory, call).expect("gesvd").status, 0);
    let norm = (0..m).map(|i| ((i % 7) as f64).powi(2)).sum::<f64>().sqrt();
    let got = f64::from_le_bytes(memory.read(s, 8).expect("s").try_into().expect("f64"));
    assert!((got - norm).abs() < 1e-9 * norm, "{got} vs {norm}");
}

#[test]
fn gesvda_gives_the_leading_triplets_of_each_matrix_and_the_residual() {
    let (m, n, rank, batch) = (9usize, 4usize, 3usize, 2usize);
    for dtype in 0..4u8 {
        let mut f = Fixture::new();
        // Two matrices 40 rows apart in one slot (stride > lda * n).
        let stride_a = (m * n + 5) as i64;
        let mats: Vec<Mat> = (0..batch)
            .map(|i| rounded(&sample(m, n, dtype, 70 + i as u64), dtype))
            .collect();
        let es = element_size(dtype).expect("dtype");
        for (i, a) in mats.iter().enumerate() {
            Place::new(at(0) + i as u64 * stride_a as u64 * es, m as i32, dtype)
                .write(&mut f.memory, a, n)
                .expect("A");
        }
        let call = Call::Gesvda {
            handle: f.handle,
            dtype,
            jobz: 1,
            rank: rank as i32,
            m: m as i32,
            n: n as i32,
            a: at(0),
            lda: m as i32,
            stride_a,
            s: at(1),
            stride_s: rank as i64,
            u: at(2),
            ldu: m as i32,
            stride_u: (m * rank) as i64,
            v: at(3),
            ldv: n as i32,
            stride_v: (n * rank) as i64,
            info: at(15),
            batch: batch as i32,
        };
        let reply = f.state.call(&mut f.memory, call.clone()).expect("gesvda");
        assert_eq!(reply.status, 0, "dtype {dtype}");
        let residuals: Vec<f64> = reply
            .out
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("f64")))
            .collect();
        assert_eq!(residuals.len(), batch);
        let all_s = f.reals(1, dtype, rank * batch);
        for (i, a) in mats.iter().enumerate() {
            let full = dense::gesvd(a, 0).expect("svd").s;
            let s = &all_s[i * rank..(i + 1) * rank];
            for k in 0..rank {
                assert!(
                    (s[k] - full[k]).abs() < 10.0 * tol(dtype),
                    "dtype {dtype} σ{k}"
                );
            }
            // What the rank-3 approximation leaves out is the 4th value.
            assert!(
                (residuals[i] - full[rank]).abs() < 100.0 * tol(dtype),
                "dtype {dtype}: residual {} vs σ4 {}",
                residuals[i],
                full[rank]
            );
            let es = es as usize;
            let u = Place::new(at(2) + (i * m * rank * es) as u64, m as i32, dtype)
                .read(&f.memory, m, rank)
                .expect("U");
            let v = Place::new(at(3) + (i * n * rank * es) as u64, n as i32, dtype)
                .read(&f.memory, n, rank)
                .expect("V");
            // A V = U S, column by column.
            let av = mul(a, &v);
            for k in 0..rank {
                for r in 0..m {
                    assert!(
                        (av[(r, k)] - u[(r, k)] * s[k]).norm() < 100.0 * tol(dtype),
                        "dtype {dtype}: (AV)[{r},{k}]"
                    );
                }
            }
        }
        assert_eq!(f.info(), 0);
        // cuSOLVER's argument rules.
        let bad = |change: fn(&mut Call)| {
            let mut c = call.clone();
            change(&mut c);
            c
        };
        for wrong in [
            bad(|c| {
                if let Call::Gesvda { rank, .. } = c {
                    *rank = 0;
                }
            }),
            bad(|c| {
                if let Call::Gesvda { rank, .. } = c {
                    *rank = 5;
                }
            }),
            bad(|c| {
                if let Call::Gesvda { m, .. } = c {
                    *m = 3;
                }
            }),
            bad(|c| {
                if let Call::Gesvda { stride_a, .. } = c {
                    *stride_a = 20;
                }
            }),
            bad(|c| {
                if let Call::Gesvda { jobz, .. } = c {
                    *jobz = 2;
                }
            }),
        ] {
            assert_eq!(f.call(wrong), INVALID_VALUE, "dtype {dtype}");
        }
    }
}

/// cusolverRf's wire calls on the emulated device: a 2×2 system set up
/// from device arrays, refactored with new values, solved in place and
/// extracted; unknown objects, bad permutations and ranges outside memory.
#[test]
fn rf_calls_set_up_refactor_solve_and_extract() {
    let mut f = Fixture::new();
    let ints = |f: &mut Fixture, slot: u64, v: &[i32]| {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        f.memory.write(at(slot), &bytes).expect("ints");
    };
    let doubles = |f: &mut Fixture, slot: u64, v: &[f64]| {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        f.memory.write(at(slot), &bytes).expect("doubles");
    };
    // A = [[0, 2], [1, 1]]: P = [1, 0] swaps the rows, L = I (assumed
    // diagonal: no entries), U = [[1, 1], [0, 2]].
    ints(&mut f, 0, &[0, 1, 3]);
    ints(&mut f, 1, &[1, 0, 1]);
    doubles(&mut f, 2, &[2.0, 1.0, 1.0]);
    ints(&mut f, 3, &[0, 0, 0]);
    ints(&mut f, 4, &[0, 2, 3]);
    ints(&mut f, 5, &[0, 1, 1]);
    doubles(&mut f, 6, &[1.0, 1.0, 2.0]);
    ints(&mut f, 7, &[1, 0]);
    ints(&mut f, 8, &[0, 1]);
    let setup = |q: u64| Call::RfSetup {
        rf: 7,
        n: 2,
        nnz_a: 3,
        a: [at(0), at(1), at(2)],
        nnz_l: 0,
        l: [at(3), at(9), at(9)],
        nnz_u: 3,
        u: [at(4), at(5), at(6)],
        p: at(7),
        q,
        diag: 2,
    };
    let reply = f.state.call(&mut f.memory, setup(at(8))).expect("setup");
    assert_eq!(reply.status, 0);
    assert_eq!(
        reply.out,
        [3, 0, 0, 0, 0, 0, 0, 0],
        "3 entries in M, none strictly lower"
    );
    // New values: A = [[0, 4], [2, 1]]; b = (4, 3) gives x = (1, 1).
    doubles(&mut f, 2, &[4.0, 2.0, 1.0]);
    let reset = Call::RfResetValues {
        rf: 7,
        n: 2,
        nnz_a: 3,
        a: [at(0), at(1), at(2)],
        p: at(7),
        q: at(8),
    };
    assert_eq!(f.call(reset.clone()), 0);
    assert_eq!(
        f.call(Call::RfRefactor {
            rf: 7,
            zero: 0.0,
            boost: 0.0
        }),
        0
    );
    doubles(&mut f, 10, &[4.0, 3.0]);
    let solve = |rf: u64, nrhs: i32| Call::RfSolve {
        rf,
        n: 2,
        p: at(7),
        q: at(8),
        nrhs,
        temp: at(11),
        ldt: 2,
        xf: at(10),
        ldxf: 2,
    };
    assert_eq!(f.call(solve(7, 1)), 0);
    let x = f.memory.read(at(10), 16).expect("x").to_vec();
    let x: Vec<f64> = x
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8")))
        .collect();
    assert!(
        (x[0] - 1.0).abs() < 1e-15 && (x[1] - 1.0).abs() < 1e-15,
        "{x:?}"
    );
    // The bundle: rows (0, 1 | 1) of U = [[2, 1], [0, 4]].
    let extract = |nnz_l: i32| Call::RfExtract {
        rf: 7,
        n: 2,
        diag: -1,
        nnz_l,
        l: [at(12), at(13), at(14)],
        nnz_u: 0,
        u: [0; 3],
    };
    assert_eq!(f.call(extract(3)), 0);
    let m = f.memory.read(at(14), 24).expect("m").to_vec();
    let m: Vec<f64> = m
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8")))
        .collect();
    assert_eq!(m, [2.0, 1.0, 4.0]);
    // A wrong count, an unknown object, nrhs 2, a Q that is not a
    // permutation, a range outside memory.
    assert_eq!(f.call(extract(4)), INVALID_VALUE);
    assert_eq!(f.call(solve(8, 1)), NOT_INITIALIZED);
    assert_eq!(f.call(solve(7, 2)), INVALID_VALUE);
    ints(&mut f, 15, &[0, 0]);
    assert_eq!(f.call(setup(at(15))), INVALID_VALUE);
    assert!(f.state.call(&mut f.memory, setup(at(16) + 4)).is_err());
    assert_eq!(f.call(Call::RfDestroy { rf: 7 }), 0);
    assert_eq!(f.call(reset), NOT_INITIALIZED);
}

/// cusolverRfBatch*'s wire calls: three 2×2 matrices on one pattern set
/// up, refactored (one with a zero pivot), solved through a device array
/// of pointers, reset with new values; bad batches and pointers refused.
#[test]
fn rf_batch_calls_refactor_and_solve_each_matrix() {
    let mut f = Fixture::new();
    let put = |f: &mut Fixture, ptr: u64, bytes: Vec<u8>| {
        f.memory.write(ptr, &bytes).expect("write");
    };
    let ints = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let doubles = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let pointers = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let read = |f: &Fixture, ptr: u64| -> Vec<f64> {
        f.memory
            .read(ptr, 16)
            .expect("x")
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8")))
            .collect()
    };
    // Three right-hand sides in one region.
    let (x0, x1, x2) = (at(15), at(15) + 16, at(15) + 32);
    // A_j = [[0, a], [b, c]] (entries (0,1), (1,0), (1,1)); P = [1, 0].
    put(&mut f, at(0), ints(&[0, 1, 3]));
    put(&mut f, at(1), ints(&[1, 0, 1]));
    put(&mut f, at(2), doubles(&[2.0, 1.0, 1.0]));
    put(&mut f, at(10), doubles(&[4.0, 2.0, 1.0]));
    put(&mut f, at(12), doubles(&[0.0, 1.0, 1.0]));
    put(&mut f, at(13), pointers(&[at(2), at(10), at(12)]));
    put(&mut f, at(3), ints(&[0, 0, 0]));
    put(&mut f, at(4), ints(&[0, 2, 3]));
    put(&mut f, at(5), ints(&[0, 1, 1]));
    put(&mut f, at(6), doubles(&[1.0, 1.0, 2.0]));
    put(&mut f, at(7), ints(&[1, 0]));
    put(&mut f, at(8), ints(&[0, 1]));
    let setup = |batch: i32, values: u64| Call::RfBatchSetup {
        rf: 9,
        batch,
        n: 2,
        nnz_a: 3,
        a: [at(0), at(1), values],
        nnz_l: 0,
        l: [at(3), at(9), at(9)],
        nnz_u: 3,
        u: [at(4), at(5), at(6)],
        p: at(7),
        q: at(8),
        diag: 2,
    };
    let refactor = Call::RfBatchRefactor {
        rf: 9,
        zero: 0.0,
        boost: 0.0,
    };
    let solve = |batch: i32| Call::RfBatchSolve {
        rf: 9,
        batch,
        n: 2,
        p: at(7),
        q: at(8),
        nrhs: 1,
        temp: at(11),
        ldt: 2,
        xf: at(14),
        ldxf: 2,
    };
    // Before the setup, and a batch of none.
    assert_eq!(f.call(refactor.clone()), NOT_INITIALIZED);
    assert_eq!(f.call(setup(0, at(13))), INVALID_VALUE);
    let reply = f
        .state
        .call(&mut f.memory, setup(3, at(13)))
        .expect("setup");
    assert_eq!((reply.status, reply.out), (0, vec![3, 0, 0, 0, 0, 0, 0, 0]));
    let reply = f
        .state
        .call(&mut f.memory, refactor.clone())
        .expect("refactor");
    assert_eq!(reply.status, 0);
    let mut pivots = ints(&[-1, -1, 1]);
    pivots.push(0);
    assert_eq!(reply.out, pivots, "the third matrix's U(1,1) is 0");
    // b_0 = (2, 2) and b_1 = (4, 3): x = (1, 1) for both.
    put(&mut f, x0, doubles(&[2.0, 2.0]));
    put(&mut f, x1, doubles(&[4.0, 3.0]));
    put(&mut f, x2, doubles(&[1.0, 1.0]));
    put(&mut f, at(14), pointers(&[x0, x1, x2]));
    assert_eq!(f.call(solve(3)), 0);
    for ptr in [x0, x1] {
        let x = read(&f, ptr);
        assert!(x.iter().all(|v| (v - 1.0).abs() < 1e-15), "{ptr:#x}: {x:?}");
    }
    // New values for all three: A_2 = [[0, 2], [1, 1]] too.
    put(&mut f, at(12), doubles(&[2.0, 1.0, 1.0]));
    let reset = |batch: i32, values: u64| Call::RfBatchResetValues {
        rf: 9,
        batch,
        n: 2,
        nnz_a: 3,
        a: [at(0), at(1), values],
        p: at(7),
        q: at(8),
    };
    assert_eq!(f.call(reset(3, at(13))), 0);
    let reply = f
        .state
        .call(&mut f.memory, refactor.clone())
        .expect("refactor");
    let mut none = ints(&[-1, -1, -1]);
    none.push(0);
    assert_eq!(reply.out, none);
    put(&mut f, x2, doubles(&[2.0, 2.0]));
    assert_eq!(f.call(solve(3)), 0);
    let x = read(&f, x2);
    assert!(x.iter().all(|v| (v - 1.0).abs() < 1e-15), "{x:?}");
    // Another batch size, a pointer outside memory (nothing changes), a
    // P that is not the setup's, the single API on a batched object.
    assert_eq!(f.call(reset(2, at(13))), INVALID_VALUE);
    assert_eq!(f.call(solve(4)), INVALID_VALUE);
    put(&mut f, at(13) + 64, pointers(&[at(2), BASE - 64, at(12)]));
    assert!(f.state.call(&mut f.memory, reset(3, at(13) + 64)).is_err());
    put(&mut f, at(14), pointers(&[x0, x1, BASE - 64]));
    put(&mut f, x0, doubles(&[2.0, 2.0]));
    assert!(f.state.call(&mut f.memory, solve(3)).is_err());
    assert_eq!(read(&f, x0), [2.0, 2.0], "nothing written");
    put(&mut f, at(8) + 64, ints(&[0, 1]));
    let wrong_p = Call::RfBatchResetValues {
        rf: 9,
        batch: 3,
        n: 2,
        nnz_a: 3,
        a: [at(0), at(1), at(13)],
        p: at(8) + 64,
        q: at(8),
    };
    assert_eq!(f.call(wrong_p), INVALID_VALUE);
    assert_eq!(
        f.call(Call::RfRefactor {
            rf: 9,
            zero: 0.0,
            boost: 0.0
        }),
        NOT_INITIALIZED
    );
    // A batch whose copies would pass the server's bound is refused
    // before they are made.
    let huge = 1 << 23;
    f.memory.bytes.resize(17 * 0x1_0000 + huge * 8, 0);
    f.memory
        .write(at(17), &pointers(&vec![at(2); huge]))
        .expect("pointer array");
    assert_eq!(f.call(setup(huge as i32, at(17))), ALLOC_FAILED);
    assert_eq!(f.call(Call::RfDestroy { rf: 9 }), 0);
    assert_eq!(f.call(refactor), NOT_INITIALIZED);
}

#[test]
fn a_client_cannot_pile_up_solver_objects_on_the_server() {
    let mut f = Fixture::new();
    let words = |f: &mut Fixture, slot: u64, v: &[u8]| f.memory.write(at(slot), v).expect("write");
    let ints = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    // A = L U = [[2]]: one entry.
    words(&mut f, 0, &ints(&[0, 1]));
    words(&mut f, 1, &ints(&[0]));
    words(&mut f, 2, &2.0f64.to_le_bytes());
    words(&mut f, 3, &ints(&[0, 0]));
    words(&mut f, 7, &ints(&[0]));
    let setup = |rf: u64| Call::RfSetup {
        rf,
        n: 1,
        nnz_a: 1,
        a: [at(0), at(1), at(2)],
        nnz_l: 0,
        l: [at(3), at(9), at(9)],
        nnz_u: 1,
        u: [at(0), at(1), at(2)],
        p: at(7),
        q: at(7),
        diag: 2,
    };
    for rf in 0..OBJECTS as u64 {
        assert_eq!(f.call(setup(rf)), 0, "object {rf}");
    }
    assert_eq!(f.call(setup(OBJECTS as u64)), ALLOC_FAILED);
    assert_eq!(f.call(Call::RfDestroy { rf: 0 }), 0);
    assert_eq!(f.call(setup(OBJECTS as u64)), 0, "room again");
}

#[test]
fn hostile_irs_calls_are_bounded_refused_or_fault() {
    let mut f = Fixture::new();
    let mut a = Mat::identity(4);
    for (i, z) in a.data.iter_mut().enumerate() {
        *z += C::new(0.1 * (i % 5) as f64, 0.0);
    }
    f.put(0, 1, &a);
    f.put(1, 1, &Mat::identity(4));
    let irs = |handle: u64, lowest: i32, max_iters: i32, x: u64| Call::Irs {
        handle,
        dtype: 1,
        lowest,
        gels: 0,
        m: 4,
        n: 4,
        nrhs: 4,
        a: at(0),
        lda: 4,
        ipiv: at(3),
        b: at(1),
        ldb: 4,
        x,
        ldx: 4,
        info: at(15),
        refine: rcud_proto::math::solver::REFINE_CLASSICAL,
        max_iters,
        tol: 1e-300,
        fallback: 0,
        history: 1,
    };
    // A refinement that cannot converge (a tolerance no residual meets), asked for 2³¹ steps: the server
    // stops at its own bound, and the history is bounded with it.
    let reply = f
        .state
        .call(&mut f.memory, irs(f.handle, 1205, i32::MAX, at(2)))
        .expect("call");
    assert_eq!(reply.status, 0);
    let niters = i32::from_le_bytes(reply.out[..4].try_into().expect("niters"));
    assert_eq!(niters, -10_000);
    assert!(
        reply.out.len() <= 4 + 8 * 10_001,
        "{} bytes",
        reply.out.len()
    );
    // A lowest precision wider than the main one, negative iterations.
    assert_eq!(f.call(irs(f.handle, 1213, 50, at(2))), INVALID_VALUE);
    assert_eq!(f.call(irs(f.handle, 1205, -1, at(2))), INVALID_VALUE);
    // X past the end of the memory faults before anything is written.
    let before = f.get(1, 1, 4, 4);
    let err = f
        .state
        .call(&mut f.memory, irs(f.handle, 1205, 50, at(16) - 64))
        .expect_err("outside the memory");
    assert!(matches!(err, MathError::Fault(_)), "{err:?}");
    assert_eq!(f.get(1, 1, 4, 4), before);
    // A NaN in A is a breakdown, never a converged solution.
    let mut nan = Mat::identity(4);
    nan[(1, 2)] = C::new(f64::NAN, 0.0);
    f.put(0, 1, &nan);
    let reply = f
        .state
        .call(&mut f.memory, irs(f.handle, 1205, 50, at(2)))
        .expect("call");
    let niters = i32::from_le_bytes(reply.out[..4].try_into().expect("niters"));
    assert!(niters < 0, "a NaN system converged in {niters} steps");
}

/// The tridiagonal tridiag(−1, 2, −1) of order n in CSR at slots 0 (values,
/// doubles), 1 (row offsets) and 2 (columns); answers nnz.
fn put_tridiagonal(f: &mut Fixture, n: usize) -> i32 {
    let (mut rowptr, mut colind, mut values) = (vec![0i32], Vec::new(), Vec::new());
    for i in 0..n {
        for j in i.saturating_sub(1)..(i + 2).min(n) {
            colind.push(j as i32);
            values.extend_from_slice(&(if i == j { 2.0f64 } else { -1.0 }).to_le_bytes());
        }
        rowptr.push(colind.len() as i32);
    }
    f.memory.write(at(0), &values).expect("values");
    write_ints(&mut f.memory, at(1), &rowptr).expect("offsets");
    write_ints(&mut f.memory, at(2), &colind).expect("columns");
    colind.len() as i32
}

#[test]
fn sparse_eigvsi_and_chol_diag_on_the_device() {
    let n = 16;
    let mut f = Fixture::new();
    let nnz = put_tridiagonal(&mut f, n);
    let ones: Vec<u8> = (0..n).flat_map(|_| 1.0f64.to_le_bytes()).collect();
    f.memory.write(at(3), &ones).expect("x0");
    let handle = f.handle;
    let eigvsi = |maxite: i32, x: u64| Call::SpEigvsi {
        handle,
        dtype: 1,
        m: n as i32,
        nnz,
        base: 0,
        val: at(0),
        rowptr: at(1),
        colind: at(2),
        mu0_re: 0.0,
        mu0_im: 0.0,
        x0: at(3),
        maxite,
        eps: 1e-12,
        mu: at(4),
        x,
    };
    let (good, no_steps) = (eigvsi(100, at(5)), eigvsi(0, at(5)));
    assert_eq!(
        past_deadline(&mut f, good.clone()),
        Err(crate::deadline::Expired)
    );
    assert_eq!(f.call(good), 0);
    let mu = f.reals(4, 1, 1)[0];
    let lambda1 = 2.0 - 2.0 * (std::f64::consts::PI / (n + 1) as f64).cos();
    assert!((mu - lambda1).abs() < 1e-9, "{mu} vs {lambda1}");
    assert_eq!(f.call(no_steps), INVALID_VALUE);
    // x past the memory: refused before anything is written.
    let outside = eigvsi(100, at(16));
    assert!(f.state.call(&mut f.memory, outside).is_err());

    // csrcholDiag after the analysis and factor of the same matrix.
    let info = 0x7010;
    let (h, m) = (f.handle, n as i32);
    let diag = |n: i32| Call::SpCholDiag {
        handle: h,
        info,
        dtype: 1,
        n,
        diag: at(6),
    };
    assert_eq!(f.call(diag(m)), INVALID_VALUE, "no analysis yet");
    let analysis = Call::SpAnalysis {
        handle: h,
        info,
        method: rcud_proto::math::solver::SP_CHOL,
        m,
        n: m,
        nnz,
        base: 0,
        rowptr: at(1),
        colind: at(2),
    };
    assert_eq!(f.call(analysis), 0);
    assert_eq!(f.call(diag(m)), INVALID_VALUE, "no factor yet");
    let factor = Call::SpFactor {
        handle: h,
        info,
        dtype: 1,
        m,
        n: m,
        nnz,
        val: at(0),
        b: 0,
        x: 0,
    };
    assert_eq!(f.call(factor), 0);
    assert_eq!(f.call(diag(m - 1)), INVALID_VALUE, "n differs");
    assert_eq!(f.call(diag(m)), 0);
    // L(k,k) of tridiag(−1, 2, −1) is sqrt((k + 2) / (k + 1)).
    for (k, l) in f.reals(6, 1, n).into_iter().enumerate() {
        let expect = ((k + 2) as f64 / (k + 1) as f64).sqrt();
        assert!((l - expect).abs() < 1e-12, "L({k},{k}) = {l}");
    }
}

#[test]
fn sparse_qr_batched_solves_each_system_with_its_own_values() {
    let n = 8usize;
    let batch = 3usize;
    let mut f = Fixture::new();
    // The pattern of tridiag(−1, 2, −1); system j's values are (j + 1)
    // times it, and its right-hand side is all ones.
    let nnz = put_tridiagonal(&mut f, n);
    let one = f.memory.read(at(0), nnz as u64 * 8).expect("values");
    let mut values = Vec::new();
    for j in 0..batch {
        for c in one.chunks_exact(8) {
            let v = f64::from_le_bytes(c.try_into().expect("8"));
            values.extend_from_slice(&(v * (j + 1) as f64).to_le_bytes());
        }
    }
    f.memory.write(at(3), &values).expect("batched values");
    let ones: Vec<u8> = (0..n * batch).flat_map(|_| 1.0f64.to_le_bytes()).collect();
    f.memory.write(at(4), &ones).expect("b");
    let (h, m, info) = (f.handle, n as i32, 0x7020);
    let solve = |batch: i32, m: i32| Call::SpQrsvBatched {
        handle: h,
        info,
        dtype: 1,
        m,
        n: n as i32,
        nnz,
        val: at(3),
        b: at(4),
        x: at(5),
        batch,
    };
    assert_eq!(f.call(solve(3, m)), INVALID_VALUE, "no analysis yet");
    let analysis = Call::SpAnalysis {
        handle: h,
        info,
        method: rcud_proto::math::solver::SP_QR,
        m,
        n: m,
        nnz,
        base: 0,
        rowptr: at(1),
        colind: at(2),
    };
    assert_eq!(f.call(analysis), 0);
    assert_eq!(f.call(solve(3, m + 1)), INVALID_VALUE, "m differs");
    assert_eq!(
        past_deadline(&mut f, solve(3, m)),
        Err(crate::deadline::Expired)
    );
    assert_eq!(f.call(solve(3, m)), 0);
    // tridiag(−1, 2, −1) x = 1 has x_i = (i + 1)(n − i) / 2; system j's
    // solution is that over j + 1.
    let x = f.reals(5, 1, n * batch);
    for j in 0..batch {
        for i in 0..n {
            let expect = ((i + 1) * (n - i)) as f64 / 2.0 / (j + 1) as f64;
            let got = x[j * n + i];
            assert!(
                (got - expect).abs() < 1e-12,
                "system {j} x[{i}] = {got}, expected {expect}"
            );
        }
    }
    // Operands past the memory: refused before anything is written.
    assert!(f.state.call(&mut f.memory, solve(1 << 20, m)).is_err());
}
