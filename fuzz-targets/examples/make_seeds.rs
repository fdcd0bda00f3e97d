//! Writes the seed inputs of the byte-slice fuzz targets, made with rcud's
//! own encoders, into `<dir>/<target>/seed-*`:
//!
//!     cargo run -p rcud-fuzz-targets --example make_seeds -- fuzz/corpus
//!
//! Seeds only start a campaign: the corpora checked in are what
//! `cargo fuzz cmin` kept of the campaign's finds (scripts/fuzz.sh cmin).
//! The fatbin and PTX seeds are the fixtures of those crates' tests and the
//! PTX of this crate; the structure-aware target starts from nothing.

use std::path::{Path, PathBuf};

use rcud_proto::auth::PROOF_LEN;
use rcud_proto::codec::{to_vec, Blob, Writer};
use rcud_proto::frame::{FrameHeader, FrameKind};
use rcud_proto::handshake::{self, ClientHello, ClientProof, ServerHello, Verdict};
use rcud_proto::ops::{self, rep, req, Failure, Request};
use rcud_proto::CudaError;

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/corpus".into()),
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    request(&dir.join("request"));
    handshake_seeds(&dir.join("handshake"));
    setup(&dir.join("setup"));
    math(&dir.join("math"));
    copy_files(
        &root.join("fatbin/tests/fixtures"),
        "fatbin",
        &dir.join("fatbin"),
    );
    copy_files(&root.join("emu/tests/ptx"), "ptx", &dir.join("ptx"));
    for (i, text) in [
        include_str!("../ptx/vectors.ptx"),
        include_str!("../ptx/misc.ptx"),
    ]
    .iter()
    .enumerate()
    {
        write(&dir.join("ptx"), &format!("catalog-{i}"), text.as_bytes());
        let wrapped = rcud_fatbin::image::wrap_ptx(text.as_bytes());
        write(&dir.join("fatbin"), &format!("catalog-{i}"), &wrapped);
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::create_dir_all(dir).expect("corpus directory");
    std::fs::write(dir.join(format!("seed-{name}")), bytes).expect("seed");
}

fn copy_files(from: &Path, ext: &str, to: &Path) {
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .expect("fixtures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == ext || (ext == "fatbin" && e == "nv_fatbin"))
        })
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        write(to, &name, &std::fs::read(&p).expect("fixture"));
    }
}

fn frame(request: &Request, id: u32, bulk: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    request.encode(&mut Writer::new(&mut body));
    let header = FrameHeader {
        flags: 0,
        kind: FrameKind::REQUEST,
        op: request.op().0,
        body_len: body.len() as u32,
        id,
        bulk_len: bulk.len() as u64,
    };
    let mut out = header.to_bytes().to_vec();
    out.extend_from_slice(&body);
    out.extend_from_slice(bulk);
    out
}

