//! cuSPARSE calls on the wire.
//!
//! Handles live on the server. Matrix and vector descriptors are host
//! objects in NVIDIA's library too: the client keeps them and sends their
//! contents ([`SpMat`], [`DnVec`], [`DnMat`]) with each compute call.

crate::wire_struct! {
    /// A sparse matrix descriptor (`cusparseSpMatDescr_t`): CSR, CSC or COO.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SpMat {
        /// `cusparseFormat_t`: 1 CSR, 2 CSC, 3 COO.
        pub format: u8,
        /// Rows.
        pub rows: i64,
        /// Columns.
        pub cols: i64,
        /// Stored entries.
        pub nnz: i64,
        /// CSR row offsets, CSC column offsets, or COO row indices.
        pub offsets: u64,
        /// CSR column indices, CSC row indices, or COO column indices.
        pub indices: u64,
        /// The values.
        pub values: u64,
        /// `cusparseIndexType_t` of `offsets` (2 i32, 3 i64).
        pub offset_type: u8,
        /// `cusparseIndexType_t` of `indices`.
        pub index_type: u8,
        /// `cusparseIndexBase_t`: 0 or 1.
        pub base: u8,
        /// `cudaDataType` of the values.
        pub value_type: u8,
        /// `cusparseFillMode_t` (0 lower, 1 upper), for SpSV.
        pub fill_mode: u8,
        /// `cusparseDiagType_t` (0 non-unit, 1 unit), for SpSV.
        pub diag_type: u8,
    }
}

crate::wire_struct! {
    /// A dense vector descriptor (`cusparseDnVecDescr_t`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct DnVec {
        /// Elements.
        pub size: i64,
        /// Device address of the values.
        pub values: u64,
        /// `cudaDataType` of the values.
        pub value_type: u8,
    }
}

crate::wire_struct! {
    /// A dense matrix descriptor (`cusparseDnMatDescr_t`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct DnMat {
        /// Rows.
        pub rows: i64,
        /// Columns.
        pub cols: i64,
        /// Leading dimension, in elements.
        pub ld: i64,
        /// Device address of the values.
        pub values: u64,
        /// `cudaDataType` of the values.
        pub value_type: u8,
        /// `cusparseOrder_t`: 1 column-major, 2 row-major.
        pub order: u8,
    }
}

crate::wire_struct! {
    /// A sparse vector descriptor (`cusparseSpVecDescr_t`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SpVec {
        /// Elements of the (dense) vector it stands for.
        pub size: i64,
        /// Stored entries.
        pub nnz: i64,
        /// Device address of the indices.
        pub indices: u64,
        /// Device address of the values.
        pub values: u64,
        /// `cusparseIndexType_t` of the indices.
        pub index_type: u8,
        /// `cusparseIndexBase_t`: 0 or 1.
        pub base: u8,
        /// `cudaDataType` of the values.
        pub value_type: u8,
    }
}

crate::wire_struct! {
    /// A scalar (alpha, beta): by value when the application passed it in
    /// host memory, else the device address to read it from (in the call's
    /// compute type).
    #[derive(Debug, Clone, Copy, PartialEq, Default)]
    pub struct Scalar {
        /// Real and imaginary part, when passed by host pointer.
        pub value: (f64, f64),
        /// Device address, when passed by device pointer.
        pub device: Option<u64>,
    }
}

crate::wire_struct! {
    /// `cusparse?csrilu02_numericBoost`: a pivot whose magnitude is at most
    /// `tol` is replaced by `value`.
    #[derive(Debug, Clone, Copy, PartialEq, Default)]
    pub struct Boost {
        /// The threshold (a double, by value or device address).
        pub tol: Scalar,
        /// The replacement, in the matrix's value type.
        pub value: Scalar,
    }
}

