//! cuSPARSE calls against dense reference computations, on a fake device
//! memory.

use rcud_proto::math::sparse::{Boost, Call, DnMat, DnVec, Scalar, SpMat, SpVec};

use super::values::{Complex, ValueType};
use super::{State, INVALID_VALUE, NOT_INITIALIZED};
use crate::{DeviceMemory, Fault, MathError};

/// Allocations at fixed addresses, as the server's are.
#[derive(Default)]
struct Memory {
    allocations: Vec<(u64, Vec<u8>)>,
    next: u64,
}

impl Memory {
    fn alloc(&mut self, data: Vec<u8>) -> u64 {
        self.next += 0x10_0000;
        self.allocations.push((self.next, data));
        self.next
    }

    fn find(&self, ptr: u64, len: u64) -> Result<(usize, usize), Fault> {
        for (n, (base, data)) in self.allocations.iter().enumerate() {
            if ptr >= *base && ptr - base + len <= data.len() as u64 {
                return Ok((n, (ptr - base) as usize));
            }
        }
        Err(Fault { ptr, len })
    }

    fn bytes(&self, ptr: u64) -> &[u8] {
        &self
            .allocations
            .iter()
            .find(|a| a.0 == ptr)
            .expect("allocation")
            .1
    }
}

impl DeviceMemory for Memory {
    fn read(&self, ptr: u64, len: u64) -> Result<&[u8], Fault> {
        let (n, at) = self.find(ptr, len)?;
        Ok(&self.allocations[n].1[at..at + len as usize])
    }
    fn write(&mut self, ptr: u64, data: &[u8]) -> Result<(), Fault> {
        let (n, at) = self.find(ptr, data.len() as u64)?;
        self.allocations[n].1[at..at + data.len()].copy_from_slice(data);
        Ok(())
    }
}

fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn read_f64s(m: &Memory, ptr: u64) -> Vec<f64> {
    ValueType::F64
        .decode(m.bytes(ptr))
        .iter()
        .map(|c| c.re)
        .collect()
}