fn request(dir: &Path) {
    let requests: Vec<(Request, Vec<u8>)> = vec![
        (req::Attach { gpu: 0, window: 1 }.into(), vec![]),
        (req::GetDeviceInfo { gpu: 0 }.into(), vec![]),
        (req::Malloc { size: 4096 }.into(), vec![]),
        (
            req::Free {
                ptr: 0x1000_0000_0000,
            }
            .into(),
            vec![],
        ),
        (
            req::MemcpyHtoD {
                dst: 0x1000_0000_0000,
                len: 8,
            }
            .into(),
            vec![7; 8],
        ),
        (
            req::Memcpy2DDtoD {
                dst: 1,
                dpitch: 64,
                src: 2,
                spitch: 64,
                width: 16,
                height: 4,
            }
            .into(),
            vec![],
        ),
        (
            req::ModuleGetFunction {
                module: 0,
                name: "_Z6vecAddPKfS0_Pfi".into(),
            }
            .into(),
            vec![],
        ),
        (
            req::LaunchKernel {
                function: 1,
                grid: [2, 1, 1],
                block: [128, 1, 1],
                shared_mem: 0,
                stream: 0,
                params: Blob(vec![0; 24]),
            }
            .into(),
            vec![],
        ),
        (
            req::PeerSend {
                src: 0x1000_0000_0000,
                len: 64,
                endpoint: "rcud-peer/x".into(),
                ticket: [3; 16],
            }
            .into(),
            vec![],
        ),
        (
            req::ModuleLoad {
                hash: [9; 32],
                len: 4,
            }
            .into(),
            vec![1, 2, 3, 4],
        ),
    ];
    let mut stream = Vec::new();
    for (i, (r, bulk)) in requests.iter().enumerate() {
        let f = frame(r, i as u32, bulk);
        write(dir, &format!("frame-{}", r.name()), &f);
        stream.extend_from_slice(&f);
        // The op-and-body form.
        let mut op_body = r.op().0.to_le_bytes().to_vec();
        r.encode(&mut Writer::new(&mut op_body));
        write(dir, &format!("op-{}", r.name()), &op_body);
    }
    write(dir, "stream", &stream);
    // Reply bodies, behind an op id of 0xFFFF (never a request).
    let mut ok = vec![0xFF, 0xFF];
    ops::encode_reply(
        Ok(&rep::LaunchKernel {
            printf: Blob(b"x=1\n".to_vec()),
        }),
        &mut ok,
    );
    write(dir, "reply-launch", &ok);
    let mut err = vec![0xFF, 0xFF];
    ops::encode_reply::<rep::Malloc>(
        Err(&Failure::new(CudaError::MEMORY_ALLOCATION, "out of memory")),
        &mut err,
    );
    write(dir, "reply-failure", &err);
}

fn handshake_seeds(dir: &Path) {
    let mut hello = ClientHello::new("seed");
    hello.tenant = "alice".into();
    hello.nonce = [1; PROOF_LEN];
    write(dir, "client-hello-body", &to_vec(&hello));
    write(dir, "client-hello", &handshake::encode_hello(&hello));
    // A hello that resumes a session.
    let mut resume = hello.clone();
    resume.resume = [7; 16];
    write(
        dir,
        "client-hello-resume",
        &handshake::encode_hello(&resume),
    );
    let server = ServerHello {
        version: handshake::PROTOCOL_VERSION,
        accepted: true,
        gpu_count: 1,
        driver_version: 13000,
        backend: "emu".into(),
        instance: [0; 16],
        message: "welcome".into(),
        auth: false,
        nonce: [2; PROOF_LEN],
    };
    let verdict = Verdict {
        accepted: true,
        message: "ok".into(),
        proof: [0; PROOF_LEN],
    };
    let mut exchange = handshake::encode_hello(&server);
    exchange.extend_from_slice(&handshake::encode_hello(&verdict));
    write(dir, "server-exchange", &exchange);
    let refused = ServerHello {
        accepted: false,
        message: "server is at its limit of 1 clients".into(),
        ..server.clone()
    };
    write(dir, "server-refusal", &handshake::encode_hello(&refused));
    let with_auth = ServerHello {
        auth: true,
        ..server
    };
    let mut exchange = handshake::encode_hello(&with_auth);
    exchange.extend_from_slice(&handshake::encode_hello(&verdict));
    write(dir, "server-auth", &exchange);
    write(dir, "verdict", &handshake::encode_hello(&verdict));
    write(
        dir,
        "proof",
        &handshake::encode_hello(&ClientProof {
            proof: [4; PROOF_LEN],
        }),
    );
    write(dir, "token", b"alice:0123456789abcdef0123\n");
}

