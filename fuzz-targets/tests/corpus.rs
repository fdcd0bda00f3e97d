//! The CI smoke of the fuzz targets: every checked-in corpus file
//! (`fuzz/corpus/<target>/`) and a fixed number of seeded mutations of them
//! run through their target, on stable Rust, without libFuzzer. No target
//! may panic — not even where the code under test catches the panic (the
//! emulator runs kernels under `catch_unwind`), so a panic hook counts
//! them all. Each test also checks that its corpus reaches the decoder it
//! is meant for, rather than being turned away at the door.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};

use rcud_fuzz_targets::{agent, fatbin, handshake, math, ptx, request, setup, BYTE_TARGETS};

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Counts every panic of the process, caught or not, from here on; and
/// runs the tests one at a time, so that each knows the panics are its own.
/// Returns the count so far and the turn.
fn count_panics() -> (usize, MutexGuard<'static, ()>) {
    static HOOK: Once = Once::new();
    static SERIAL: Mutex<()> = Mutex::new(());
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
    let turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    (PANICS.load(Ordering::SeqCst), turn)
}

fn assert_no_panic_since(before: usize) {
    assert_eq!(PANICS.load(Ordering::SeqCst), before, "a target panicked");
}

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
}

/// The corpus of `target`, sorted by name; never empty. The inputs that
/// once found a fault (`fuzz/artifacts-found/<target>/`) replay with it.
fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = corpus_dir(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "the corpus of {target} is empty");
    let found = dir.join("../../artifacts-found").join(target);
    if let Ok(entries) = std::fs::read_dir(&found) {
        let mut more: Vec<PathBuf> = entries
            .map(|e| e.expect("directory entry").path())
            .filter(|p| p.is_file())
            .collect();
        more.sort();
        paths.extend(more);
    }
    paths
        .iter()
        .map(|p| std::fs::read(p).expect("corpus file"))
        .collect()
}

/// xorshift64*: the mutations are the same on every run.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// One to four random edits of `input`, some taking bytes from `other`.
fn mutate(input: &[u8], other: &[u8], rng: &mut Rng) -> Vec<u8> {
    const BYTES: [u8; 6] = [0, 1, 0x7F, 0x80, 0xFF, b'.'];
    const WORDS: [u32; 6] = [0, 1, 0x7FFF_FFFF, 0x8000_0000, u32::MAX, 4096];
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = out.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                out[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                out[i] = BYTES[rng.below(BYTES.len())];
            }
            2 if len >= 4 => {
                let i = rng.below(len - 3);
                let w = WORDS[rng.below(WORDS.len())];
                out[i..i + 4].copy_from_slice(&w.to_le_bytes());
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                out.drain(i..i + n);
            }
            4 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                let copy = out[i..i + n].to_vec();
                let at = rng.below(len + 1);
                out.splice(at..at, copy);
            }
            5 if len > 0 => out.truncate(rng.below(len)),
            6 if !other.is_empty() => {
                let i = rng.below(other.len());
                let n = 1 + rng.below((other.len() - i).min(256));
                let at = rng.below(len + 1);
                out.splice(at..at, other[i..i + n].iter().copied());
            }
            _ => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(8);
                let fresh: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                out.splice(at..at, fresh);
            }
        }
    }
    out
}

/// Runs the corpus of `target` and `mutations` mutants of it through `f`.
/// Returns the corpus.
fn smoke(target: &str, f: fn(&[u8]), mutations: usize) -> Vec<Vec<u8>> {
    let (before, _turn) = count_panics();
    let files = corpus(target);
    for file in &files {
        f(file);
    }
    let seed = target
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(131) + u64::from(b));
    let mut rng = Rng::new(seed);
    for k in 0..mutations {
        let input = &files[k % files.len()];
        let other = &files[rng.below(files.len())];
        f(&mutate(input, other, &mut rng));
    }
    assert_no_panic_since(before);
    files
}

#[test]
fn every_target_has_a_corpus() {
    let (_, _turn) = count_panics();
    for (name, _) in BYTE_TARGETS {
        assert!(!corpus(name).is_empty());
    }
}

#[test]
fn request_corpus() {
    let files = smoke("request", request::request, 4000);
    assert!(
        files.iter().any(|f| request::frames(f) >= 2),
        "no file holds two frames in a row"
    );
    let decoded = files.iter().filter(|f| {
        f.len() >= 2
            && rcud_proto::ops::Request::decode(u16::from_le_bytes([f[0], f[1]]), &f[2..]).is_ok()
    });
    assert!(decoded.count() >= 5, "too few request bodies decode");
}

#[test]
fn handshake_corpus() {
    use rcud_proto::handshake::{read_message, ClientHello, ServerHello};
    let files = smoke("handshake", handshake::handshake, 3000);
    let hellos = files.iter().filter(|f| {
        let mut c = std::io::Cursor::new(f.as_slice());
        read_message::<_, ClientHello>(&mut c).is_ok_and(|h| h.validate().is_ok())
    });
    assert!(hellos.count() >= 1, "no valid client hello");
    let servers = files.iter().filter(|f| {
        let mut c = std::io::Cursor::new(f.as_slice());
        read_message::<_, ServerHello>(&mut c).is_ok()
    });
    assert!(servers.count() >= 1, "no server hello");
}

#[test]
fn fatbin_corpus() {
    let files = smoke("fatbin", fatbin::fatbin, 1500);
    let parsed: Vec<_> = files
        .iter()
        .filter_map(|f| rcud_fatbin::FatBinary::parse(f).ok())
        .filter(|fb| !fb.entries.is_empty())
        .collect();
    assert!(parsed.len() >= 3, "too few fatbins parse");
    assert!(parsed.iter().any(|fb| fb
        .entries
        .iter()
        .any(|e| e.compression != rcud_fatbin::Compression::None)));
}