fn read_i32s(m: &Memory, ptr: u64) -> Vec<i32> {
    m.bytes(ptr)
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

const R64F: u8 = 1;

/// A 4x5 test matrix with rows of different lengths and an empty row.
fn dense_a() -> Vec<Vec<f64>> {
    vec![
        vec![1.0, 0.0, 2.0, 0.0, 0.0],
        vec![0.0, 0.0, 0.0, 0.0, 0.0],
        vec![0.0, 3.0, 0.0, 4.0, 5.0],
        vec![6.0, 0.0, 0.0, 0.0, 7.0],
    ]
}

/// `a` in CSR with base `base`, in `memory`.
fn csr(memory: &mut Memory, a: &[Vec<f64>], base: i32) -> SpMat {
    let (mut offsets, mut columns, mut values) = (vec![base], Vec::new(), Vec::new());
    for row in a {
        for (j, &v) in row.iter().enumerate() {
            if v != 0.0 {
                columns.push(j as i32 + base);
                values.push(v);
            }
        }
        offsets.push(columns.len() as i32 + base);
    }
    SpMat {
        format: 1,
        rows: a.len() as i64,
        cols: a[0].len() as i64,
        nnz: values.len() as i64,
        offsets: memory.alloc(i32s(&offsets)),
        indices: memory.alloc(i32s(&columns)),
        values: memory.alloc(f64s(&values)),
        offset_type: 2,
        index_type: 2,
        base: base as u8,
        value_type: R64F,
        fill_mode: 0,
        diag_type: 0,
    }
}

fn host(v: f64) -> Scalar {
    Scalar {
        value: (v, 0.0),
        device: None,
    }
}

fn new_handle(state: &mut State, memory: &mut Memory) -> u64 {
    let reply = state.call(memory, Call::Create {}).expect("create");
    let mut b = [0u8; 8];
    b.copy_from_slice(&reply.out);
    u64::from_le_bytes(b)
}

fn vector(memory: &mut Memory, v: &[f64]) -> DnVec {
    DnVec {
        size: v.len() as i64,
        values: memory.alloc(f64s(v)),
        value_type: R64F,
    }
}

#[test]
fn spmv_matches_dense_for_both_bases_and_transpose() {
    let a = dense_a();
    for base in [0, 1] {
        for op in [0u8, 1] {
            let mut memory = Memory::default();
            let mut state = State::default();
            let handle = new_handle(&mut state, &mut memory);
            let sp = csr(&mut memory, &a, base);
            let (m, n) = if op == 0 { (4, 5) } else { (5, 4) };
            let xs: Vec<f64> = (0..n).map(|i| i as f64 + 1.0).collect();
            let ys: Vec<f64> = (0..m).map(|i| 10.0 * i as f64).collect();
            let x = vector(&mut memory, &xs);
            let y = vector(&mut memory, &ys);
            let call = Call::SpMv {
                handle,
                op,
                alpha: host(2.0),
                a: sp,
                x,
                beta: host(0.5),
                y,
                compute_type: R64F,
            };
            assert_eq!(state.call(&mut memory, call).expect("spmv").status, 0);
            let expected: Vec<f64> = (0..m)
                .map(|i| {
                    let dot: f64 = (0..n)
                        .map(|k| if op == 0 { a[i][k] } else { a[k][i] } * xs[k])
                        .sum();
                    2.0 * dot + 0.5 * ys[i]
                })
                .collect();
            assert_eq!(read_f64s(&memory, y.values), expected);
        }
    }
}

#[test]
fn spmm_row_and_column_major() {
    let a = dense_a();
    for order in [1u8, 2] {
        let mut memory = Memory::default();
        let mut state = State::default();
        let handle = new_handle(&mut state, &mut memory);
        let sp = csr(&mut memory, &a, 0);
        // B is 5x3, C is 4x3, both with a padded leading dimension.
        let (bld, cld) = if order == 1 { (6, 5) } else { (4, 4) };
        let b_at = |i: usize, j: usize| (i * 3 + j) as f64 * 0.25 - 1.0;
        let index =
            |ld: usize, i: usize, j: usize| if order == 1 { j * ld + i } else { i * ld + j };
        let mut bv = vec![0.0; 6 * 5];
        for i in 0..5 {
            for j in 0..3 {
                bv[index(bld, i, j)] = b_at(i, j);
            }
        }
        let cv = vec![1.0; 5 * 4];
        let b = DnMat {
            rows: 5,
            cols: 3,
            ld: bld as i64,
            values: memory.alloc(f64s(&bv)),
            value_type: R64F,
            order,
        };
        let c = DnMat {
            rows: 4,
            cols: 3,
            ld: cld as i64,
            values: memory.alloc(f64s(&cv)),
            value_type: R64F,
            order,
        };
        let call = Call::SpMm {
            handle,
            op_a: 0,
            op_b: 0,
            alpha: host(1.0),
            a: sp,
            b,
            beta: host(3.0),
            c,
            compute_type: R64F,
        };
        assert_eq!(state.call(&mut memory, call).expect("spmm").status, 0);
        let got = read_f64s(&memory, c.values);
        for i in 0..4 {
            for j in 0..3 {
                let expected: f64 = (0..5).map(|k| a[i][k] * b_at(k, j)).sum::<f64>() + 3.0;
                assert_eq!(got[index(cld, i, j)], expected, "C({i},{j})");
            }
        }
    }
}

#[test]
fn spgemm_counts_then_copies_the_product() {
    let a = dense_a();
    let bt: Vec<Vec<f64>> = (0..5).map(|k| (0..4).map(|i| a[i][k]).collect()).collect();
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    let sa = csr(&mut memory, &a, 0);
    let sb = csr(&mut memory, &bt, 0);
    let reply = state
        .call(
            &mut memory,
            Call::SpGemmNnz {
                handle,
                a: sa,
                b: sb,
            },
        )
        .expect("nnz");
    let nnz = i64::from_le_bytes(reply.out.try_into().expect("i64"));
    // A A^T: rows 0, 2, 3 pair up with themselves; 0-3 and 2-3 overlap.
    assert_eq!(nnz, 7);
    let c = SpMat {
        nnz,
        rows: 4,
        cols: 4,
        offsets: memory.alloc(vec![0; 5 * 4]),
        indices: memory.alloc(vec![0; 7 * 4]),
        values: memory.alloc(vec![0; 7 * 8]),
        ..sa
    };
    let call = Call::SpGemmCopy {
        handle,
        alpha: host(1.0),
        a: sa,
        b: sb,
        c,
        compute_type: R64F,
    };
    assert_eq!(state.call(&mut memory, call).expect("copy").status, 0);
    assert_eq!(read_i32s(&memory, c.offsets), vec![0, 2, 2, 4, 7]);
    assert_eq!(read_i32s(&memory, c.indices), vec![0, 3, 2, 3, 0, 2, 3]);
    assert_eq!(
        read_f64s(&memory, c.values),
        vec![5.0, 6.0, 50.0, 35.0, 6.0, 35.0, 85.0]
    );
}

#[test]
fn spsv_lower_upper_unit() {
    let l = vec![
        vec![2.0, 9.0, 9.0],
        vec![1.0, 4.0, 9.0],
        vec![0.0, 3.0, 5.0],
    ];
    for (fill, diag) in [(0u8, 0u8), (1, 0), (0, 1)] {
        let mut memory = Memory::default();
        let mut state = State::default();
        let handle = new_handle(&mut state, &mut memory);
        let mut a = csr(&mut memory, &l, 0);
        a.fill_mode = fill;
        a.diag_type = diag;
        let xs = [1.0, 2.0, 3.0];
        let x = vector(&mut memory, &xs);
        let y = vector(&mut memory, &[f64::NAN; 3]);
        let call = Call::SpSv {
            handle,
            op: 0,
            alpha: host(1.0),
            a,
            x,
            y,
            compute_type: R64F,
        };
        assert_eq!(state.call(&mut memory, call).expect("spsv").status, 0);
        let ys = read_f64s(&memory, y.values);
        // The solution satisfies the chosen triangle.
        for i in 0..3 {
            let mut sum = 0.0;
            for (j, y) in ys.iter().enumerate() {
                let in_triangle = if fill == 0 { j <= i } else { j >= i };
                let v = if i == j && diag == 1 { 1.0 } else { l[i][j] };
                if in_triangle {
                    sum += v * y;
                }
            }
            assert!(
                (sum - xs[i]).abs() < 1e-12,
                "fill {fill} diag {diag}: row {i}"
            );
        }
    }
}

#[test]
fn csr_to_csc_coo_and_dense_round_trips() {
    let a = dense_a();
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    let sp = csr(&mut memory, &a, 1);
    let csc_values = memory.alloc(vec![0; 7 * 8]);
    let csc_offsets = memory.alloc(vec![0; 6 * 4]);
    let csc_rows = memory.alloc(vec![0; 7 * 4]);
    let call = Call::Csr2Csc {
        handle,
        m: 4,
        n: 5,
        nnz: 7,
        csr_values: sp.values,
        csr_offsets: sp.offsets,
        csr_columns: sp.indices,
        csc_values,
        csc_offsets,
        csc_rows,
        value_type: R64F,
        copy_values: true,
        base: 1,
    };
    assert_eq!(state.call(&mut memory, call).expect("csr2csc").status, 0);
    assert_eq!(read_i32s(&memory, csc_offsets), vec![1, 3, 4, 5, 6, 8]);
    assert_eq!(read_i32s(&memory, csc_rows), vec![1, 4, 3, 1, 3, 3, 4]);
    assert_eq!(
        read_f64s(&memory, csc_values),
        vec![1.0, 6.0, 3.0, 2.0, 4.0, 5.0, 7.0]
    );

    let coo_rows = memory.alloc(vec![0; 7 * 4]);
    let call = Call::Csr2Coo {
        handle,
        csr_offsets: sp.offsets,
        nnz: 7,
        m: 4,
        coo_rows,
        base: 1,
    };
    assert_eq!(state.call(&mut memory, call).expect("csr2coo").status, 0);
    assert_eq!(read_i32s(&memory, coo_rows), vec![1, 1, 3, 3, 3, 4, 4]);
    let offsets = memory.alloc(vec![0; 5 * 4]);
    let call = Call::Coo2Csr {
        handle,
        coo_rows,
        nnz: 7,
        m: 4,
        csr_offsets: offsets,
        base: 1,
    };
    assert_eq!(state.call(&mut memory, call).expect("coo2csr").status, 0);
    assert_eq!(read_i32s(&memory, offsets), read_i32s(&memory, sp.offsets));

    // Sparse to dense (row-major), then back to CSR.
    let dense = DnMat {
        rows: 4,
        cols: 5,
        ld: 5,
        values: memory.alloc(f64s(&[f64::NAN; 20])),
        value_type: R64F,
        order: 2,
    };
    let call = Call::SparseToDense {
        handle,
        a: sp,
        b: dense,
    };
    assert_eq!(state.call(&mut memory, call).expect("to dense").status, 0);
    assert_eq!(read_f64s(&memory, dense.values), a.concat());
    let back = SpMat {
        offsets: memory.alloc(vec![0; 5 * 4]),
        indices: memory.alloc(vec![0; 7 * 4]),
        values: memory.alloc(vec![0; 7 * 8]),
        nnz: 0,
        ..sp
    };
    let reply = state
        .call(
            &mut memory,
            Call::DenseToSparseAnalysis {
                handle,
                a: dense,
                b: back,
            },
        )
        .expect("analysis");
    assert_eq!(reply.out, 7i64.to_le_bytes());
    let back = SpMat { nnz: 7, ..back };
    let call = Call::DenseToSparseConvert {
        handle,
        a: dense,
        b: back,
    };
    assert_eq!(state.call(&mut memory, call).expect("convert").status, 0);
    for (got, want) in [
        (back.offsets, sp.offsets),
        (back.indices, sp.indices),
        (back.values, sp.values),
    ] {
        assert_eq!(memory.bytes(got), memory.bytes(want));
    }
}

#[test]
fn complex_single_precision_spmv_conjugate_transpose() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    // A = [[1+2i, 0], [3-1i, 4i]] in COO, C_32F.
    let c32 = |v: &[(f32, f32)]| -> Vec<u8> {
        v.iter()
            .flat_map(|(r, i)| [r.to_le_bytes(), i.to_le_bytes()].concat())
            .collect()
    };
    let a = SpMat {
        format: 3,
        rows: 2,
        cols: 2,
        nnz: 3,
        offsets: memory.alloc(i32s(&[0, 1, 1])),
        indices: memory.alloc(i32s(&[0, 0, 1])),
        values: memory.alloc(c32(&[(1.0, 2.0), (3.0, -1.0), (0.0, 4.0)])),
        offset_type: 2,
        index_type: 2,
        base: 0,
        value_type: 4,
        fill_mode: 0,
        diag_type: 0,
    };
    let x = DnVec {
        size: 2,
        values: memory.alloc(c32(&[(1.0, 0.0), (0.0, 1.0)])),
        value_type: 4,
    };
    let y = DnVec {
        size: 2,
        values: memory.alloc(c32(&[(0.0, 0.0), (0.0, 0.0)])),
        value_type: 4,
    };
    let call = Call::SpMv {
        handle,
        op: 2,
        alpha: host(1.0),
        a,
        x,
        beta: host(0.0),
        y,
        compute_type: 4,
    };
    assert_eq!(state.call(&mut memory, call).expect("spmv").status, 0);
    // A^H = [[1-2i, 3+i], [0, -4i]], so A^H [1, i] = [i, 4].
    let got = ValueType::C32.decode(memory.bytes(y.values));
    let expected = [Complex::new(0.0, 1.0), Complex::new(4.0, 0.0)];
    assert_eq!(got, expected);
}

