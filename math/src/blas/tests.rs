//! cuBLAS on the CPU against naive reference loops.

use num_complex::Complex64 as Z;
use rcud_proto::math::blas::{dtype, level1, Call, Operand, Scalar};

use super::elem::{load, store};
use super::State;
use crate::{DeviceMemory, Fault, MathError};

/// Device memory of separate allocations, as the server checks it.
#[derive(Default)]
struct Memory {
    allocations: Vec<(u64, Vec<u8>)>,
    /// Reads after which [`DeviceMemory::expired`] says the time is up.
    reads_until_expired: Option<std::cell::Cell<u64>>,
}

impl DeviceMemory for Memory {
    fn read(&self, ptr: u64, len: u64) -> Result<&[u8], Fault> {
        if let Some(left) = &self.reads_until_expired {
            left.set(left.get().saturating_sub(1));
        }
        for (base, data) in &self.allocations {
            if ptr >= *base && ptr + len <= base + data.len() as u64 {
                let at = (ptr - base) as usize;
                return Ok(&data[at..at + len as usize]);
            }
        }
        Err(Fault { ptr, len })
    }
    fn write(&mut self, ptr: u64, bytes: &[u8]) -> Result<(), Fault> {
        for (base, data) in &mut self.allocations {
            if ptr >= *base && ptr + bytes.len() as u64 <= *base + data.len() as u64 {
                let at = (ptr - *base) as usize;
                data[at..at + bytes.len()].copy_from_slice(bytes);
                return Ok(());
            }
        }
        Err(Fault {
            ptr,
            len: bytes.len() as u64,
        })
    }
    fn expired(&self) -> bool {
        self.reads_until_expired
            .as_ref()
            .is_some_and(|r| r.get() == 0)
    }
}

impl Memory {
    /// Allocates `values` stored as `dt` and answers the address.
    fn put(&mut self, dt: u8, values: &[Z]) -> u64 {
        let base = 0x1000_0000 * (self.allocations.len() as u64 + 1);
        self.allocations
            .push((base, store(dt, values).expect("type")));
        base
    }
    fn get(&self, dt: u8, ptr: u64, len: usize) -> Vec<Z> {
        let size = dtype::size(dt).expect("type");
        load(dt, self.read(ptr, len as u64 * size).expect("range")).expect("type")
    }
}

/// Deterministic test values (complex parts dropped for real types when
/// stored).
fn values(n: usize, seed: u64, complex: bool) -> Vec<Z> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 33) % 2001) as f64 / 1000.0 - 1.0
    };
    (0..n)
        .map(|_| {
            let re = next();
            let im = if complex { next() } else { 0.0 };
            Z::new(re, im)
        })
        .collect()
}

fn host(v: Z) -> Scalar {
    Scalar::Host { re: v.re, im: v.im }
}

fn op(ptr: u64, ld: i64) -> Operand {
    Operand { ptr, ld, stride: 0 }
}

fn assert_close(got: &[Z], want: &[Z], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).norm() <= tol * (1.0 + w.norm()),
            "element {i}: got {g}, want {w}"
        );
    }
}

const TYPES: [(u8, f64); 4] = [
    (dtype::R32F, 1e-5),
    (dtype::R64F, 1e-12),
    (dtype::C32F, 1e-5),
    (dtype::C64F, 1e-12),
];

fn new_handle(state: &mut State, memory: &mut Memory) -> u64 {
    let reply = state.call(memory, Call::Create {}).expect("create");
    u64::from_le_bytes(reply.out.try_into().expect("8 bytes"))
}

/// `op(X)(i, j)` for a column-major matrix with leading dimension `ld`.
fn op_elem(x: &[Z], ld: usize, trans: i32, i: usize, j: usize) -> Z {
    match trans {
        0 => x[i + j * ld],
        1 => x[j + i * ld],
        _ => x[j + i * ld].conj(),
    }
}

#[test]
fn gemm_all_types_transposes_and_leading_dimensions() {
    let (m, n, k) = (5, 4, 3);
    for (dt, tol) in TYPES {
        let complex = dtype::is_complex(dt);
        for transa in [0, 1, 2] {
            for transb in [0, 1, 2] {
                let mut memory = Memory::default();
                let mut state = State::default();
                let handle = new_handle(&mut state, &mut memory);
                let (ar, ac) = if transa == 0 { (m, k) } else { (k, m) };
                let (br, bc) = if transb == 0 { (k, n) } else { (n, k) };
                let (lda, ldb, ldc) = (ar + 2, br + 1, m + 3);
                let round = |v: Vec<Z>| load::<Z>(dt, &store(dt, &v).unwrap()).unwrap();
                let a = round(values(lda * ac, 1, complex));
                let b = round(values(ldb * bc, 2, complex));
                let c = round(values(ldc * n, 3, complex));
                let (pa, pb, pc) = (memory.put(dt, &a), memory.put(dt, &b), memory.put(dt, &c));
                let alpha = if complex {
                    Z::new(0.5, -1.25)
                } else {
                    Z::new(1.5, 0.0)
                };
                let beta = if complex {
                    Z::new(-0.75, 0.5)
                } else {
                    Z::new(-2.0, 0.0)
                };
                let reply = state
                    .call(
                        &mut memory,
                        Call::Gemm {
                            handle,
                            types: [dt; 4],
                            transa,
                            transb,
                            m: m as i64,
                            n: n as i64,
                            k: k as i64,
                            alpha: host(alpha),
                            a: op(pa, lda as i64),
                            b: op(pb, ldb as i64),
                            beta: host(beta),
                            c: op(pc, ldc as i64),
                            batch: 1,
                            pointer_arrays: false,
                        },
                    )
                    .expect("gemm");
                assert_eq!(reply.status, 0);
                let mut want = c.clone();
                for j in 0..n {
                    for i in 0..m {
                        let s: Z = (0..k)
                            .map(|l| {
                                op_elem(&a, lda, transa, i, l) * op_elem(&b, ldb, transb, l, j)
                            })
                            .sum();
                        want[i + j * ldc] = alpha * s + beta * c[i + j * ldc];
                    }
                }
                // Padding rows between the columns stay as they were.
                assert_close(&memory.get(dt, pc, ldc * n), &want, tol);
            }
        }
    }
}

/// With beta zero C is not read: NaNs in it do not reach the result, and
/// the rows between its columns stay as they were.
#[test]
fn gemm_with_beta_zero_ignores_c() {
    let (m, n, k, ldc) = (3, 2, 2, 5);
    for dt in [dtype::R32F, dtype::R64F] {
        let mut memory = Memory::default();
        let mut state = State::default();
        let handle = new_handle(&mut state, &mut memory);
        let a = values(m * k, 1, false);
        let b = values(k * n, 2, false);
        let c = vec![Z::new(f64::NAN, 0.0); ldc * n];
        let (pa, pb, pc) = (memory.put(dt, &a), memory.put(dt, &b), memory.put(dt, &c));
        let call = Call::Gemm {
            handle,
            types: [dt; 4],
            transa: 0,
            transb: 0,
            m: m as i64,
            n: n as i64,
            k: k as i64,
            alpha: host(Z::new(1.0, 0.0)),
            a: op(pa, m as i64),
            b: op(pb, k as i64),
            beta: host(Z::new(0.0, 0.0)),
            c: op(pc, ldc as i64),
            batch: 1,
            pointer_arrays: false,
        };
        assert_eq!(state.call(&mut memory, call).expect("gemm").status, 0);
        let got = memory.get(dt, pc, ldc * n);
        for j in 0..n {
            for i in 0..ldc {
                let v = got[i + j * ldc];
                if i < m {
                    let want: Z = (0..k).map(|l| a[i + l * m] * b[l + j * k]).sum();
                    assert!(
                        (v - want).norm() < 1e-5,
                        "{dt} c({i},{j}) = {v}, want {want}"
                    );
                } else {
                    assert!(v.re.is_nan(), "{dt}: padding row {i} of column {j} written");
                }
            }
        }
    }
}

#[test]
fn gemm_batched_strided_pointer_arrays_and_half_inputs() {
    let (m, n, k, batch) = (3, 2, 4, 3);
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    // FP16 A and B, FP32 C and compute, strided.
    let round16 = |v: Vec<Z>| load::<Z>(dtype::R16F, &store(dtype::R16F, &v).unwrap()).unwrap();
    let a = round16(values(m * k * batch, 4, false));
    let b = round16(values(k * n * batch, 5, false));
    let pa = memory.put(dtype::R16F, &a);
    let pb = memory.put(dtype::R16F, &b);
    let pc = memory.put(dtype::R32F, &vec![Z::new(f64::NAN, 0.0); m * n * batch]);
    let strided = |ptr, ld, stride| Operand { ptr, ld, stride };
    let reply = state
        .call(
            &mut memory,
            Call::Gemm {
                handle,
                types: [dtype::R16F, dtype::R16F, dtype::R32F, dtype::R32F],
                transa: 0,
                transb: 0,
                m: m as i64,
                n: n as i64,
                k: k as i64,
                alpha: host(Z::new(1.0, 0.0)),
                a: strided(pa, m as i64, (m * k) as i64),
                b: strided(pb, k as i64, (k * n) as i64),
                // beta = 0: the NaNs in C must not propagate.
                beta: host(Z::new(0.0, 0.0)),
                c: strided(pc, m as i64, (m * n) as i64),
                batch: batch as i64,
                pointer_arrays: false,
            },
        )
        .expect("gemm");
    assert_eq!(reply.status, 0);
    let mut want = vec![Z::new(0.0, 0.0); m * n * batch];
    for p in 0..batch {
        for j in 0..n {
            for i in 0..m {
                want[p * m * n + i + j * m] = (0..k)
                    .map(|l| a[p * m * k + i + l * m] * b[p * k * n + l + j * k])
                    .sum();
            }
        }
    }
    assert_close(&memory.get(dtype::R32F, pc, m * n * batch), &want, 1e-5);

    // The same products through device arrays of pointers (batched), in
    // f64 with alpha and beta read from device memory.
    let dt = dtype::R64F;
    let pa = memory.put(dt, &a);
    let pb = memory.put(dt, &b);
    let c0 = values(m * n * batch, 6, false);
    let pc = memory.put(dt, &c0);
    let ptrs = |base: u64, each: usize| -> Vec<u8> {
        (0..batch)
            .flat_map(|p| (base + (p * each * 8) as u64).to_le_bytes())
            .collect()
    };
    let base = 0x1000_0000 * (memory.allocations.len() as u64 + 1);
    memory.allocations.push((base, ptrs(pa, m * k)));
    let arr_a = base;
    let base = base + 0x1000_0000;
    memory.allocations.push((base, ptrs(pb, k * n)));
    let arr_b = base;
    let base = base + 0x1000_0000;
    memory.allocations.push((base, ptrs(pc, m * n)));
    let arr_c = base;
    let scalars = memory.put(dt, &[Z::new(2.0, 0.0), Z::new(1.0, 0.0)]);
    let reply = state
        .call(
            &mut memory,
            Call::Gemm {
                handle,
                types: [dt; 4],
                transa: 0,
                transb: 0,
                m: m as i64,
                n: n as i64,
                k: k as i64,
                alpha: Scalar::Device { ptr: scalars },
                a: op(arr_a, m as i64),
                b: op(arr_b, k as i64),
                beta: Scalar::Device { ptr: scalars + 8 },
                c: op(arr_c, m as i64),
                batch: batch as i64,
                pointer_arrays: true,
            },
        )
        .expect("gemm");
    assert_eq!(reply.status, 0);
    let want: Vec<Z> = want.iter().zip(&c0).map(|(p, c)| 2.0 * p + c).collect();
    assert_close(&memory.get(dt, pc, m * n * batch), &want, 1e-12);
}

