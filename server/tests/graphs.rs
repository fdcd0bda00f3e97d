//! Uploaded graphs against the `rcud-server` binary: many device steps run
//! by one `GraphLaunch` message, in order; only device work may be a step;
//! a graph is the client's own and goes away when destroyed.

mod support;

use rcud_proto::ops::{req, GraphStep};
use rcud_proto::CudaError;
use support::{Conn, ServerProc};

#[test]
fn one_message_runs_every_step_in_order() {
    let server = ServerProc::start(&["--emu-memory", "64MiB"]);
    let mut c = Conn::attached(server.addr(), "graphs");
    let (a, b) = (c.malloc(4096), c.malloc(4096));
    // 100 steps: 97 memsets that each overwrite the last, a 4-byte pattern,
    // a pitched copy and an event record.
    let mut steps: Vec<GraphStep> = (0..97u8)
        .map(|i| {
            GraphStep::of(&req::Memset {
                dst: a,
                value: i,
                len: 4096,
            })
        })
        .collect();
    steps.push(GraphStep::of(&req::MemsetElements {
        dst: a + 1024,
        pitch: 1024,
        value: 0x0403_0201,
        element: 4,
        width: 8,
        height: 2,
    }));
    steps.push(GraphStep::of(&req::Memcpy2DDtoD {
        dst: b,
        dpitch: 2048,
        src: a,
        spitch: 1024,
        width: 1024,
        height: 2,
    }));
    steps.push(GraphStep::of(&req::EventRecord {}));
    let graph = c
        .call(&req::GraphUpload { steps }, &[], &mut [])
        .expect("transport")
        .expect("upload")
        .graph;
    let sent_before = c.moved();
    for _ in 0..3 {
        let reply = c
            .call(&req::GraphLaunch { graph }, &[], &mut [])
            .expect("transport")
            .expect("launch");
        assert_eq!(reply.timestamps.len(), 1, "one event-record step");
        assert!(reply.printf.0.is_empty());
    }
    assert_eq!(c.moved(), sent_before, "a launch carries no payload");
    let mut out = vec![0u8; 4096];
    c.dtoh(b, &mut out);
    assert!(out[..1024].iter().all(|&v| v == 96), "the last memset won");
    assert!(
        out[1024..2048].iter().all(|&v| v == 0),
        "untouched by the copy"
    );
    assert_eq!(&out[2048..2056], &[1, 2, 3, 4, 1, 2, 3, 4]);
    assert!(out[2048 + 32..3072].iter().all(|&v| v == 96));

    let destroyed = c.call(&req::GraphDestroy { graph }, &[], &mut []);
    assert!(destroyed.expect("transport").is_ok());
    let gone = c.call(&req::GraphLaunch { graph }, &[], &mut []);
    assert_eq!(
        gone.expect("transport").map(|_| ()).unwrap_err().code,
        CudaError::INVALID_RESOURCE_HANDLE
    );
}

#[test]
fn only_device_work_is_a_step() {
    let server = ServerProc::start(&["--emu-memory", "64MiB"]);
    let mut c = Conn::attached(server.addr(), "graphs");
    let a = c.malloc(256);
    for bad in [
        GraphStep::of(&req::Malloc { size: 16 }),
        GraphStep::of(&req::GraphLaunch { graph: 1 }),
        GraphStep {
            op: 0x0015,
            body: rcud_proto::codec::Blob(vec![1, 2, 3]),
        },
    ] {
        let steps = vec![
            GraphStep::of(&req::Memset {
                dst: a,
                value: 1,
                len: 256,
            }),
            bad,
        ];
        let refused = c.call(&req::GraphUpload { steps }, &[], &mut []);
        let failure = refused.expect("transport").unwrap_err();
        assert_eq!(failure.code, CudaError::INVALID_VALUE);
        assert!(failure.message.contains("graph step 1"), "{failure}");
    }
    // A step outside the client's memory fails at launch, as the op would.
    let steps = vec![GraphStep::of(&req::Memset {
        dst: a + 4096,
        value: 1,
        len: 1,
    })];
    let graph = c
        .call(&req::GraphUpload { steps }, &[], &mut [])
        .expect("transport")
        .expect("upload")
        .graph;
    let launched = c.call(&req::GraphLaunch { graph }, &[], &mut []);
    assert!(launched.expect("transport").is_err());
    // Another client cannot launch it.
    let mut other = Conn::attached(server.addr(), "other");
    let theirs = other.call(&req::GraphLaunch { graph }, &[], &mut []);
    assert_eq!(
        theirs.expect("transport").map(|_| ()).unwrap_err().code,
        CudaError::INVALID_RESOURCE_HANDLE
    );
}

#[test]
fn graphs_a_client_keeps_are_bounded() {
    let server = ServerProc::start(&["--emu-memory", "64MiB"]);
    let mut c = Conn::attached(server.addr(), "graphs");
    let a = c.malloc(256);
    // About 1 MB of steps per upload, the most one request carries.
    let steps: Vec<GraphStep> = (0..40_000)
        .map(|i| {
            GraphStep::of(&req::Memset {
                dst: a,
                value: i as u8,
                len: 256,
            })
        })
        .collect();
    let mut kept = Vec::new();
    let refused = loop {
        let upload = req::GraphUpload {
            steps: steps.clone(),
        };
        match c.call(&upload, &[], &mut []).expect("transport") {
            Ok(r) => kept.push(r.graph),
            Err(failure) => break failure,
        }
        assert!(kept.len() < 200, "uploads are never refused");
    };
    assert_eq!(refused.code, CudaError::MEMORY_ALLOCATION);
    assert!(refused.message.contains("graphs"), "{refused}");
    assert!(kept.len() >= 32, "only {} graphs fit", kept.len());
    // Destroying one makes room again; the connection is fine throughout.
    let gone = kept.pop().expect("a graph");
    let destroyed = c.call(&req::GraphDestroy { graph: gone }, &[], &mut []);
    assert!(destroyed.expect("transport").is_ok());
    let again = c.call(&req::GraphUpload { steps }, &[], &mut []);
    assert!(again.expect("transport").is_ok());
    c.memset(a, 1, 256);
}