#[test]
fn errors_have_cusparse_statuses() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    let sp = csr(&mut memory, &dense_a(), 0);
    let x = vector(&mut memory, &[1.0; 5]);
    let y = vector(&mut memory, &[1.0; 4]);
    let spmv = |handle, a, x| Call::SpMv {
        handle,
        op: 0,
        alpha: host(1.0),
        a,
        x,
        beta: host(0.0),
        y,
        compute_type: R64F,
    };
    let status =
        |state: &mut State, memory: &mut Memory, call| state.call(memory, call).map(|r| r.status);
    // Unknown handle, then one used after destroy.
    assert_eq!(
        status(&mut state, &mut memory, spmv(handle + 1, sp, x)).ok(),
        Some(NOT_INITIALIZED)
    );
    // Wrong vector length.
    let short = DnVec { size: 4, ..x };
    assert_eq!(
        status(&mut state, &mut memory, spmv(handle, sp, short)).ok(),
        Some(INVALID_VALUE)
    );
    // A column index out of range.
    let bad = memory.alloc(i32s(&[0, 2, 1, 3, 9, 0, 4]));
    let bad_a = SpMat { indices: bad, ..sp };
    assert_eq!(
        status(&mut state, &mut memory, spmv(handle, bad_a, x)).ok(),
        Some(INVALID_VALUE)
    );
    // Values outside every allocation: a fault.
    let wild = SpMat {
        values: 0xdead_0000,
        ..sp
    };
    assert!(matches!(
        state.call(&mut memory, spmv(handle, wild, x)),
        Err(MathError::Fault(_))
    ));
    assert_eq!(
        status(&mut state, &mut memory, Call::Destroy { handle }).ok(),
        Some(0)
    );
    assert_eq!(
        status(&mut state, &mut memory, spmv(handle, sp, x)).ok(),
        Some(NOT_INITIALIZED)
    );
    assert_eq!(
        status(&mut state, &mut memory, Call::Destroy { handle }).ok(),
        Some(NOT_INITIALIZED)
    );
}

