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

/// Uploads `steps`; the graph's id.
fn upload(c: &mut Conn, steps: Vec<GraphStep>) -> u32 {
    c.call(&req::GraphUpload { steps }, &[], &mut [])
        .expect("transport")
        .expect("upload")
        .graph
}

/// Launches `graph`; the result.
fn launch(c: &mut Conn, graph: u32) -> Result<(), CudaError> {
    c.call(&req::GraphLaunch { graph }, &[], &mut [])
        .expect("transport")
        .map(|_| ())
        .map_err(|f| f.code)
}

#[test]
fn conditional_steps_branch_loop_and_switch_on_the_server() {
    use rcud_proto::ops::cond_kind;
    let server = ServerProc::start(&["--emu-memory", "64MiB"]);
    let mut c = Conn::attached(server.addr(), "conditional");
    let (cond, out) = (c.malloc(4), c.malloc(64));
    let set = |dst: u64, value: u8| GraphStep::of(&req::Memset { dst, value, len: 1 });
    // Bodies: each writes its number to out[i]; the loop body also counts
    // its passes in out[8..] and the condition down by one.
    let bodies: Vec<u32> = (0..3u8)
        .map(|i| upload(&mut c, vec![set(out + u64::from(i), i + 1)]))
        .collect();
    let when =
        |kind, bodies: Vec<u32>| GraphStep::of(&req::GraphConditional { cond, kind, bodies });
    let if_else = upload(&mut c, vec![when(cond_kind::IF, bodies[..2].to_vec())]);
    let switch = upload(&mut c, vec![when(cond_kind::SWITCH, bodies.clone())]);
    for value in [0u32, 1, 2, 7] {
        c.memset(out, 0, 64);
        c.htod(cond, &value.to_le_bytes());
        launch(&mut c, if_else).expect("IF");
        let mut got = [0u8; 3];
        c.dtoh(out, &mut got);
        let want = if value != 0 { [1, 0, 0] } else { [0, 2, 0] };
        assert_eq!(got, want, "IF/else on {value}");
        c.memset(out, 0, 64);
        launch(&mut c, switch).expect("SWITCH");
        c.dtoh(out, &mut got);
        let mut want = [0u8; 3];
        if let Some(w) = want.get_mut(value as usize) {
            *w = value as u8 + 1;
        }
        assert_eq!(got, want, "SWITCH on {value}");
    }

    // WHILE: the body copies a smaller value into the condition each pass
    // (out[16..] holds 3, 2, 1, 0 as u32s), and counts its passes.
    let table: Vec<u8> = [3u32, 2, 1, 0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    c.htod(out + 16, &table);
    let mut body = Vec::new();
    for pass in 0..4u64 {
        // A copy of entry `pass` when the condition is 4 - pass.
        let step = upload(
            &mut c,
            vec![GraphStep::of(&req::MemcpyDtoD {
                dst: cond,
                src: out + 16 + 4 * pass,
                len: 4,
            })],
        );
        body.push(step);
    }
    // The loop body: a SWITCH on the condition picking the next entry.
    let mut switch_bodies = vec![body[3]];
    switch_bodies.extend([body[3], body[2], body[1], body[0]]);
    let loop_body = upload(
        &mut c,
        vec![
            when(cond_kind::SWITCH, switch_bodies),
            GraphStep::of(&req::MemsetElements {
                dst: out + 32,
                pitch: 4,
                value: 0,
                element: 4,
                width: 1,
                height: 1,
            }),
        ],
    );
    let looping = upload(&mut c, vec![when(cond_kind::WHILE, vec![loop_body])]);
    c.htod(cond, &4u32.to_le_bytes());
    launch(&mut c, looping).expect("WHILE");
    let mut value = [0u8; 4];
    c.dtoh(cond, &mut value);
    assert_eq!(u32::from_le_bytes(value), 0, "looped down to 0");

    // Bodies must exist before the graph naming them, in the right number.
    let bad = [
        when(cond_kind::IF, vec![]),
        when(cond_kind::WHILE, vec![bodies[0], bodies[1]]),
        when(9, vec![bodies[0]]),
        when(cond_kind::IF, vec![9999]),
    ];
    for step in bad {
        let refused = c.call(&req::GraphUpload { steps: vec![step] }, &[], &mut []);
        assert_eq!(
            refused.expect("transport").map(|_| ()).unwrap_err().code,
            CudaError::INVALID_VALUE
        );
    }
    // A conditional step is no request of its own.
    let alone = c.call(
        &req::GraphConditional {
            cond,
            kind: cond_kind::IF,
            bodies: vec![bodies[0]],
        },
        &[],
        &mut [],
    );
    assert!(alone.expect("transport").is_err());
}

#[test]
fn a_conditional_loop_ends_at_the_operation_time_limit() {
    use rcud_proto::ops::cond_kind;
    let server = ServerProc::start(&["--emu-memory", "64MiB", "--op-timeout", "1"]);
    let mut c = Conn::attached(server.addr(), "spin");
    let cond = c.malloc(4);
    c.htod(cond, &1u32.to_le_bytes());
    // An empty body never changes the condition.
    let empty = upload(&mut c, vec![]);
    let spin = upload(
        &mut c,
        vec![GraphStep::of(&req::GraphConditional {
            cond,
            kind: cond_kind::WHILE,
            bodies: vec![empty],
        })],
    );
    let started = std::time::Instant::now();
    assert_eq!(launch(&mut c, spin), Err(CudaError::LAUNCH_TIMEOUT));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn conditional_bodies_nest_a_bounded_depth() {
    use rcud_proto::ops::cond_kind;
    let server = ServerProc::start(&["--emu-memory", "64MiB"]);
    let mut c = Conn::attached(server.addr(), "nesting");
    let cond = c.malloc(4);
    let mut graph = upload(&mut c, vec![]);
    let mut refused = None;
    for depth in 1..=40 {
        let step = GraphStep::of(&req::GraphConditional {
            cond,
            kind: cond_kind::IF,
            bodies: vec![graph],
        });
        match c
            .call(&req::GraphUpload { steps: vec![step] }, &[], &mut [])
            .expect("transport")
        {
            Ok(r) => graph = r.graph,
            Err(f) => {
                assert_eq!(f.code, CudaError::INVALID_VALUE);
                refused = Some(depth);
                break;
            }
        }
    }
    assert_eq!(refused, Some(33), "32 levels of bodies at most");
    c.htod(cond, &1u32.to_le_bytes());
    launch(&mut c, graph).expect("32 levels run");
}