#[test]
fn ptx_corpus() {
    let files = smoke("ptx", ptx::ptx, 800);
    let modules = files.iter().filter_map(|f| {
        let text = std::str::from_utf8(f).ok()?;
        rcud_emu::ptx::Module::parse(text).ok()
    });
    let kernels: usize = modules.map(|m| m.kernel_names().len()).sum();
    assert!(kernels >= 5, "the corpus reaches only {kernels} kernels");
}

#[test]
fn setup_corpus() {
    let files = smoke("setup", setup::setup, 1000);
    assert!(
        files.iter().any(|f| setup::offer(f)),
        "no offer in the corpus is taken"
    );
}

#[test]
fn math_corpus() {
    let before = math::stats();
    smoke("math", math::math, 400);
    let after = math::stats();
    eprintln!("math corpus: {before:?} -> {after:?}");
    assert!(after.calls - before.calls >= 1000, "{after:?}");
    assert!(after.answered - before.answered >= 20, "{after:?}");
}

/// The seeds' valid calls are answered; the same calls aimed at the other
/// client's buffer or past the caller's are refused (and the target checks
/// the other client's bytes are intact).
#[test]
fn math_calls_reach_only_the_callers_memory() {
    let (panics, _turn) = count_panics();
    let answered = |name: &str| {
        let file = corpus_dir("math").join(format!("seed-{name}"));
        let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let before = math::stats();
        math::math(&data);
        let after = math::stats();
        (after.answered - before.answered, after.calls - before.calls)
    };
    assert_eq!(answered("blas-gemm"), (2, 2));
    assert_eq!(answered("blas-gemm-victim"), (1, 2));
    assert_eq!(answered("blas-gemm-end"), (1, 2));
    assert_eq!(answered("rand-normal"), (3, 3));
    assert_eq!(answered("rand-victim"), (2, 3));
    assert_eq!(answered("rand-overrun"), (2, 3));
    assert_eq!(answered("fft-c2c"), (3, 3));
    assert_eq!(answered("fft-victim"), (2, 3));
    assert_eq!(answered("sparse-solver-handles"), (4, 4));
    assert_no_panic_since(panics);
}

#[test]
fn agent_ops_corpus() {
    let before = agent::stats();
    smoke("agent_ops", agent::session_bytes, 600);
    let after = agent::stats();
    eprintln!("agent_ops corpus: {before:?} -> {after:?}");
    assert!(after.operations - before.operations >= 1000, "{after:?}");
    assert!(after.modules_loaded > before.modules_loaded, "{after:?}");
    assert!(after.kernels_run > before.kernels_run, "{after:?}");
    assert!(after.bytes_checked > before.bytes_checked, "{after:?}");
}

/// A session on the emulated backend: load a catalog module, run a kernel
/// and read its result back, as the structure-aware target does.
#[test]
fn a_structured_session_runs_kernels() {
    use agent::{
        Args, Dims, FunctionRef, Hash, Image, Len, ModuleRef, Name, Offset, Op, Ptr, Size,
    };
    let (panics, _turn) = count_panics();
    let before = agent::stats();
    let at = |index| Ptr::Alloc {
        index,
        at: Offset::Start,
    };
    agent::session(agent::Session {
        limits: None,
        ops: vec![
            Op::Attach { gpu: 0, window: 3 },
            Op::MemGetInfo,
            Op::Malloc {
                size: Size::Small(1024),
            },
            Op::HtoD {
                dst: at(0),
                len: Len::Rest,
                seed: 9,
            },
            Op::ModuleLoad {
                image: Image::Catalog(0),
                hash: Hash::Content,
            },
            // "fill" is the first name of the catalog.
            Op::GetFunction {
                module: ModuleRef::Loaded(0),
                name: Name::Catalog(0),
            },
            Op::Launch {
                function: FunctionRef::Known(0),
                grid: Dims::Small(1, 0, 0),
                block: Dims::Small(31, 0, 0),
                shared: 0,
                args: Args::Typed {
                    pointers: [at(0), Ptr::Null],
                    words: [40, 0xABCD],
                },
            },
            Op::DtoH {
                src: at(0),
                len: Len::Rest,
            },
            // A new client: all memory back, and what the first client
            // shipped is not its to load by hash alone (the model expects
            // the refusal).
            Op::Reconnect,
            Op::Attach { gpu: 1, window: 0 },
            Op::MemGetInfo,
            Op::ModuleLoadCached {
                hash: Hash::Catalog(0),
            },
            Op::ModuleLoad {
                image: Image::Catalog(1),
                hash: Hash::Content,
            },
        ],
    });
    let after = agent::stats();
    assert_eq!(after.operations - before.operations, 13);
    assert_eq!(after.modules_loaded - before.modules_loaded, 2);
    assert_eq!(after.kernels_run - before.kernels_run, 1);
    assert!(after.bytes_checked - before.bytes_checked >= 1024);
    assert_no_panic_since(panics);
}

/// Sessions on backends of their own run side by side: nothing of one
/// (a panic hook, a global) disturbs the other.
#[test]
fn sessions_in_parallel_threads() {
    let (panics, _turn) = count_panics();
    let files = Arc::new(corpus("agent_ops"));
    let run = |files: Arc<Vec<Vec<u8>>>| {
        std::thread::spawn(move || {
            for f in files.iter().take(20) {
                agent::session_bytes(f);
            }
        })
    };
    let a = run(files.clone());
    let b = run(files);
    a.join().expect("first");
    b.join().expect("second");
    assert_no_panic_since(panics);
}