fn status(state: &mut State, memory: &mut Memory, call: Call) -> i32 {
    state.call(memory, call).expect("no fault").status
}

#[test]
fn coo_sort_is_stable_and_permutes_p() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let h = new_handle(&mut state, &mut memory);
    // (row, col): (2,1) (0,3) (2,1) (0,0) (1,2); the two (2,1) keep order.
    let rows = memory.alloc(i32s(&[2, 0, 2, 0, 1]));
    let cols = memory.alloc(i32s(&[1, 3, 1, 0, 2]));
    let p = memory.alloc(i32s(&[9; 5]));
    let identity = Call::IdentityPermutation { handle: h, n: 5, p };
    assert_eq!(status(&mut state, &mut memory, identity), 0);
    assert_eq!(read_i32s(&memory, p), vec![0, 1, 2, 3, 4]);
    let sort = |by_row| Call::CooSort {
        handle: h,
        by_row,
        m: 3,
        n: 4,
        nnz: 5,
        rows,
        cols,
        p,
    };
    assert_eq!(status(&mut state, &mut memory, sort(true)), 0);
    assert_eq!(read_i32s(&memory, rows), vec![0, 0, 1, 2, 2]);
    assert_eq!(read_i32s(&memory, cols), vec![0, 3, 2, 1, 1]);
    assert_eq!(read_i32s(&memory, p), vec![3, 1, 4, 0, 2]);
    // By column, from there: P composes with the previous sort.
    assert_eq!(status(&mut state, &mut memory, sort(false)), 0);
    assert_eq!(read_i32s(&memory, cols), vec![0, 1, 1, 2, 3]);
    assert_eq!(read_i32s(&memory, rows), vec![0, 2, 2, 1, 0]);
    assert_eq!(read_i32s(&memory, p), vec![3, 0, 2, 4, 1]);
}