#[allow(clippy::too_many_arguments)]
fn level1(
    state: &mut State,
    memory: &mut Memory,
    handle: u64,
    op_: u8,
    dt: u8,
    n: i64,
    x: Operand,
    y: Operand,
    alpha: Z,
    beta: Z,
) -> Vec<u8> {
    let reply = state
        .call(
            memory,
            Call::Level1 {
                handle,
                op: op_,
                dtype: dt,
                scalar_dtype: dt,
                n,
                x,
                y,
                alpha: host(alpha),
                beta: host(beta),
                result: 0,
            },
        )
        .expect("level 1");
    assert_eq!(reply.status, 0);
    reply.out
}

#[test]
fn level1_reductions_and_updates_with_increments() {
    for (dt, tol) in TYPES {
        let complex = dtype::is_complex(dt);
        let mut memory = Memory::default();
        let mut state = State::default();
        let handle = new_handle(&mut state, &mut memory);
        let n = 6;
        let round = |v: Vec<Z>| load::<Z>(dt, &store(dt, &v).unwrap()).unwrap();
        let x = round(values(n * 2, 7, complex));
        let y = round(values(n * 3, 8, complex));
        let (px, py) = (memory.put(dt, &x), memory.put(dt, &y));
        // x with increment 2, y with -3 (from its end, as in BLAS).
        let xi = |i: usize| x[i * 2];
        let yi = |i: usize| y[(n - 1 - i) * 3];
        let (ox, oy) = (op(px, 2), op(py, -3));
        let scalar = |out: Vec<u8>, d| load::<Z>(d, &out).unwrap()[0];
        let real = if dt == dtype::R32F || dt == dtype::C32F {
            dtype::R32F
        } else {
            dtype::R64F
        };

        let dotc = scalar(
            level1(
                &mut state,
                &mut memory,
                handle,
                level1::DOTC,
                dt,
                n as i64,
                ox,
                oy,
                Z::default(),
                Z::default(),
            ),
            dt,
        );
        let want: Z = (0..n).map(|i| xi(i).conj() * yi(i)).sum();
        assert_close(&[dotc], &[want], tol);
        let dotu = scalar(
            level1(
                &mut state,
                &mut memory,
                handle,
                level1::DOTU,
                dt,
                n as i64,
                ox,
                oy,
                Z::default(),
                Z::default(),
            ),
            dt,
        );
        let want: Z = (0..n).map(|i| xi(i) * yi(i)).sum();
        assert_close(&[dotu], &[want], tol);
        let nrm2 = scalar(
            level1(
                &mut state,
                &mut memory,
                handle,
                level1::NRM2,
                dt,
                n as i64,
                ox,
                oy,
                Z::default(),
                Z::default(),
            ),
            real,
        );
        let want = (0..n).map(|i| xi(i).norm_sqr()).sum::<f64>().sqrt();
        assert_close(&[nrm2], &[Z::new(want, 0.0)], tol);
        let asum = scalar(
            level1(
                &mut state,
                &mut memory,
                handle,
                level1::ASUM,
                dt,
                n as i64,
                ox,
                oy,
                Z::default(),
                Z::default(),
            ),
            real,
        );
        let want: f64 = (0..n).map(|i| xi(i).re.abs() + xi(i).im.abs()).sum();
        assert_close(&[asum], &[Z::new(want, 0.0)], tol);
        let mag: Vec<f64> = (0..n).map(|i| xi(i).re.abs() + xi(i).im.abs()).collect();
        let amax = i32::from_le_bytes(
            level1(
                &mut state,
                &mut memory,
                handle,
                level1::AMAX,
                dt,
                n as i64,
                ox,
                oy,
                Z::default(),
                Z::default(),
            )
            .try_into()
            .unwrap(),
        );
        let best = (0..n).fold(0, |b, i| if mag[i] > mag[b] { i } else { b });
        assert_eq!(amax as usize, best + 1);
        let amin = i32::from_le_bytes(
            level1(
                &mut state,
                &mut memory,
                handle,
                level1::AMIN,
                dt,
                n as i64,
                ox,
                oy,
                Z::default(),
                Z::default(),
            )
            .try_into()
            .unwrap(),
        );
        let best = (0..n).fold(0, |b, i| if mag[i] < mag[b] { i } else { b });
        assert_eq!(amin as usize, best + 1);

        // axpy into y (increment -3), then rot of x and y.
        let alpha = if complex {
            Z::new(0.5, 2.0)
        } else {
            Z::new(0.5, 0.0)
        };
        level1(
            &mut state,
            &mut memory,
            handle,
            level1::AXPY,
            dt,
            n as i64,
            ox,
            oy,
            alpha,
            Z::default(),
        );
        let y_now = memory.get(dt, py, n * 3);
        let mut want = y.clone();
        for i in 0..n {
            want[(n - 1 - i) * 3] = alpha * xi(i) + yi(i);
        }
        assert_close(&y_now, &want, tol);
        let (c, s) = (
            Z::new(0.6, 0.0),
            if complex {
                Z::new(0.0, 0.8)
            } else {
                Z::new(0.8, 0.0)
            },
        );
        level1(
            &mut state,
            &mut memory,
            handle,
            level1::ROT,
            dt,
            n as i64,
            ox,
            oy,
            c,
            s,
        );
        let (x_rot, y_rot) = (memory.get(dt, px, n * 2), memory.get(dt, py, n * 3));
        for i in 0..n {
            let (a, b) = (xi(i), y_now[(n - 1 - i) * 3]);
            assert_close(&[x_rot[i * 2]], &[c * a + s * b], tol);
            assert_close(&[y_rot[(n - 1 - i) * 3]], &[c * b - s.conj() * a], tol);
        }
        // scal and swap leave the elements between the strides alone.
        level1(
            &mut state,
            &mut memory,
            handle,
            level1::SCAL,
            dt,
            n as i64,
            ox,
            oy,
            Z::new(2.0, 0.0),
            Z::default(),
        );
        let scaled = memory.get(dt, px, n * 2);
        for i in 0..n * 2 {
            let want = if i % 2 == 0 { 2.0 * x_rot[i] } else { x_rot[i] };
            assert_close(&[scaled[i]], &[want], tol);
        }
        level1(
            &mut state,
            &mut memory,
            handle,
            level1::SWAP,
            dt,
            n as i64,
            ox,
            oy,
            Z::default(),
            Z::default(),
        );
        let (xs, ys) = (memory.get(dt, px, n * 2), memory.get(dt, py, n * 3));
        for i in 0..n {
            assert_close(&[xs[i * 2]], &[y_rot[(n - 1 - i) * 3]], tol);
            assert_close(&[ys[(n - 1 - i) * 3]], &[scaled[i * 2]], tol);
        }
    }
}

#[test]
fn level2_gemv_ger_symv_hemv_trmv_trsv() {
    for (dt, tol) in TYPES {
        let complex = dtype::is_complex(dt);
        let mut memory = Memory::default();
        let mut state = State::default();
        let handle = new_handle(&mut state, &mut memory);
        let round = |v: Vec<Z>| load::<Z>(dt, &store(dt, &v).unwrap()).unwrap();
        let (m, n, lda) = (4, 3, 6);
        let a = round(values(lda * n, 9, complex));
        let pa = memory.put(dt, &a);
        for trans in [0, 1, 2] {
            let (lx, ly) = if trans == 0 { (n, m) } else { (m, n) };
            let x = round(values(lx, 10, complex));
            let y = round(values(ly, 11, complex));
            let (px, py) = (memory.put(dt, &x), memory.put(dt, &y));
            let (alpha, beta) = (Z::new(1.5, -0.5), Z::new(0.25, 1.0));
            let (alpha, beta) = if complex {
                (alpha, beta)
            } else {
                (Z::new(alpha.re, 0.0), Z::new(beta.re, 0.0))
            };
            let reply = state
                .call(
                    &mut memory,
                    Call::Gemv {
                        handle,
                        dtype: dt,
                        trans,
                        m: m as i64,
                        n: n as i64,
                        alpha: host(alpha),
                        a: op(pa, lda as i64),
                        x: op(px, 1),
                        beta: host(beta),
                        y: op(py, 1),
                    },
                )
                .expect("gemv");
            assert_eq!(reply.status, 0);
            let want: Vec<Z> = (0..ly)
                .map(|i| {
                    alpha
                        * (0..lx)
                            .map(|j| op_elem(&a, lda, trans, i, j) * x[j])
                            .sum::<Z>()
                        + beta * y[i]
                })
                .collect();
            assert_close(&memory.get(dt, py, ly), &want, tol);
        }
        // gerc: A += alpha x y^H.
        let x = round(values(m, 12, complex));
        let y = round(values(n, 13, complex));
        let (px, py) = (memory.put(dt, &x), memory.put(dt, &y));
        let alpha = if complex {
            Z::new(0.5, 0.5)
        } else {
            Z::new(0.5, 0.0)
        };
        let a_before = memory.get(dt, pa, lda * n);
        state
            .call(
                &mut memory,
                Call::Ger {
                    handle,
                    dtype: dt,
                    conj: true,
                    m: m as i64,
                    n: n as i64,
                    alpha: host(alpha),
                    x: op(px, 1),
                    y: op(py, 1),
                    a: op(pa, lda as i64),
                },
            )
            .expect("ger");
        let mut want = a_before.clone();
        for j in 0..n {
            for i in 0..m {
                want[i + j * lda] += alpha * x[i] * y[j].conj();
            }
        }
        assert_close(&memory.get(dt, pa, lda * n), &want, tol);

        // symv / hemv from the lower triangle.
        let nn = 3;
        let s = round(values(lda * nn, 14, complex));
        let ps = memory.put(dt, &s);
        let x = round(values(nn, 15, complex));
        let y = round(values(nn, 16, complex));
        let (px, py) = (memory.put(dt, &x), memory.put(dt, &y));
        let hermitian = complex;
        state
            .call(
                &mut memory,
                Call::Symv {
                    handle,
                    dtype: dt,
                    hermitian,
                    uplo: 0,
                    n: nn as i64,
                    alpha: host(Z::new(1.0, 0.0)),
                    a: op(ps, lda as i64),
                    x: op(px, 1),
                    beta: host(Z::new(1.0, 0.0)),
                    y: op(py, 1),
                },
            )
            .expect("symv");
        let full = |i: usize, j: usize| {
            if i == j && hermitian {
                Z::new(s[i + i * lda].re, 0.0)
            } else if i >= j {
                s[i + j * lda]
            } else if hermitian {
                s[j + i * lda].conj()
            } else {
                s[j + i * lda]
            }
        };
        let want: Vec<Z> = (0..nn)
            .map(|i| (0..nn).map(|j| full(i, j) * x[j]).sum::<Z>() + y[i])
            .collect();
        assert_close(&memory.get(dt, py, nn), &want, tol);

        // trmv then trsv with the same triangle gives x back.
        for (uplo, trans, diag) in [(0, 0, 0), (1, 1, 0), (0, 2, 1), (1, 0, 1)] {
            let mut t = round(values(lda * nn, 17, complex));
            for i in 0..nn {
                t[i + i * lda] += Z::new(3.0, 0.0); // well conditioned
            }
            let pt = memory.put(dt, &t);
            let x = round(values(nn, 18, complex));
            let px = memory.put(dt, &x);
            for solve in [false, true] {
                state
                    .call(
                        &mut memory,
                        Call::Trmv {
                            handle,
                            dtype: dt,
                            solve,
                            uplo,
                            trans,
                            diag,
                            n: nn as i64,
                            a: op(pt, lda as i64),
                            x: op(px, 1),
                        },
                    )
                    .expect("trmv");
            }
            assert_close(&memory.get(dt, px, nn), &x, tol * 10.0);
        }
    }
}