fn setup(dir: &Path) {
    let mut ok = b"RDV1".to_vec();
    ok.push(0);
    ok.push(0);
    ok.extend_from_slice(&7100u16.to_le_bytes());
    ok.extend_from_slice(&[0; 36]);
    write(dir, "offer-soft", &ok);
    let mut core = ok.clone();
    core[5] = 1;
    core[8..44].copy_from_slice(b"01234567-89ab-cdef-0123-456789abcdef");
    write(dir, "offer-rdma-core", &core);
    let mut refused = b"RDV1".to_vec();
    refused.push(1);
    let msg = b"no RDMA device";
    refused.extend_from_slice(&(msg.len() as u16).to_le_bytes());
    refused.extend_from_slice(msg);
    write(dir, "offer-refused", &refused);
    write(dir, "remote-region", &[0x10; 20]);
    write(dir, "transport-code", &[2]);
}

/// Real calls of each math library, their pointers as the target's
/// placeholders: a valid sequence, and the same calls aimed at the other
/// client's buffer or past the end of the caller's.
fn math(dir: &Path) {
    use rcud_fuzz_targets::math::{
        placeholder, record, TAG_FIRST, TAG_FIRST_END, TAG_SECOND, TAG_VICTIM,
    };
    use rcud_proto::math::{blas, fft, rand, solver, sparse, Library};

    let lib = |l: Library| l as u8;
    let at = |tag, offset| placeholder(tag, offset);
    let gemm = |c: u64| blas::Call::Gemm {
        handle: 1,
        types: [blas::dtype::R32F; 4],
        transa: 0,
        transb: 0,
        m: 16,
        n: 16,
        k: 16,
        alpha: blas::Scalar::Host { re: 1.0, im: 0.0 },
        a: blas::Operand {
            ptr: at(TAG_FIRST, 0),
            ld: 16,
            stride: 0,
        },
        b: blas::Operand {
            ptr: at(TAG_SECOND, 0),
            ld: 16,
            stride: 0,
        },
        beta: blas::Scalar::Device {
            ptr: at(TAG_FIRST, 4096),
        },
        c: blas::Operand {
            ptr: c,
            ld: 16,
            stride: 0,
        },
        batch: 1,
        pointer_arrays: false,
    };
    let blas_create = record(lib(Library::Blas), &to_vec(&blas::Call::Create {}));
    for (name, target) in [
        ("blas-gemm", at(TAG_SECOND, 2048)),
        ("blas-gemm-victim", at(TAG_VICTIM, 0)),
        ("blas-gemm-end", at(TAG_FIRST_END, 0)),
    ] {
        let mut seed = blas_create.clone();
        seed.extend(record(lib(Library::Blas), &to_vec(&gemm(target))));
        write(dir, name, &seed);
    }

    // A packed triangle (n (n + 1) / 2 elements) and rotg's device outputs,
    // aimed inside, at the other client, past the end.
    let tpmv = |ap: u64| blas::Call::Banded {
        handle: 1,
        dtype: blas::dtype::R32F,
        kind: blas::level2::TPMV,
        hermitian: false,
        uplo: 0,
        trans: 0,
        diag: 0,
        m: 32,
        n: 32,
        kl: 0,
        k: 0,
        alpha: blas::Scalar::Host { re: 1.0, im: 0.0 },
        a: blas::Operand {
            ptr: ap,
            ld: 0,
            stride: 0,
        },
        x: blas::Operand {
            ptr: at(TAG_SECOND, 0),
            ld: 1,
            stride: 0,
        },
        beta: blas::Scalar::Host { re: 0.0, im: 0.0 },
        y: blas::Operand {
            ptr: 0,
            ld: 1,
            stride: 0,
        },
    };
    let rotg = |s: u64| blas::Call::Rotg {
        handle: 1,
        dtype: blas::dtype::R64F,
        modified: false,
        values: [0.0; 4],
        ptrs: [at(TAG_FIRST, 0), at(TAG_FIRST, 8), at(TAG_FIRST, 16), s, 0],
    };
    for (name, call) in [
        ("blas-tpmv", tpmv(at(TAG_FIRST, 0))),
        ("blas-tpmv-victim", tpmv(at(TAG_VICTIM, 0))),
        ("blas-tpmv-end", tpmv(at(TAG_FIRST_END, 0))),
        ("blas-rotg-device", rotg(at(TAG_FIRST, 24))),
        ("blas-rotg-victim", rotg(at(TAG_VICTIM, 0))),
    ] {
        let mut seed = blas_create.clone();
        seed.extend(record(lib(Library::Blas), &to_vec(&call)));
        write(dir, name, &seed);
    }

    let generate = |ptr: u64, n: u64| rand::Call::Generate {
        generator: 1,
        distribution: rand::Distribution::Normal as u32,
        ptr,
        n,
        mean: 0.0,
        stddev: 1.0,
    };
    for (name, ptr, n) in [
        ("rand-normal", at(TAG_FIRST, 0), 1024),
        ("rand-victim", at(TAG_VICTIM, 0), 1024),
        ("rand-overrun", at(TAG_FIRST, 0), 1 << 20),
    ] {
        let mut seed = record(
            lib(Library::Rand),
            &to_vec(&rand::Call::Create { rng_type: 101 }),
        );
        seed.extend(record(
            lib(Library::Rand),
            &to_vec(&rand::Call::SetSeed {
                generator: 1,
                seed: 7,
            }),
        ));
        seed.extend(record(lib(Library::Rand), &to_vec(&generate(ptr, n))));
        write(dir, name, &seed);
    }

    let plan = fft::Call::MakePlan {
        plan: 1,
        geometry: fft::Geometry {
            kind: 0x29, // CUFFT_C2C
            n: vec![64],
            batch: 4,
            advanced: None,
        },
    };
    for (name, output) in [
        ("fft-c2c", at(TAG_SECOND, 0)),
        ("fft-victim", at(TAG_VICTIM, 0)),
    ] {
        let mut seed = record(lib(Library::Fft), &to_vec(&fft::Call::Create {}));
        seed.extend(record(lib(Library::Fft), &to_vec(&plan)));
        seed.extend(record(
            lib(Library::Fft),
            &to_vec(&fft::Call::Exec {
                plan: 1,
                kind: 0x29,
                input: at(TAG_FIRST, 0),
                output,
                direction: -1,
            }),
        ));
        write(dir, name, &seed);
    }

    let mut seed = record(lib(Library::Sparse), &to_vec(&sparse::Call::Create {}));
    seed.extend(record(
        lib(Library::Sparse),
        &to_vec(&sparse::Call::Destroy { handle: 1 }),
    ));
    seed.extend(record(
        lib(Library::Solver),
        &to_vec(&solver::Call::Create {}),
    ));
    seed.extend(record(
        lib(Library::Solver),
        &to_vec(&solver::Call::Destroy { handle: 1 }),
    ));
    write(dir, "sparse-solver-handles", &seed);

    // Iterative refinement: a 16×16 system from half precision with the
    // residual history, then a least squares writing into the other
    // client's buffer.
    let irs = |gels: u8, m: i32, x: u64| solver::Call::Irs {
        handle: 1,
        dtype: 1,
        lowest: solver::PREC_R_16F,
        gels,
        m,
        n: 16,
        nrhs: 1,
        a: at(TAG_FIRST, 0),
        lda: m,
        ipiv: if gels == 0 { at(TAG_SECOND, 4096) } else { 0 },
        b: at(TAG_SECOND, 0),
        ldb: m,
        x,
        ldx: 16,
        info: at(TAG_SECOND, 8192),
        refine: solver::REFINE_CLASSICAL,
        max_iters: 50,
        tol: 0.0,
        fallback: 1,
        history: 1,
    };
    let mut seed = record(lib(Library::Solver), &to_vec(&solver::Call::Create {}));
    seed.extend(record(
        lib(Library::Solver),
        &to_vec(&irs(0, 16, at(TAG_SECOND, 1024))),
    ));
    seed.extend(record(
        lib(Library::Solver),
        &to_vec(&irs(1, 24, at(TAG_VICTIM, 0))),
    ));
    write(dir, "solver-irs", &seed);
}