#[test]
fn csr_sort_sorts_within_rows_and_checks_offsets() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let h = new_handle(&mut state, &mut memory);
    // Base one: rows [3, 1, 2] and [2, 2, 1].
    let offsets = memory.alloc(i32s(&[1, 4, 7]));
    let indices = memory.alloc(i32s(&[3, 1, 2, 2, 2, 1]));
    let p = memory.alloc(i32s(&[0, 1, 2, 3, 4, 5]));
    let call = |nnz| Call::CompressedSort {
        handle: h,
        major: 2,
        minor: 3,
        nnz,
        base: 1,
        offsets,
        indices,
        p,
    };
    assert_eq!(status(&mut state, &mut memory, call(6)), 0);
    assert_eq!(read_i32s(&memory, indices), vec![1, 2, 3, 1, 2, 2]);
    assert_eq!(read_i32s(&memory, p), vec![1, 2, 0, 5, 3, 4]);
    // Offsets past nnz: a malformed matrix.
    assert_eq!(status(&mut state, &mut memory, call(5)), INVALID_VALUE);
}

#[test]
fn gather_and_scatter_follow_the_indices() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let h = new_handle(&mut state, &mut memory);
    let y = vector(&mut memory, &[10.0, 20.0, 30.0, 40.0]);
    let x = SpVec {
        size: 4,
        nnz: 3,
        indices: memory.alloc(i32s(&[4, 1, 3])),
        values: memory.alloc(f64s(&[0.0; 3])),
        index_type: 2,
        base: 1,
        value_type: R64F,
    };
    let gather = Call::Gather { handle: h, y, x };
    assert_eq!(status(&mut state, &mut memory, gather), 0);
    assert_eq!(read_f64s(&memory, x.values), vec![40.0, 10.0, 30.0]);
    let z = vector(&mut memory, &[0.0; 4]);
    let scatter = Call::Scatter { handle: h, x, y: z };
    assert_eq!(status(&mut state, &mut memory, scatter), 0);
    assert_eq!(read_f64s(&memory, z.values), vec![10.0, 0.0, 30.0, 40.0]);
    // An index past the dense vector.
    let bad = SpVec {
        indices: memory.alloc(i32s(&[5, 1, 3])),
        ..x
    };
    let call = Call::Gather {
        handle: h,
        y,
        x: bad,
    };
    assert_eq!(status(&mut state, &mut memory, call), INVALID_VALUE);
}