#[test]
fn level3_symm_syrk_herk_trmm_trsm_geam_dgmm() {
    for (dt, tol) in TYPES {
        let complex = dtype::is_complex(dt);
        let mut memory = Memory::default();
        let mut state = State::default();
        let handle = new_handle(&mut state, &mut memory);
        let round = |v: Vec<Z>| load::<Z>(dt, &store(dt, &v).unwrap()).unwrap();
        let (m, n, ld) = (4usize, 3usize, 5usize);
        let one = Z::new(1.0, 0.0);

        // syrk / herk (upper triangle), trans N: C = A A^T (A^H).
        let k = 2;
        let a = round(values(ld * k, 20, complex));
        let c = round(values(ld * n, 21, complex));
        let (pa, pc) = (memory.put(dt, &a), memory.put(dt, &c));
        let hermitian = complex;
        state
            .call(
                &mut memory,
                Call::Syrk {
                    handle,
                    dtype: dt,
                    hermitian,
                    uplo: 1,
                    trans: 0,
                    n: n as i64,
                    k: k as i64,
                    alpha: host(one),
                    a: op(pa, ld as i64),
                    beta: host(one),
                    c: op(pc, ld as i64),
                },
            )
            .expect("syrk");
        let got = memory.get(dt, pc, ld * n);
        for j in 0..n {
            for i in 0..n {
                let p: Z = (0..k)
                    .map(|l| {
                        a[i + l * ld]
                            * if hermitian {
                                a[j + l * ld].conj()
                            } else {
                                a[j + l * ld]
                            }
                    })
                    .sum();
                let mut want = if i <= j {
                    p + c[i + j * ld]
                } else {
                    c[i + j * ld]
                };
                if hermitian && i == j {
                    want.im = 0.0;
                }
                assert_close(&[got[i + j * ld]], &[want], tol);
            }
        }

        // symm side right: C = B A_sym (A n x n lower).
        let s = round(values(ld * n, 22, complex));
        let b = round(values(ld * n, 23, complex));
        let (ps, pb) = (memory.put(dt, &s), memory.put(dt, &b));
        let pc = memory.put(dt, &vec![Z::default(); ld * n]);
        state
            .call(
                &mut memory,
                Call::Symm {
                    handle,
                    dtype: dt,
                    hermitian: false,
                    side: 1,
                    uplo: 0,
                    m: m as i64,
                    n: n as i64,
                    alpha: host(one),
                    a: op(ps, ld as i64),
                    b: op(pb, ld as i64),
                    beta: host(Z::default()),
                    c: op(pc, ld as i64),
                },
            )
            .expect("symm");
        let sym = |i: usize, j: usize| if i >= j { s[i + j * ld] } else { s[j + i * ld] };
        let got = memory.get(dt, pc, ld * n);
        for j in 0..n {
            for i in 0..m {
                let want: Z = (0..n).map(|l| b[i + l * ld] * sym(l, j)).sum();
                assert_close(&[got[i + j * ld]], &[want], tol);
            }
        }

        // trmm (left, upper, op T) into C, then trsm of C gives B back.
        let mut t = round(values(ld * m, 24, complex));
        for i in 0..m {
            t[i + i * ld] += Z::new(3.0, 0.0);
        }
        let pt = memory.put(dt, &t);
        let b = round(values(ld * m, 25, complex));
        let pb = memory.put(dt, &b);
        let pc = memory.put(dt, &vec![Z::default(); ld * m]);
        for (side, trans) in [(0, 1), (0, 2), (1, 0)] {
            let (rows, cols) = (m, if side == 0 { n } else { m });
            let alpha = Z::new(2.0, 0.0);
            state
                .call(
                    &mut memory,
                    Call::Trmm {
                        handle,
                        dtype: dt,
                        solve: false,
                        side,
                        uplo: 1,
                        trans,
                        diag: 0,
                        m: rows as i64,
                        n: cols as i64,
                        alpha: host(alpha),
                        a: op(pt, ld as i64),
                        b: op(pb, ld as i64),
                        c: op(pc, ld as i64),
                    },
                )
                .expect("trmm");
            let tri = |i: usize, j: usize| if i <= j { t[i + j * ld] } else { Z::default() };
            let opt = |i: usize, j: usize| match trans {
                0 => tri(i, j),
                1 => tri(j, i),
                _ => tri(j, i).conj(),
            };
            let got = memory.get(dt, pc, ld * cols);
            for j in 0..cols {
                for i in 0..rows {
                    let want: Z = if side == 0 {
                        (0..m).map(|l| opt(i, l) * b[l + j * ld]).sum()
                    } else {
                        (0..cols).map(|l| b[i + l * ld] * opt(l, j)).sum()
                    };
                    assert_close(&[got[i + j * ld]], &[alpha * want], tol * 10.0);
                }
            }
            state
                .call(
                    &mut memory,
                    Call::Trmm {
                        handle,
                        dtype: dt,
                        solve: true,
                        side,
                        uplo: 1,
                        trans,
                        diag: 0,
                        m: rows as i64,
                        n: cols as i64,
                        alpha: host(Z::new(0.5, 0.0)),
                        a: op(pt, ld as i64),
                        b: op(pc, ld as i64),
                        c: op(0, 1),
                    },
                )
                .expect("trsm");
            let back = memory.get(dt, pc, ld * cols);
            for j in 0..cols {
                for i in 0..rows {
                    assert_close(&[back[i + j * ld]], &[b[i + j * ld]], tol * 100.0);
                }
            }
        }

        // geam C = alpha A^T + beta B, dgmm C = diag(x) A.
        let a = round(values(ld * m, 26, complex));
        let b = round(values(ld * n, 27, complex));
        let (pa, pb) = (memory.put(dt, &a), memory.put(dt, &b));
        let pc = memory.put(dt, &vec![Z::default(); ld * n]);
        let (alpha, beta) = (Z::new(2.0, 0.0), Z::new(-1.0, 0.0));
        state
            .call(
                &mut memory,
                Call::Geam {
                    handle,
                    dtype: dt,
                    transa: 1,
                    transb: 0,
                    m: m as i64,
                    n: n as i64,
                    alpha: host(alpha),
                    a: op(pa, ld as i64),
                    beta: host(beta),
                    b: op(pb, ld as i64),
                    c: op(pc, ld as i64),
                },
            )
            .expect("geam");
        let got = memory.get(dt, pc, ld * n);
        for j in 0..n {
            for i in 0..m {
                assert_close(
                    &[got[i + j * ld]],
                    &[alpha * a[j + i * ld] + beta * b[i + j * ld]],
                    tol,
                );
            }
        }
        let x = round(values(m, 28, complex));
        let px = memory.put(dt, &x);
        state
            .call(
                &mut memory,
                Call::Dgmm {
                    handle,
                    dtype: dt,
                    side: 0,
                    m: m as i64,
                    n: n as i64,
                    a: op(pb, ld as i64),
                    x: op(px, 1),
                    c: op(pc, ld as i64),
                },
            )
            .expect("dgmm");
        let got = memory.get(dt, pc, ld * n);
        for j in 0..n {
            for i in 0..m {
                assert_close(&[got[i + j * ld]], &[x[i] * b[i + j * ld]], tol);
            }
        }
    }
}

#[test]
fn errors_get_cublas_statuses_and_faults() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    let a = memory.put(dtype::R32F, &values(16, 1, false));
    let gemm = |handle, lda, a: u64| Call::Gemm {
        handle,
        types: [dtype::R32F; 4],
        transa: 0,
        transb: 0,
        m: 4,
        n: 4,
        k: 4,
        alpha: host(Z::new(1.0, 0.0)),
        a: op(a, lda),
        b: op(a, 4),
        beta: host(Z::new(0.0, 0.0)),
        c: op(a, 4),
        batch: 1,
        pointer_arrays: false,
    };
    assert_eq!(
        state.call(&mut memory, gemm(handle, 4, a)).unwrap().status,
        0
    );
    // Leading dimension below the rows: CUBLAS_STATUS_INVALID_VALUE.
    assert_eq!(
        state.call(&mut memory, gemm(handle, 3, a)).unwrap().status,
        7
    );
    // A range past the allocation faults (cudaErrorIllegalAddress on the server).
    assert!(matches!(
        state.call(&mut memory, gemm(handle, 4, a + 8)),
        Err(MathError::Fault(_))
    ));
    // Unknown handle, destroy, then use after destroy: NOT_INITIALIZED.
    assert_eq!(
        state
            .call(&mut memory, gemm(handle + 7, 4, a))
            .unwrap()
            .status,
        1
    );
    assert_eq!(
        state
            .call(&mut memory, Call::Destroy { handle })
            .unwrap()
            .status,
        0
    );
    assert_eq!(
        state.call(&mut memory, gemm(handle, 4, a)).unwrap().status,
        1
    );
    assert_eq!(
        state
            .call(&mut memory, Call::Destroy { handle })
            .unwrap()
            .status,
        1
    );
    // An unknown element type: NOT_SUPPORTED.
    let handle = new_handle(&mut state, &mut memory);
    let mut call = gemm(handle, 4, a);
    if let Call::Gemm { types, .. } = &mut call {
        *types = [3; 4];
    }
    assert_eq!(state.call(&mut memory, call).unwrap().status, 15);
}