crate::wire_enum! {
    /// A cuSPARSE call.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Call {
        /// `cusparseCreate`: answers the new handle's id (u64).
        1 Create {},
        /// `cusparseDestroy`.
        2 Destroy { handle: u64 },
        /// `cusparseSpMV`: y = alpha op(A) x + beta y.
        3 SpMv { handle: u64, op: u8, alpha: Scalar, a: SpMat, x: DnVec, beta: Scalar, y: DnVec, compute_type: u8 },
        /// `cusparseSpMM`: C = alpha op(A) op(B) + beta C.
        4 SpMm { handle: u64, op_a: u8, op_b: u8, alpha: Scalar, a: SpMat, b: DnMat, beta: Scalar, c: DnMat, compute_type: u8 },
        /// `cusparseSpGEMM_compute`: answers the nnz of A B (i64).
        5 SpGemmNnz { handle: u64, a: SpMat, b: SpMat },
        /// `cusparseSpGEMM_copy`: writes C = alpha A B (CSR, sorted).
        6 SpGemmCopy { handle: u64, alpha: Scalar, a: SpMat, b: SpMat, c: SpMat, compute_type: u8 },
        /// `cusparseSpSV_solve`: solves op(A) y = alpha x, A triangular.
        7 SpSv { handle: u64, op: u8, alpha: Scalar, a: SpMat, x: DnVec, y: DnVec, compute_type: u8 },
        /// `cusparseCsr2cscEx2`.
        8 Csr2Csc { handle: u64, m: i32, n: i32, nnz: i32, csr_values: u64, csr_offsets: u64, csr_columns: u64, csc_values: u64, csc_offsets: u64, csc_rows: u64, value_type: u8, copy_values: bool, base: u8 },
        /// `cusparseXcoo2csr`.
        9 Coo2Csr { handle: u64, coo_rows: u64, nnz: i32, m: i32, csr_offsets: u64, base: u8 },
        /// `cusparseXcsr2coo`.
        10 Csr2Coo { handle: u64, csr_offsets: u64, nnz: i32, m: i32, coo_rows: u64, base: u8 },
        /// `cusparseSparseToDense`.
        11 SparseToDense { handle: u64, a: SpMat, b: DnMat },
        /// `cusparseDenseToSparse_analysis`: answers the nnz of A (i64) and
        /// writes B's offsets when B is CSR or CSC.
        12 DenseToSparseAnalysis { handle: u64, a: DnMat, b: SpMat },
        /// `cusparseDenseToSparse_convert`.
        13 DenseToSparseConvert { handle: u64, a: DnMat, b: SpMat },
        /// `cusparseCreateIdentityPermutation`: `p[i] = i`, 32-bit.
        14 IdentityPermutation { handle: u64, n: i32, p: u64 },
        /// `cusparseXcoosortByRow` (`by_row`) or `ByColumn`: a stable sort
        /// of the 32-bit COO indices by (row, column) or (column, row);
        /// `p` (0 for none) is permuted along.
        15 CooSort { handle: u64, by_row: bool, m: i32, n: i32, nnz: i32, rows: u64, cols: u64, p: u64 },
        /// `cusparseXcsrsort` / `cusparseXcscsort`: a stable sort of the
        /// minor indices within each of `major` rows (CSR) or columns
        /// (CSC); `p` (0 for none) is permuted along.
        16 CompressedSort { handle: u64, major: i32, minor: i32, nnz: i32, base: u8, offsets: u64, indices: u64, p: u64 },
        /// `cusparseGather`: `x.values[k] = y[x.indices[k]]`.
        17 Gather { handle: u64, y: DnVec, x: SpVec },
        /// `cusparseScatter`: `y[x.indices[k]] = x.values[k]`.
        18 Scatter { handle: u64, x: SpVec, y: DnVec },
        /// `cusparseCreateCsrilu02Info` (`ic` false) or `Csric02Info`:
        /// answers the new info's id (u64).
        19 CreateInfo { ic: bool },
        /// `cusparseDestroyCsrilu02Info` / `Csric02Info`.
        20 DestroyInfo { info: u64 },
        /// `cusparse?csrilu02_analysis` / `csric02_analysis` (`analysis`),
        /// or the factorization itself, in place on `values` (32-bit CSR
        /// of `m` rows). Records the zero pivot in the info.
        21 Factor0 { handle: u64, info: u64, ic: bool, analysis: bool, m: i32, nnz: i32, base: u8, values: u64, offsets: u64, columns: u64, value_type: u8, boost: Option<Boost> },
        /// `cusparseXcsrilu02_zeroPivot` / `Xcsric02_zeroPivot`: answers
        /// the position (i32, in the matrix's base; -1 for none) and
        /// writes it at `device_out` when given.
        22 ZeroPivot { handle: u64, info: u64, ic: bool, device_out: Option<u64> },
    }
}