/// Runs an ILU(0) or IC(0) analysis and factorization of CSR `a` (base 0)
/// and answers the zero pivot the info reports after each.
fn factor(
    state: &mut State,
    memory: &mut Memory,
    h: u64,
    a: &SpMat,
    ic: bool,
    boost: Option<Boost>,
) -> (i64, i64) {
    let out = state
        .call(memory, Call::CreateInfo { ic })
        .expect("create info")
        .out;
    let info = u64::from_le_bytes(out[..8].try_into().expect("8 bytes"));
    let mut pivots = [0i64; 2];
    for (n, analysis) in [true, false].into_iter().enumerate() {
        let call = Call::Factor0 {
            handle: h,
            info,
            ic,
            analysis,
            m: a.rows as i32,
            nnz: a.nnz as i32,
            base: a.base,
            values: a.values,
            offsets: a.offsets,
            columns: a.indices,
            value_type: a.value_type,
            boost,
        };
        assert_eq!(status(state, memory, call), 0);
        let query = Call::ZeroPivot {
            handle: h,
            info,
            ic,
            device_out: None,
        };
        let out = state.call(memory, query).expect("pivot").out;
        pivots[n] = i64::from_le_bytes(out[..8].try_into().expect("8 bytes"));
    }
    assert_eq!(status(state, memory, Call::DestroyInfo { info }), 0);
    (pivots[0], pivots[1])
}