/// A strided batch of stride 0 reuses one matrix any number of times: a
/// batch count far beyond memory costs no memory, and the work stops when
/// the device's time is up.
#[test]
fn a_huge_batch_of_one_matrix_stops_at_the_time_limit() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    let a = memory.put(dtype::R32F, &values(16, 1, false));
    let c = memory.put(dtype::R32F, &values(16, 2, false));
    memory.reads_until_expired = Some(std::cell::Cell::new(1000));
    let at = |ptr| Operand {
        ptr,
        ld: 4,
        stride: 0,
    };
    let call = Call::Gemm {
        handle,
        types: [dtype::R32F; 4],
        transa: 0,
        transb: 0,
        m: 4,
        n: 4,
        k: 4,
        alpha: Scalar::Host { re: 1.0, im: 0.0 },
        a: at(a),
        b: at(a),
        beta: Scalar::Host { re: 1.0, im: 0.0 },
        c: at(c),
        batch: 1 << 40,
        pointer_arrays: false,
    };
    assert!(matches!(
        state.call(&mut memory, call),
        Err(MathError::Timeout)
    ));
}

#[test]
fn a_huge_strided_gemv_batch_stops_at_the_time_limit() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    let a = memory.put(dtype::R32F, &values(16, 1, false));
    let y = memory.put(dtype::R32F, &values(4, 2, false));
    memory.reads_until_expired = Some(std::cell::Cell::new(1000));
    let at = |ptr, ld| Operand { ptr, ld, stride: 0 };
    let call = Call::GemvBatched {
        handle,
        types: [dtype::R32F; 3],
        trans: 0,
        m: 4,
        n: 4,
        alpha: host(Z::new(1.0, 0.0)),
        a: at(a, 4),
        x: at(a, 1),
        beta: host(Z::new(1.0, 0.0)),
        y: at(y, 1),
        batch: i64::MAX,
        pointer_arrays: false,
    };
    assert!(matches!(
        state.call(&mut memory, call),
        Err(MathError::Timeout)
    ));
}

/// A device array of pointers to `batch` matrices of `each` elements each,
/// back to back from `base`, of `size`-byte elements.
fn pointer_array(memory: &mut Memory, base: u64, batch: usize, each: usize, size: u64) -> u64 {
    let bytes = (0..batch)
        .flat_map(|p| (base + p as u64 * each as u64 * size).to_le_bytes())
        .collect();
    let at = 0x1000_0000 * (memory.allocations.len() as u64 + 1);
    memory.allocations.push((at, bytes));
    at
}