#[test]
fn ilu0_reproduces_a_on_its_pattern() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let h = new_handle(&mut state, &mut memory);
    let a = vec![
        vec![4.0, -1.0, 0.0, -1.0],
        vec![-1.0, 4.0, -1.0, 0.0],
        vec![0.0, -1.0, 4.0, -1.0],
        vec![-1.0, 0.0, -1.0, 4.0],
    ];
    let m = csr(&mut memory, &a, 0);
    assert_eq!(
        factor(&mut state, &mut memory, h, &m, false, None),
        (-1, -1)
    );
    let f = read_f64s(&memory, m.values);
    // Factors by position (pattern of a, row by row).
    let pattern: Vec<(usize, usize)> = (0..4)
        .flat_map(|i| (0..4).map(move |j| (i, j)))
        .filter(|&(i, j)| a[i][j] != 0.0)
        .collect();
    let at = |i: usize, j: usize| {
        pattern
            .iter()
            .position(|&e| e == (i, j))
            .map_or(0.0, |k| f[k])
    };
    let l = |i: usize, j: usize| {
        if i == j {
            1.0
        } else if j < i {
            at(i, j)
        } else {
            0.0
        }
    };
    let u = |i: usize, j: usize| if j >= i { at(i, j) } else { 0.0 };
    for &(i, j) in &pattern {
        let lu: f64 = (0..4).map(|k| l(i, k) * u(k, j)).sum();
        assert!(
            (lu - a[i][j]).abs() < 1e-12,
            "({i},{j}): {lu} vs {}",
            a[i][j]
        );
    }
    // Zero fill-in: (3,1) is outside the pattern, so the product there is
    // not a's zero (a full LU would store a fill-in entry).
    let lu31: f64 = (0..4).map(|k| l(3, k) * u(k, 1)).sum();
    assert!(lu31.abs() > 0.1);
}

#[test]
fn ic0_reproduces_a_on_its_lower_pattern_and_keeps_the_upper() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let h = new_handle(&mut state, &mut memory);
    let a = vec![
        vec![4.0, 1.0, 0.0, 1.0],
        vec![1.0, 5.0, 2.0, 0.0],
        vec![0.0, 2.0, 6.0, 1.0],
        vec![1.0, 0.0, 1.0, 7.0],
    ];
    let m = csr(&mut memory, &a, 1);
    assert_eq!(factor(&mut state, &mut memory, h, &m, true, None), (-1, -1));
    let f = read_f64s(&memory, m.values);
    let pattern: Vec<(usize, usize)> = (0..4)
        .flat_map(|i| (0..4).map(move |j| (i, j)))
        .filter(|&(i, j)| a[i][j] != 0.0)
        .collect();
    let l = |i: usize, j: usize| {
        if j > i {
            return 0.0;
        }
        pattern
            .iter()
            .position(|&e| e == (i, j))
            .map_or(0.0, |k| f[k])
    };
    for (k, &(i, j)) in pattern.iter().enumerate() {
        if j > i {
            assert_eq!(f[k], a[i][j], "upper ({i},{j}) changed");
            continue;
        }
        let llt: f64 = (0..4).map(|q| l(i, q) * l(j, q)).sum();
        assert!(
            (llt - a[i][j]).abs() < 1e-12,
            "({i},{j}): {llt} vs {}",
            a[i][j]
        );
    }
}

#[test]
fn zero_pivots_structural_numerical_and_boosted() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let h = new_handle(&mut state, &mut memory);
    // Row 1 has no diagonal entry: the analysis finds it (base one: 2).
    let missing = vec![vec![2.0, 1.0], vec![1.0, 0.0]];
    let m = csr(&mut memory, &missing, 1);
    assert_eq!(factor(&mut state, &mut memory, h, &m, false, None), (2, 2));
    // U(1,1) = 1 - 1 = 0: the factorization finds it.
    let singular = vec![vec![1.0, 1.0], vec![1.0, 1.0]];
    let m = csr(&mut memory, &singular, 0);
    assert_eq!(factor(&mut state, &mut memory, h, &m, false, None), (-1, 1));
    let m = csr(&mut memory, &singular, 0);
    assert_eq!(factor(&mut state, &mut memory, h, &m, true, None), (-1, 1));
    // Boosted: the pivot becomes 3 and is not reported.
    let m = csr(&mut memory, &singular, 0);
    let boost = Boost {
        tol: host(1e-9),
        value: host(3.0),
    };
    assert_eq!(
        factor(&mut state, &mut memory, h, &m, false, Some(boost)),
        (-1, -1)
    );
    assert_eq!(read_f64s(&memory, m.values), vec![1.0, 1.0, 1.0, 3.0]);
}

#[test]
fn info_objects_are_checked() {
    let mut memory = Memory::default();
    let mut state = State::default();
    let h = new_handle(&mut state, &mut memory);
    let query = |info, ic| Call::ZeroPivot {
        handle: h,
        info,
        ic,
        device_out: None,
    };
    assert_eq!(
        status(&mut state, &mut memory, query(77, false)),
        INVALID_VALUE
    );
    let out = state
        .call(&mut memory, Call::CreateInfo { ic: false })
        .expect("create")
        .out;
    let info = u64::from_le_bytes(out[..8].try_into().expect("8 bytes"));
    // An ILU info is not an IC one.
    assert_eq!(
        status(&mut state, &mut memory, query(info, true)),
        INVALID_VALUE
    );
    assert_eq!(status(&mut state, &mut memory, query(info, false)), 0);
    let call = Call::IdentityPermutation {
        handle: h + 1,
        n: 1,
        p: 0,
    };
    assert_eq!(status(&mut state, &mut memory, call), NOT_INITIALIZED);
    assert_eq!(
        status(&mut state, &mut memory, Call::DestroyInfo { info }),
        0
    );
    assert_eq!(
        status(&mut state, &mut memory, Call::DestroyInfo { info }),
        INVALID_VALUE
    );
}

#[test]
fn an_outer_product_is_counted_without_being_formed() {
    // A column times a row: n² entries from 2n. The product is counted row
    // by row and formed only into the room C was given.
    let n = 1024;
    let column: Vec<Vec<f64>> = (0..n).map(|i| vec![i as f64 + 1.0]).collect();
    let row = vec![(0..n).map(|j| j as f64 + 1.0).collect::<Vec<_>>()];
    let mut memory = Memory::default();
    let mut state = State::default();
    let handle = new_handle(&mut state, &mut memory);
    let (sa, sb) = (csr(&mut memory, &column, 0), csr(&mut memory, &row, 0));
    let count = Call::SpGemmNnz {
        handle,
        a: sa,
        b: sb,
    };
    let reply = state.call(&mut memory, count.clone()).expect("nnz");
    let nnz = i64::from_le_bytes(reply.out.try_into().expect("i64"));
    assert_eq!(nnz, (n * n) as i64);
    // C sized for 7 entries: refused at the first row that does not fit.
    let c = SpMat {
        nnz: 7,
        rows: n as i64,
        cols: n as i64,
        offsets: memory.alloc(vec![0; (n + 1) * 4]),
        indices: memory.alloc(vec![0; 7 * 4]),
        values: memory.alloc(vec![0; 7 * 8]),
        ..sa
    };
    let copy = Call::SpGemmCopy {
        handle,
        alpha: host(1.0),
        a: sa,
        b: sb,
        c,
        compute_type: R64F,
    };
    assert_eq!(status(&mut state, &mut memory, copy), INVALID_VALUE);
    // And counting stops at the deadline.
    let past = Some(std::time::Instant::now());
    let cut = crate::deadline::within(past, || state.call(&mut memory, count));
    assert!(matches!(cut, Err(crate::deadline::Expired)));
}