fn ints(memory: &Memory, ptr: u64, n: usize) -> Vec<i32> {
    memory
        .read(ptr, n as u64 * 4)
        .expect("range")
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The product of the n x n column-major matrices `a` and `b`.
fn product(a: &[Z], b: &[Z], n: usize) -> Vec<Z> {
    let mut c = vec![Z::new(0.0, 0.0); n * n];
    for j in 0..n {
        for i in 0..n {
            c[i + j * n] = (0..n).map(|k| a[i + k * n] * b[k + j * n]).sum();
        }
    }
    c
}

#[test]
fn batched_lu_factors_solves_and_inverts_every_matrix() {
    let (n, batch) = (4usize, 3usize);
    for (dt, tol) in TYPES {
        let complex = dtype::is_complex(dt);
        let size = dtype::size(dt).expect("type");
        let mut memory = Memory::default();
        let mut state = State::default();
        let handle = new_handle(&mut state, &mut memory);
        // Diagonally dominant matrices; the last one singular (a zero
        // column), which getrf and getri report in their info.
        let mut originals = values(n * n * batch, 7, complex);
        for m in 0..batch {
            for i in 0..n {
                originals[m * n * n + i * n + i] += Z::new(4.0, 0.0);
            }
        }
        for i in 0..n {
            originals[(batch - 1) * n * n + 2 * n + i] = Z::new(0.0, 0.0);
        }
        let a = memory.put(dt, &originals);
        let a_array = pointer_array(&mut memory, a, batch, n * n, size);
        let pivots = memory.put(dtype::R32F, &vec![Z::new(0.0, 0.0); n * batch]);
        let info = memory.put(dtype::R32F, &vec![Z::new(0.0, 0.0); batch]);
        let call = Call::GetrfBatched {
            handle,
            dtype: dt,
            n: n as i64,
            a: op(a_array, n as i64),
            pivots,
            info,
            batch: batch as i64,
        };
        assert_eq!(state.call(&mut memory, call).expect("getrf").status, 0);
        assert_eq!(ints(&memory, info, batch), [0, 0, 3], "type {dt}");
        let piv = ints(&memory, pivots, n * batch);
        assert!(piv.iter().all(|&p| (1..=n as i32).contains(&p)), "{piv:?}");

        // Solve A_i X = B_i for the two regular matrices, and check A X = B.
        let rhs = values(n * 2 * batch, 8, complex);
        let b = memory.put(dt, &rhs);
        let b_array = pointer_array(&mut memory, b, batch, n * 2, size);
        let call = Call::GetrsBatched {
            handle,
            dtype: dt,
            trans: 0,
            n: n as i64,
            nrhs: 2,
            a: op(a_array, n as i64),
            pivots,
            b: op(b_array, n as i64),
            batch: 2,
        };
        assert_eq!(state.call(&mut memory, call).expect("getrs").status, 0);
        let x = memory.get(dt, b, n * 2 * batch);
        for m in 0..2 {
            let orig = &originals[m * n * n..(m + 1) * n * n];
            for col in 0..2 {
                let xs = &x[m * 2 * n + col * n..m * 2 * n + (col + 1) * n];
                let got: Vec<Z> = (0..n)
                    .map(|i| (0..n).map(|k| orig[i + k * n] * xs[k]).sum())
                    .collect();
                let want = &rhs[m * 2 * n + col * n..m * 2 * n + (col + 1) * n];
                assert_close(&got, want, tol * 100.0);
            }
        }

        // Inverses: A_i C_i = I for the regular ones; the singular one's
        // info 3.
        let marker = vec![Z::new(9.0, 0.0); n * n * batch];
        let c = memory.put(dt, &marker);
        let c_array = pointer_array(&mut memory, c, batch, n * n, size);
        let call = Call::GetriBatched {
            handle,
            dtype: dt,
            n: n as i64,
            a: op(a_array, n as i64),
            pivots,
            c: op(c_array, n as i64),
            info,
            batch: batch as i64,
        };
        assert_eq!(state.call(&mut memory, call).expect("getri").status, 0);
        assert_eq!(ints(&memory, info, batch), [0, 0, 3]);
        let inverses = memory.get(dt, c, n * n * batch);
        let identity: Vec<Z> = (0..n * n)
            .map(|e| Z::new(if e % (n + 1) == 0 { 1.0 } else { 0.0 }, 0.0))
            .collect();
        for m in 0..2 {
            let orig = &originals[m * n * n..(m + 1) * n * n];
            let inv = &inverses[m * n * n..(m + 1) * n * n];
            assert_close(&product(orig, inv, n), &identity, tol * 100.0);
        }
        // The singular one's "inverse" holds the divisions by zero, as a
        // GPU's does: not a number a caller could take for an inverse.
        assert!(
            inverses[2 * n * n..]
                .iter()
                .any(|z| !z.re.is_finite() || !z.im.is_finite()),
            "type {dt}"
        );

        // matinvBatched: the same inverses from the original matrices,
        // which it leaves as they were; n > 32 is refused.
        let a2 = memory.put(dt, &originals);
        let a2_array = pointer_array(&mut memory, a2, batch, n * n, size);
        let c2 = memory.put(dt, &marker);
        let c2_array = pointer_array(&mut memory, c2, batch, n * n, size);
        let matinv = |n: i64| Call::MatinvBatched {
            handle,
            dtype: dt,
            n,
            a: op(a2_array, n),
            c: op(c2_array, n),
            info,
            batch: batch as i64,
        };
        assert_eq!(
            state
                .call(&mut memory, matinv(n as i64))
                .expect("matinv")
                .status,
            0
        );
        assert_eq!(ints(&memory, info, batch), [0, 0, 3], "type {dt}");
        let inverses = memory.get(dt, c2, n * n * batch);
        for m in 0..2 {
            let orig = &originals[m * n * n..(m + 1) * n * n];
            let inv = &inverses[m * n * n..(m + 1) * n * n];
            assert_close(&product(orig, inv, n), &identity, tol * 100.0);
        }
        assert_close(&memory.get(dt, a2, n * n * batch), &originals, tol);
        assert_eq!(
            state.call(&mut memory, matinv(33)).expect("status").status,
            7
        );

        // Bad arguments are cuBLAS statuses; a matrix outside memory a fault.
        let bad_ld = Call::GetrfBatched {
            handle,
            dtype: dt,
            n: n as i64,
            a: op(a_array, n as i64 - 1),
            pivots,
            info,
            batch: batch as i64,
        };
        assert_eq!(state.call(&mut memory, bad_ld).expect("status").status, 7);
        let wild = pointer_array(&mut memory, 0x77_0000_0000, 1, 0, size);
        let fault = Call::GetrfBatched {
            handle,
            dtype: dt,
            n: n as i64,
            a: op(wild, n as i64),
            pivots: 0,
            info,
            batch: 1,
        };
        assert!(matches!(
            state.call(&mut memory, fault),
            Err(MathError::Fault(_))
        ));
    }
}

// ---- banded, packed, rank updates, syr2k/syrkx, rotations -----------------

/// Element `i` of a vector of `n` stored with increment `inc` (negative
/// increments run from the end, as in BLAS).
fn vget(v: &[Z], inc: i64, n: usize, i: usize) -> Z {
    let step = inc.unsigned_abs() as usize;
    if inc > 0 {
        v[i * step]
    } else {
        v[(n - 1 - i) * step]
    }
}

/// The logical vector of `n` elements of storage `v` with increment `inc`.
fn logical(v: &[Z], inc: i64, n: usize) -> Vec<Z> {
    (0..n).map(|i| vget(v, inc, n, i)).collect()
}

/// `op(A) x` for a dense `rows` x `cols` `A` given by `at`.
fn matvec(at: &dyn Fn(usize, usize) -> Z, rows: usize, cols: usize, trans: i32, x: &[Z]) -> Vec<Z> {
    let (out, inner) = if trans == 0 {
        (rows, cols)
    } else {
        (cols, rows)
    };
    (0..out)
        .map(|i| {
            (0..inner)
                .map(|j| match trans {
                    0 => at(i, j) * x[j],
                    1 => at(j, i) * x[j],
                    _ => at(j, i).conj() * x[j],
                })
                .sum()
        })
        .collect()
}

/// Scalars of the type: the imaginary part dropped for real types.
fn typed_scalar(v: Z, complex: bool) -> Z {
    if complex {
        v
    } else {
        Z::new(v.re, 0.0)
    }
}

fn packed_at(upper: bool, n: usize, i: usize, j: usize) -> usize {
    super::band::packed_index(upper, n, i, j)
}

/// Full symmetric/Hermitian `A` from one stored triangle (`stored(i, j)`
/// for `(i, j)` in the triangle, `None` outside the band).
fn full_sym(
    stored: &dyn Fn(usize, usize) -> Option<Z>,
    upper: bool,
    hermitian: bool,
    i: usize,
    j: usize,
) -> Z {
    let in_tri = if upper { i <= j } else { i >= j };
    if hermitian && i == j {
        return Z::new(stored(i, i).unwrap_or_default().re, 0.0);
    }
    if in_tri {
        stored(i, j).unwrap_or_default()
    } else {
        let v = stored(j, i).unwrap_or_default();
        if hermitian {
            v.conj()
        } else {
            v
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn banded_call(
    handle: u64,
    dt: u8,
    kind: u8,
    hermitian: bool,
    (uplo, trans, diag): (i32, i32, i32),
    (m, n, kl, k): (usize, usize, usize, usize),
    (alpha, beta): (Z, Z),
    a: Operand,
    x: Operand,
    y: Operand,
) -> Call {
    Call::Banded {
        handle,
        dtype: dt,
        kind,
        hermitian,
        uplo,
        trans,
        diag,
        m: m as i64,
        n: n as i64,
        kl: kl as i64,
        k: k as i64,
        alpha: host(alpha),
        a,
        x,
        beta: host(beta),
        y,
    }
}

#[test]
fn level2_banded_and_packed_matrix_vector() {
    use rcud_proto::math::blas::level2 as kind;
    for (dt, tol) in TYPES {
        let complex = dtype::is_complex(dt);
        let mut memory = Memory::default();
        let mut state = State::default();
        let handle = new_handle(&mut state, &mut memory);
        let round = |v: Vec<Z>| load::<Z>(dt, &store(dt, &v).unwrap()).unwrap();
        let alpha = typed_scalar(Z::new(1.25, -0.5), complex);
        let beta = typed_scalar(Z::new(-0.5, 0.75), complex);

        // gbmv: 6 x 5, 1 sub- and 2 superdiagonals, lda one more than needed.
        let (m, n, kl, ku) = (6usize, 5usize, 1usize, 2usize);
        let lda = kl + ku + 2;
        let ab = round(values(lda * n, 30, complex));
        let pa = memory.put(dt, &ab);
        let at = |i: usize, j: usize| {
            if i + ku >= j && i <= j + kl {
                ab[ku + i - j + j * lda]
            } else {
                Z::default()
            }
        };
        for trans in [0, 1, 2] {
            let (lx, ly) = if trans == 0 { (n, m) } else { (m, n) };
            let (incx, incy) = (-2i64, 3i64);
            let xs = round(values(2 * lx, 31, complex));
            let ys = round(values(3 * ly, 32, complex));
            let (px, py) = (memory.put(dt, &xs), memory.put(dt, &ys));
            let call = banded_call(
                handle,
                dt,
                kind::GBMV,
                false,
                (0, trans, 0),
                (m, n, kl, ku),
                (alpha, beta),
                op(pa, lda as i64),
                op(px, incx),
                op(py, incy),
            );
            assert_eq!(state.call(&mut memory, call).unwrap().status, 0);
            let p = matvec(&at, m, n, trans, &logical(&xs, incx, lx));
            let want: Vec<Z> = (0..ly)
                .map(|i| alpha * p[i] + beta * vget(&ys, incy, ly, i))
                .collect();
            let got = logical(&memory.get(dt, py, ys.len()), incy, ly);
            assert_close(&got, &want, tol);
        }

        // sbmv/hbmv and spmv/hpmv, both triangles.
        let (n, k) = (6usize, 2usize);
        for hermitian in [false, true] {
            if hermitian && !complex {
                continue;
            }
            for upper in [false, true] {
                let uplo = i32::from(upper);
                let lda = k + 2;
                let ab = round(values(lda * n, 33, complex));
                let band = |i: usize, j: usize| -> Option<Z> {
                    let inside = if upper {
                        i <= j && j - i <= k
                    } else {
                        i >= j && i - j <= k
                    };
                    inside.then(|| {
                        if upper {
                            ab[k + i - j + j * lda]
                        } else {
                            ab[i - j + j * lda]
                        }
                    })
                };
                let ap = round(values(n * (n + 1) / 2, 34, complex));
                let packed =
                    |i: usize, j: usize| -> Option<Z> { Some(ap[packed_at(upper, n, i, j)]) };
                let xs = round(values(n, 35, complex));
                let ys = round(values(n, 36, complex));
                for (which, storage, ld, stored) in [
                    (
                        kind::SBMV,
                        &ab,
                        lda,
                        &band as &dyn Fn(usize, usize) -> Option<Z>,
                    ),
                    (
                        kind::SPMV,
                        &ap,
                        0,
                        &packed as &dyn Fn(usize, usize) -> Option<Z>,
                    ),
                ] {
                    let pa = memory.put(dt, storage);
                    let (px, py) = (memory.put(dt, &xs), memory.put(dt, &ys));
                    let call = banded_call(
                        handle,
                        dt,
                        which,
                        hermitian,
                        (uplo, 0, 0),
                        (n, n, 0, k),
                        (alpha, beta),
                        op(pa, ld as i64),
                        op(px, -1),
                        op(py, 1),
                    );
                    assert_eq!(state.call(&mut memory, call).unwrap().status, 0);
                    let full = |i: usize, j: usize| full_sym(stored, upper, hermitian, i, j);
                    let p = matvec(&full, n, n, 0, &logical(&xs, -1, n));
                    let want: Vec<Z> = (0..n).map(|i| alpha * p[i] + beta * ys[i]).collect();
                    assert_close(&memory.get(dt, py, n), &want, tol);
                }
            }
        }

        // tbmv/tpmv against the reference, then tbsv/tpsv undo them.
        for upper in [false, true] {
            for trans in [0, 1, 2] {
                for diag in [0, 1] {
                    let uplo = i32::from(upper);
                    let lda = k + 1;
                    let mut ab = round(values(lda * n, 37, complex));
                    let mut ap = round(values(n * (n + 1) / 2, 38, complex));
                    // Well conditioned: a heavy diagonal.
                    for j in 0..n {
                        let d = if upper { k + j * lda } else { j * lda };
                        ab[d] += Z::new(4.0, 0.0);
                        ap[packed_at(upper, n, j, j)] += Z::new(4.0, 0.0);
                    }
                    let tri = |stored: &dyn Fn(usize, usize) -> Option<Z>, i: usize, j: usize| {
                        let in_tri = if upper { i <= j } else { i >= j };
                        if i == j && diag == 1 {
                            Z::new(1.0, 0.0)
                        } else if in_tri {
                            stored(i, j).unwrap_or_default()
                        } else {
                            Z::default()
                        }
                    };
                    let band = |i: usize, j: usize| -> Option<Z> {
                        let inside = if upper { j - i <= k } else { i - j <= k };
                        inside.then(|| {
                            if upper {
                                ab[k + i - j + j * lda]
                            } else {
                                ab[i - j + j * lda]
                            }
                        })
                    };
                    let packed =
                        |i: usize, j: usize| -> Option<Z> { Some(ap[packed_at(upper, n, i, j)]) };
                    for (mv, sv, storage, ld, stored) in [
                        (
                            kind::TBMV,
                            kind::TBSV,
                            &ab,
                            lda,
                            &band as &dyn Fn(usize, usize) -> Option<Z>,
                        ),
                        (
                            kind::TPMV,
                            kind::TPSV,
                            &ap,
                            0,
                            &packed as &dyn Fn(usize, usize) -> Option<Z>,
                        ),
                    ] {
                        let pa = memory.put(dt, storage);
                        let xs = round(values(2 * n, 39, complex));
                        let px = memory.put(dt, &xs);
                        let one = Z::new(1.0, 0.0);
                        let call = |kind| {
                            banded_call(
                                handle,
                                dt,
                                kind,
                                false,
                                (uplo, trans, diag),
                                (n, n, 0, k),
                                (one, one),
                                op(pa, ld as i64),
                                op(px, -2),
                                op(0, 1),
                            )
                        };
                        assert_eq!(state.call(&mut memory, call(mv)).unwrap().status, 0);
                        let at = |i: usize, j: usize| tri(stored, i, j);
                        let want = matvec(&at, n, n, trans, &logical(&xs, -2, n));
                        let got = logical(&memory.get(dt, px, 2 * n), -2, n);
                        assert_close(&got, &want, tol);
                        assert_eq!(state.call(&mut memory, call(sv)).unwrap().status, 0);
                        let back = logical(&memory.get(dt, px, 2 * n), -2, n);
                        assert_close(&back, &logical(&xs, -2, n), tol * 10.0);
                    }
                }
            }
        }
    }
}

#[test]
fn level2_rank_updates_dense_and_packed() {
    for (dt, tol) in TYPES {
        let complex = dtype::is_complex(dt);
        let mut memory = Memory::default();
        let mut state = State::default();
        let handle = new_handle(&mut state, &mut memory);
        let round = |v: Vec<Z>| load::<Z>(dt, &store(dt, &v).unwrap()).unwrap();
        let (n, lda) = (5usize, 7usize);
        for hermitian in [false, true] {
            if hermitian && !complex {
                continue;
            }
            for two in [false, true] {
                for packed in [false, true] {
                    for upper in [false, true] {
                        // her's alpha is real.
                        let alpha = if hermitian && !two {
                            Z::new(0.75, 0.0)
                        } else {
                            typed_scalar(Z::new(0.75, -1.25), complex)
                        };
                        let len = if packed { n * (n + 1) / 2 } else { lda * n };
                        let a = round(values(len, 40, complex));
                        let xs = round(values(2 * n, 41, complex));
                        let ys = round(values(n, 42, complex));
                        let (pa, px, py) =
                            (memory.put(dt, &a), memory.put(dt, &xs), memory.put(dt, &ys));
                        let call = Call::Syr {
                            handle,
                            dtype: dt,
                            hermitian,
                            two,
                            packed,
                            uplo: i32::from(upper),
                            n: n as i64,
                            alpha: host(alpha),
                            x: op(px, -2),
                            y: op(py, 1),
                            a: op(pa, if packed { 0 } else { lda as i64 }),
                        };
                        assert_eq!(state.call(&mut memory, call).unwrap().status, 0);
                        let x = logical(&xs, -2, n);
                        let c = |v: Z| if hermitian { v.conj() } else { v };
                        let mut want = a.clone();
                        for j in 0..n {
                            for i in 0..n {
                                if (upper && i > j) || (!upper && i < j) {
                                    continue;
                                }
                                let at = if packed {
                                    packed_at(upper, n, i, j)
                                } else {
                                    i + j * lda
                                };
                                let d = if two {
                                    alpha * x[i] * c(ys[j]) + c(alpha) * ys[i] * c(x[j])
                                } else {
                                    alpha * x[i] * c(x[j])
                                };
                                want[at] += d;
                                if hermitian && i == j {
                                    want[at].im = 0.0;
                                }
                            }
                        }
                        assert_close(&memory.get(dt, pa, len), &want, tol);
                    }
                }
            }
        }
    }
}

#[test]
fn level3_syr2k_her2k_syrkx_herkx() {
    for (dt, tol) in TYPES {
        let complex = dtype::is_complex(dt);
        let mut memory = Memory::default();
        let mut state = State::default();
        let handle = new_handle(&mut state, &mut memory);
        let round = |v: Vec<Z>| load::<Z>(dt, &store(dt, &v).unwrap()).unwrap();
        let (n, k, ldc) = (4usize, 3usize, 6usize);
        for hermitian in [false, true] {
            if hermitian && !complex {
                continue;
            }
            let transes: &[i32] = if hermitian {
                &[0, 2]
            } else if complex {
                &[0, 1]
            } else {
                &[0, 1, 2]
            };
            for &trans in transes {
                for x in [false, true] {
                    for upper in [false, true] {
                        let (ar, ac) = if trans == 0 { (n, k) } else { (k, n) };
                        let lda = ar + 1;
                        let a = round(values(lda * ac, 50, complex));
                        let b = round(values(lda * ac, 51, complex));
                        let cm = round(values(ldc * n, 52, complex));
                        let (pa, pb, pc) =
                            (memory.put(dt, &a), memory.put(dt, &b), memory.put(dt, &cm));
                        let alpha = typed_scalar(Z::new(0.5, 1.5), complex);
                        let beta = if hermitian {
                            Z::new(-0.25, 0.0)
                        } else {
                            typed_scalar(Z::new(-0.25, 0.5), complex)
                        };
                        let call = Call::Syr2k {
                            handle,
                            dtype: dt,
                            hermitian,
                            x,
                            uplo: i32::from(upper),
                            trans,
                            n: n as i64,
                            k: k as i64,
                            alpha: host(alpha),
                            a: op(pa, lda as i64),
                            b: op(pb, lda as i64),
                            beta: host(beta),
                            c: op(pc, ldc as i64),
                        };
                        assert_eq!(state.call(&mut memory, call).unwrap().status, 0);
                        let c = |v: Z| if hermitian { v.conj() } else { v };
                        // op(M)(i, l) for the n x k operand.
                        let opm = |m: &[Z], i: usize, l: usize| {
                            if trans == 0 {
                                m[i + l * lda]
                            } else {
                                c(m[l + i * lda])
                            }
                        };
                        let mut want = cm.clone();
                        for j in 0..n {
                            for i in 0..n {
                                if (upper && i > j) || (!upper && i < j) {
                                    continue;
                                }
                                let mut v: Z = (0..k)
                                    .map(|l| alpha * opm(&a, i, l) * c(opm(&b, j, l)))
                                    .sum();
                                if !x {
                                    v += (0..k)
                                        .map(|l| c(alpha) * opm(&b, i, l) * c(opm(&a, j, l)))
                                        .sum::<Z>();
                                }
                                v += beta * cm[i + j * ldc];
                                if hermitian && i == j {
                                    v.im = 0.0;
                                }
                                want[i + j * ldc] = v;
                            }
                        }
                        assert_close(&memory.get(dt, pc, ldc * n), &want, tol * 4.0);
                    }
                }
            }
        }
    }
}

#[test]
fn rotations_rotg_rotmg_rotm_host_and_device() {
    use super::rot::{givens, modified_givens};
    // rotg, real: r = sign * hypot, c = a / r, s = b / r.
    let (r, z, c, s) = givens::<f64>(3.0, 4.0);
    assert!((r - 5.0).abs() < 1e-12 && (c - 0.6).abs() < 1e-12 && (s - 0.8).abs() < 1e-12);
    assert!((z - 1.0 / 0.6).abs() < 1e-12);
    let (r, z, c, s) = givens::<f64>(-4.0, 3.0);
    assert!((r + 5.0).abs() < 1e-12 && (c - 0.8).abs() < 1e-12 && (s + 0.6).abs() < 1e-12);
    assert!((z + 0.6).abs() < 1e-12);
    assert_eq!(givens::<f64>(0.0, 0.0), (0.0, 0.0, 1.0, 0.0));
    // rotg, complex: [c s; -conj(s) c] [a; b] = [r; 0].
    let (a, b) = (Z::new(1.0, 2.0), Z::new(-3.0, 0.5));
    let (r, _, c, s) = givens::<Z>(a, b);
    assert!((c * a + s * b - r).norm() < 1e-12);
    assert!((-s.conj() * a + c * b).norm() < 1e-12);
    // rotmg then rotm: H [sqrt(d1) x1; sqrt(d2) y1] zeroes the second.
    for (d1, d2, x1, y1) in [
        (2.0, 3.0, 1.5, -0.5),
        (0.5, 4.0, 0.25, 2.0),
        (1e-9, 1e9, 3.0, 1.0),
    ] {
        let ([_, _, nx], param) = modified_givens(d1, d2, x1, y1);
        let (h11, h21, h12, h22) = match param[0] {
            f if f < 0.0 => (param[1], param[2], param[3], param[4]),
            _ if param[0] == 0.0 => (1.0, param[2], param[3], 1.0),
            _ => (param[1], -1.0, 1.0, param[4]),
        };
        assert!(
            (h21 * x1 + h22 * y1).abs() < 1e-9 * (1.0 + nx.abs()),
            "{param:?}"
        );
        assert!(
            (h11 * x1 + h12 * y1 - nx).abs() < 1e-9 * (1.0 + nx.abs()),
            "{param:?}"
        );
    }
    assert_eq!(modified_givens(1.0, 0.0, 2.0, 3.0).1[0], -2.0);

    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    for dt in [dtype::R32F, dtype::R64F] {
        let tol = if dt == dtype::R32F { 1e-5 } else { 1e-12 };
        // Host pointer mode: the reply carries a, b, c, s.
        let reply = state
            .call(
                &mut memory,
                Call::Rotg {
                    handle,
                    dtype: dt,
                    modified: false,
                    values: [3.0, 0.0, 4.0, 0.0],
                    ptrs: [0; 5],
                },
            )
            .unwrap();
        assert_eq!(reply.status, 0);
        let out: Vec<Z> = load(dt, &reply.out).unwrap();
        assert_close(
            &out,
            &[
                Z::new(5.0, 0.0),
                Z::new(1.0 / 0.6, 0.0),
                Z::new(0.6, 0.0),
                Z::new(0.8, 0.0),
            ],
            tol,
        );
        // Device pointer mode: in place.
        let pa = memory.put(dt, &[Z::new(3.0, 0.0)]);
        let pb = memory.put(dt, &[Z::new(4.0, 0.0)]);
        let pc = memory.put(dt, &[Z::default()]);
        let ps = memory.put(dt, &[Z::default()]);
        let reply = state
            .call(
                &mut memory,
                Call::Rotg {
                    handle,
                    dtype: dt,
                    modified: false,
                    values: [0.0; 4],
                    ptrs: [pa, pb, pc, ps, 0],
                },
            )
            .unwrap();
        assert_eq!((reply.status, reply.out.len()), (0, 0));
        assert_close(&memory.get(dt, pa, 1), &[Z::new(5.0, 0.0)], tol);
        assert_close(&memory.get(dt, ps, 1), &[Z::new(0.8, 0.0)], tol);
        // rotmg in device mode, then rotm with its param from device memory.
        let (d1, d2, x1, y1) = (2.0, 3.0, 1.5, -0.5);
        let p: Vec<u64> = [d1, d2, x1, y1]
            .iter()
            .map(|&v| memory.put(dt, &[Z::new(v, 0.0)]))
            .collect();
        let pparam = memory.put(dt, &[Z::default(); 5]);
        let reply = state
            .call(
                &mut memory,
                Call::Rotg {
                    handle,
                    dtype: dt,
                    modified: true,
                    values: [0.0; 4],
                    ptrs: [p[0], p[1], p[2], p[3], pparam],
                },
            )
            .unwrap();
        assert_eq!(reply.status, 0);
        let host_reply = state
            .call(
                &mut memory,
                Call::Rotg {
                    handle,
                    dtype: dt,
                    modified: true,
                    values: [d1, d2, x1, y1],
                    ptrs: [0; 5],
                },
            )
            .unwrap();
        let host_out: Vec<Z> = load(dt, &host_reply.out).unwrap();
        assert_eq!(host_out.len(), 8);
        assert_close(&memory.get(dt, pparam, 5), &host_out[3..], tol);
        let xs = vec![Z::new(x1, 0.0), Z::new(1.0, 0.0), Z::new(-2.0, 0.0)];
        let ys = vec![Z::new(0.25, 0.0), Z::new(0.5, 0.0), Z::new(y1, 0.0)];
        let (px, py) = (memory.put(dt, &xs), memory.put(dt, &ys));
        let reply = state
            .call(
                &mut memory,
                Call::Rotm {
                    handle,
                    dtype: dt,
                    n: 3,
                    x: op(px, 1),
                    y: op(py, -1),
                    param: [0.0; 5],
                    param_ptr: pparam,
                },
            )
            .unwrap();
        assert_eq!(reply.status, 0);
        let param: Vec<f64> = host_out[3..].iter().map(|v| v.re).collect();
        let (h11, h21, h12, h22) = match param[0] {
            f if f < 0.0 => (param[1], param[2], param[3], param[4]),
            _ if param[0] == 0.0 => (1.0, param[2], param[3], 1.0),
            _ => (param[1], -1.0, 1.0, param[4]),
        };
        let y = logical(&ys, -1, 3);
        let want_x: Vec<Z> = (0..3).map(|i| xs[i] * h11 + y[i] * h12).collect();
        let want_y: Vec<Z> = (0..3).map(|i| xs[i] * h21 + y[i] * h22).collect();
        assert_close(&memory.get(dt, px, 3), &want_x, tol);
        assert_close(&logical(&memory.get(dt, py, 3), -1, 3), &want_y, tol);
        // The first pair was the one rotmg zeroed: y_0 (stored last) is 0.
        assert!(logical(&memory.get(dt, py, 3), -1, 3)[0].norm() < tol * 10.0);
        // flag -2: nothing changes.
        let before = memory.get(dt, px, 3);
        let reply = state
            .call(
                &mut memory,
                Call::Rotm {
                    handle,
                    dtype: dt,
                    n: 3,
                    x: op(px, 1),
                    y: op(py, 1),
                    param: [-2.0, 9.0, 9.0, 9.0, 9.0],
                    param_ptr: 0,
                },
            )
            .unwrap();
        assert_eq!(reply.status, 0);
        assert_eq!(memory.get(dt, px, 3), before);
    }
    // Complex rotg in host mode.
    let reply = state
        .call(
            &mut memory,
            Call::Rotg {
                handle,
                dtype: dtype::C64F,
                modified: false,
                values: [1.0, 2.0, -3.0, 0.5],
                ptrs: [0; 5],
            },
        )
        .unwrap();
    assert_eq!(reply.status, 0);
    assert_eq!(reply.out.len(), 16 + 16 + 8 + 16);
    // rotm and rotmg are real only.
    let reply = state
        .call(
            &mut memory,
            Call::Rotm {
                handle,
                dtype: dtype::C32F,
                n: 1,
                x: op(0, 1),
                y: op(0, 1),
                param: [0.0; 5],
                param_ptr: 0,
            },
        )
        .unwrap();
    assert_eq!(reply.status, 15);
}

#[test]
fn banded_packed_and_rank_arguments_are_checked() {
    use rcud_proto::math::blas::level2 as kind;
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    let dt = dtype::R64F;
    let a = memory.put(dt, &values(64, 1, false));
    let x = memory.put(dt, &values(8, 2, false));
    let y = memory.put(dt, &values(8, 3, false));
    let one = Z::new(1.0, 0.0);
    let status =
        |state: &mut State, memory: &mut Memory, call| state.call(memory, call).map(|r| r.status);
    let gbmv = |lda: i64, kl, ku, incx| {
        banded_call(
            handle,
            dt,
            kind::GBMV,
            false,
            (0, 0, 0),
            (4, 4, kl, ku),
            (one, one),
            op(a, lda),
            op(x, incx),
            op(y, 1),
        )
    };
    assert_eq!(
        status(&mut state, &mut memory, gbmv(4, 1, 2, 1)).unwrap(),
        0
    );
    // lda < kl + ku + 1.
    assert_eq!(
        status(&mut state, &mut memory, gbmv(3, 1, 2, 1)).unwrap(),
        7
    );
    // incx = 0.
    assert_eq!(
        status(&mut state, &mut memory, gbmv(4, 1, 2, 0)).unwrap(),
        7
    );
    // A band past the allocation faults.
    assert!(matches!(
        status(&mut state, &mut memory, gbmv(40, 1, 2, 1)),
        Err(MathError::Fault(_))
    ));
    // sbmv: lda < k + 1; a bad uplo.
    let sbmv = |lda: i64, uplo| {
        banded_call(
            handle,
            dt,
            kind::SBMV,
            false,
            (uplo, 0, 0),
            (4, 4, 0, 2),
            (one, one),
            op(a, lda),
            op(x, 1),
            op(y, 1),
        )
    };
    assert_eq!(status(&mut state, &mut memory, sbmv(3, 0)).unwrap(), 0);
    assert_eq!(status(&mut state, &mut memory, sbmv(2, 0)).unwrap(), 7);
    assert_eq!(status(&mut state, &mut memory, sbmv(3, 5)).unwrap(), 7);
    // Hermitian forms of a real type; a negative n; a bad diag.
    let tpmv = |hermitian, n: usize, diag| {
        banded_call(
            handle,
            dt,
            kind::TPMV,
            hermitian,
            (0, 0, diag),
            (n, n, 0, 0),
            (one, one),
            op(a, 0),
            op(x, 1),
            op(y, 1),
        )
    };
    assert_eq!(
        status(&mut state, &mut memory, tpmv(false, 4, 0)).unwrap(),
        0
    );
    assert_eq!(
        status(&mut state, &mut memory, tpmv(true, 4, 0)).unwrap(),
        7
    );
    assert_eq!(
        status(&mut state, &mut memory, tpmv(false, 4, 2)).unwrap(),
        7
    );
    let mut neg = tpmv(false, 4, 0);
    if let Call::Banded { n, .. } = &mut neg {
        *n = -1;
    }
    assert_eq!(status(&mut state, &mut memory, neg).unwrap(), 7);
    // A packed matrix holds n (n + 1) / 2: 11 x 11 needs 66 > 64 elements.
    assert!(matches!(
        status(&mut state, &mut memory, tpmv(false, 11, 0)),
        Err(MathError::Fault(_))
    ));
    // syr: lda < n.
    let syr = |lda| Call::Syr {
        handle,
        dtype: dt,
        hermitian: false,
        two: false,
        packed: false,
        uplo: 0,
        n: 4,
        alpha: host(one),
        x: op(x, 1),
        y: op(y, 1),
        a: op(a, lda),
    };
    assert_eq!(status(&mut state, &mut memory, syr(4)).unwrap(), 0);
    assert_eq!(status(&mut state, &mut memory, syr(3)).unwrap(), 7);
    // syr2k: complex symmetric with trans C is refused, as cuBLAS does.
    let c = memory.put(dtype::C64F, &values(16, 4, true));
    let syr2k = |trans| Call::Syr2k {
        handle,
        dtype: dtype::C64F,
        hermitian: false,
        x: false,
        uplo: 0,
        trans,
        n: 2,
        k: 2,
        alpha: host(one),
        a: op(c, 2),
        b: op(c, 2),
        beta: host(one),
        c: op(c, 2),
    };
    assert_eq!(status(&mut state, &mut memory, syr2k(1)).unwrap(), 0);
    assert_eq!(status(&mut state, &mut memory, syr2k(2)).unwrap(), 7);
}

#[test]
fn a_gemm_past_its_deadline_is_cut_short() {
    // One GEMM does n³ work on n² bytes: it stops between column panels.
    let n = 64;
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    let a = memory.put(dtype::R64F, &values(n * n, 1, false));
    let c = memory.put(dtype::R64F, &values(n * n, 2, false));
    let call = Call::Gemm {
        handle,
        types: [dtype::R64F; 4],
        transa: 0,
        transb: 0,
        m: n as i64,
        n: n as i64,
        k: n as i64,
        alpha: host(Z::new(1.0, 0.0)),
        a: op(a, n as i64),
        b: op(a, n as i64),
        beta: host(Z::new(0.0, 0.0)),
        c: op(c, n as i64),
        batch: 1,
        pointer_arrays: false,
    };
    let past = Some(std::time::Instant::now());
    let cut = crate::deadline::within(past, || state.call(&mut memory, call.clone()));
    assert!(matches!(cut, Err(crate::deadline::Expired)));
    assert_eq!(state.call(&mut memory, call).expect("gemm").status, 0);
    let want = product(&values(n * n, 1, false), &values(n * n, 1, false), n);
    assert_close(&memory.get(dtype::R64F, c, n * n), &want, 1e-9);
}

/// `A X` for column-major `a` (`rows` x `inner`) and `x` (`inner` x `cols`).
fn matmul_dense(a: &[Z], x: &[Z], rows: usize, inner: usize, cols: usize) -> Vec<Z> {
    let mut c = vec![Z::new(0.0, 0.0); rows * cols];
    for j in 0..cols {
        for i in 0..rows {
            c[i + j * rows] = (0..inner).map(|k| a[i + k * rows] * x[k + j * inner]).sum();
        }
    }
    c
}

#[test]
fn trsm_batched_solves_every_system_on_either_side() {
    let (m, n, batch) = (4, 3, 3);
    for (dt, tol) in TYPES {
        let complex = dtype::is_complex(dt);
        let size = dtype::size(dt).expect("type");
        for side in [0, 1] {
            for (uplo, trans, diag) in [(0, 0, 0), (1, 1, 1), (0, 2, 0), (1, 0, 1)] {
                let mut memory = Memory::default();
                let mut state = State::default();
                let handle = new_handle(&mut state, &mut memory);
                let na = if side == 0 { m } else { n };
                let lda = na + 1;
                // Diagonally dominant: well conditioned in single precision.
                let mut a = values(lda * na * batch, 11, complex);
                for b in 0..batch {
                    for i in 0..na {
                        a[b * lda * na + i + i * lda] += Z::new(4.0, 0.0);
                    }
                }
                let rhs = values(m * n * batch, 12, complex);
                let pa = memory.put(dt, &a);
                let pb = memory.put(dt, &rhs);
                let a_array = pointer_array(&mut memory, pa, batch, lda * na, size);
                let b_array = pointer_array(&mut memory, pb, batch, m * n, size);
                let alpha = typed_scalar(Z::new(1.5, -0.5), complex);
                let call = Call::TrsmBatched {
                    handle,
                    dtype: dt,
                    side,
                    uplo,
                    trans,
                    diag,
                    m: m as i64,
                    n: n as i64,
                    alpha: host(alpha),
                    a: op(a_array, lda as i64),
                    b: op(b_array, m as i64),
                    batch: batch as i64,
                };
                assert_eq!(state.call(&mut memory, call).expect("trsm").status, 0);
                let x = memory.get(dt, pb, m * n * batch);
                let round = |v: Vec<Z>| load::<Z>(dt, &store(dt, &v).unwrap()).unwrap();
                let a = round(a);
                let rhs = round(rhs);
                for b in 0..batch {
                    let ab = &a[b * lda * na..(b + 1) * lda * na];
                    // op(A) as a dense na x na matrix.
                    let mut opa = vec![Z::new(0.0, 0.0); na * na];
                    for j in 0..na {
                        for i in 0..na {
                            let (r, c) = if trans == 0 { (i, j) } else { (j, i) };
                            let stored = (uplo == 0 && r >= c) || (uplo == 1 && r <= c);
                            let v = if r == c && diag == 1 {
                                Z::new(1.0, 0.0)
                            } else if stored {
                                ab[r + c * lda]
                            } else {
                                Z::new(0.0, 0.0)
                            };
                            opa[i + j * na] = if trans == 2 { v.conj() } else { v };
                        }
                    }
                    let xb = &x[b * m * n..(b + 1) * m * n];
                    let got = if side == 0 {
                        matmul_dense(&opa, xb, m, m, n)
                    } else {
                        matmul_dense(xb, &opa, m, n, n)
                    };
                    let want: Vec<Z> = rhs[b * m * n..(b + 1) * m * n]
                        .iter()
                        .map(|v| alpha * v)
                        .collect();
                    assert_close(&got, &want, tol * 100.0);
                }

                // Bad arguments: a leading dimension short of op(A)'s order,
                // a bad enum; no array is read.
                let bad = |lda: i64, diag: i32| Call::TrsmBatched {
                    handle,
                    dtype: dt,
                    side,
                    uplo,
                    trans,
                    diag,
                    m: m as i64,
                    n: n as i64,
                    alpha: host(alpha),
                    a: op(0, lda),
                    b: op(0, m as i64),
                    batch: batch as i64,
                };
                for call in [bad(na as i64 - 1, diag), bad(lda as i64, 2)] {
                    assert_eq!(state.call(&mut memory, call).expect("status").status, 7);
                }
            }
        }
    }
}

#[test]
fn gemv_batched_pointer_arrays_strided_and_half() {
    let (m, n, batch) = (4, 3, 3);
    for (dt, tol) in TYPES {
        let complex = dtype::is_complex(dt);
        let size = dtype::size(dt).expect("type");
        for trans in [0, 1, 2] {
            for pointer_arrays in [true, false] {
                let mut memory = Memory::default();
                let mut state = State::default();
                let handle = new_handle(&mut state, &mut memory);
                let (lx, ly) = if trans == 0 { (n, m) } else { (m, n) };
                let (lda, incx, incy) = (m + 1, 2i64, -1i64);
                let (sa, sx, sy) = (lda * n + 2, 2 * lx + 1, ly + 3);
                let round = |v: Vec<Z>| load::<Z>(dt, &store(dt, &v).unwrap()).unwrap();
                let a = round(values(sa * batch, 21, complex));
                let x = round(values(sx * batch, 22, complex));
                let y = round(values(sy * batch, 23, complex));
                let (pa, px, py) = (memory.put(dt, &a), memory.put(dt, &x), memory.put(dt, &y));
                let (alpha, beta) = (
                    typed_scalar(Z::new(0.5, 1.0), complex),
                    typed_scalar(Z::new(-1.0, 0.25), complex),
                );
                let (oa, ox, oy) = if pointer_arrays {
                    (
                        op(pointer_array(&mut memory, pa, batch, sa, size), lda as i64),
                        op(pointer_array(&mut memory, px, batch, sx, size), incx),
                        op(pointer_array(&mut memory, py, batch, sy, size), incy),
                    )
                } else {
                    let s = |ptr, ld, stride: usize| Operand {
                        ptr,
                        ld,
                        stride: stride as i64,
                    };
                    (s(pa, lda as i64, sa), s(px, incx, sx), s(py, incy, sy))
                };
                let call = Call::GemvBatched {
                    handle,
                    types: [dt; 3],
                    trans,
                    m: m as i64,
                    n: n as i64,
                    alpha: host(alpha),
                    a: oa,
                    x: ox,
                    beta: host(beta),
                    y: oy,
                    batch: batch as i64,
                    pointer_arrays,
                };
                assert_eq!(state.call(&mut memory, call).expect("gemv").status, 0);
                let got = memory.get(dt, py, sy * batch);
                for b in 0..batch {
                    let ab = &a[b * sa..];
                    let at = |i: usize, j: usize| ab[i + j * lda];
                    let xs = logical(&x[b * sx..], incx, lx);
                    let ys = logical(&y[b * sy..], incy, ly);
                    let want: Vec<Z> = matvec(&at, m, n, trans, &xs)
                        .iter()
                        .zip(&ys)
                        .map(|(p, y)| alpha * p + beta * y)
                        .collect();
                    assert_close(&logical(&got[b * sy..], incy, ly), &want, tol * 10.0);
                }
            }
        }
    }

    // HSH: half A, x and y, float compute and scalars, strided.
    let (m, n, batch) = (3, 2, 2);
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    let round16 = |v: Vec<Z>| load::<Z>(dtype::R16F, &store(dtype::R16F, &v).unwrap()).unwrap();
    let a = round16(values(m * n * batch, 31, false));
    let x = round16(values(n * batch, 32, false));
    let y = round16(values(m * batch, 33, false));
    let (pa, px, py) = (
        memory.put(dtype::R16F, &a),
        memory.put(dtype::R16F, &x),
        memory.put(dtype::R16F, &y),
    );
    let s = |ptr, ld, stride| Operand { ptr, ld, stride };
    let call = Call::GemvBatched {
        handle,
        types: [dtype::R16F, dtype::R16F, dtype::R32F],
        trans: 0,
        m: m as i64,
        n: n as i64,
        alpha: host(Z::new(2.0, 0.0)),
        a: s(pa, m as i64, (m * n) as i64),
        x: s(px, 1, n as i64),
        beta: host(Z::new(0.5, 0.0)),
        y: s(py, 1, m as i64),
        batch: batch as i64,
        pointer_arrays: false,
    };
    assert_eq!(
        state.call(&mut memory, call.clone()).expect("hsh").status,
        0
    );
    let got = memory.get(dtype::R16F, py, m * batch);
    for b in 0..batch {
        let at = |i: usize, j: usize| a[b * m * n + i + j * m];
        let want: Vec<Z> = matvec(&at, m, n, 0, &x[b * n..(b + 1) * n])
            .iter()
            .zip(&y[b * m..])
            .map(|(p, y)| 2.0 * p + 0.5 * y)
            .collect();
        assert_close(&got[b * m..(b + 1) * m], &want, 2e-3);
    }

    // A zero increment and a bad transpose are INVALID_VALUE.
    let mut bad = call.clone();
    if let Call::GemvBatched { x, .. } = &mut bad {
        x.ld = 0;
    }
    assert_eq!(state.call(&mut memory, bad).expect("status").status, 7);
    let mut bad = call;
    if let Call::GemvBatched { trans, .. } = &mut bad {
        *trans = 3;
    }
    assert_eq!(state.call(&mut memory, bad).expect("status").status, 7);
}

/// Q R of geqrf's packed output (`m` x `n`, reflectors below the diagonal).
fn qr_product(qr: &[Z], tau: &[Z], m: usize, n: usize) -> Vec<Z> {
    use crate::solver::dense::{ormqr, Mat, Op, Side};
    let mut r = Mat::zeros(m, n);
    for j in 0..n {
        for i in 0..=j.min(m - 1) {
            r[(i, j)] = qr[i + j * m];
        }
    }
    let f = Mat {
        rows: m,
        cols: n.min(m),
        data: qr[..m * n.min(m)].to_vec(),
    };
    ormqr(Side::Left, Op::N, &f, tau, &mut r);
    r.data
}

#[test]
fn geqrf_and_gels_batched_factor_and_solve_every_matrix() {
    for (dt, tol) in TYPES {
        let complex = dtype::is_complex(dt);
        let size = dtype::size(dt).expect("type");
        let round = |v: Vec<Z>| load::<Z>(dt, &store(dt, &v).unwrap()).unwrap();
        for (m, n, batch) in [(5, 3, 3), (3, 4, 2), (1, 1, 1)] {
            let mut memory = Memory::default();
            let mut state = State::default();
            let handle = new_handle(&mut state, &mut memory);
            let k = m.min(n);
            let a = round(values(m * n * batch, 41, complex));
            let pa = memory.put(dt, &a);
            let pt = memory.put(dt, &vec![Z::new(7.0, 0.0); k * batch]);
            let a_array = pointer_array(&mut memory, pa, batch, m * n, size);
            let t_array = pointer_array(&mut memory, pt, batch, k, size);
            let call = Call::GeqrfBatched {
                handle,
                dtype: dt,
                m: m as i64,
                n: n as i64,
                a: op(a_array, m as i64),
                tau: t_array,
                batch: batch as i64,
            };
            assert_eq!(state.call(&mut memory, call).expect("geqrf").status, 0);
            let qr = memory.get(dt, pa, m * n * batch);
            let tau = memory.get(dt, pt, k * batch);
            for b in 0..batch {
                let got = qr_product(
                    &qr[b * m * n..(b + 1) * m * n],
                    &tau[b * k..(b + 1) * k],
                    m,
                    n,
                );
                assert_close(&got, &a[b * m * n..(b + 1) * m * n], tol * 100.0);
            }
        }

        // gels: min |A X - C| for 5 x 3 A_i; the third A has a zero column.
        let (m, n, nrhs, batch) = (5usize, 3usize, 2usize, 3usize);
        let mut memory = Memory::default();
        let mut state = State::default();
        let handle = new_handle(&mut state, &mut memory);
        let ldc = m + 1;
        let mut a = round(values(m * n * batch, 51, complex));
        for i in 0..m {
            a[2 * m * n + m + i] = Z::new(0.0, 0.0);
        }
        let c = round(values(ldc * nrhs * batch, 52, complex));
        let pa = memory.put(dt, &a);
        let pc = memory.put(dt, &c);
        let info = memory.put(dtype::R32F, &vec![Z::new(9.0, 0.0); batch]);
        let a_array = pointer_array(&mut memory, pa, batch, m * n, size);
        let c_array = pointer_array(&mut memory, pc, batch, ldc * nrhs, size);
        let gels = |trans: i32, m: usize, lda: usize| Call::GelsBatched {
            handle,
            dtype: dt,
            trans,
            m: m as i64,
            n: n as i64,
            nrhs: nrhs as i64,
            a: op(a_array, lda as i64),
            c: op(c_array, ldc as i64),
            dev_info: info,
            batch: batch as i64,
        };
        assert_eq!(
            state.call(&mut memory, gels(0, m, m)).expect("gels").status,
            0
        );
        assert_eq!(ints(&memory, info, batch), [0, 0, 2], "type {dt}");
        let x = memory.get(dt, pc, ldc * nrhs * batch);
        for b in 0..2 {
            let ab = &a[b * m * n..(b + 1) * m * n];
            for col in 0..nrhs {
                let at = b * ldc * nrhs + col * ldc;
                let xs = &x[at..at + n];
                let rs: Vec<Z> = (0..m)
                    .map(|i| (0..n).map(|k| ab[i + k * m] * xs[k]).sum::<Z>() - c[at + i])
                    .collect();
                // The residual is orthogonal to A's columns.
                let normal: Vec<Z> = (0..n)
                    .map(|k| (0..m).map(|i| ab[i + k * m].conj() * rs[i]).sum())
                    .collect();
                assert_close(&normal, &vec![Z::new(0.0, 0.0); n], tol * 100.0);
            }
        }
        // The rank-deficient system's C is left as it was.
        assert_close(&x[2 * ldc * nrhs..], &c[2 * ldc * nrhs..], 0.0);
        // Transposes and m < n are NOT_SUPPORTED, lda < m INVALID_VALUE.
        for (call, status) in [
            (gels(1, m, m), 15),
            (gels(0, n - 1, m), 15),
            (gels(0, m, m - 1), 7),
        ] {
            assert_eq!(
                state.call(&mut memory, call).expect("status").status,
                status
            );
        }
    }
}
