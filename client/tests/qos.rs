//! Service classes against a real in-process server with QoS on: admission
//! by tenant and by `RCUD_QOS`, refusals that say what would fit, and bulk
//! copies and kernel-free traffic that stay byte-exact while the arbiter
//! cuts them into turns. Shares are measured by `rcud bench qos` and by the
//! arbiter's own tests, not here.

use std::net::SocketAddr;
use std::sync::Arc;

use rcud_client::session::Session;
use rcud_client::{ClientError, Security};
use rcud_proto::auth::Credentials;
use rcud_proto::ops::req;
use rcud_qos::admission::{Link, TableConfig};
use rcud_server::backend::{BackendKind, EmuSettings};
use rcud_server::gate::Policy;
use rcud_server::qos::PortQos;
use rcud_server::tenants::Tenants;
use rcud_server::{select_backend, Server, ServerHandle};
use rcud_transport::bootstrap::TransportKind;

const TENANTS: &str = r#"
[tenants.alice]
secret = "alice-secret-0123456789"
qos = "class=db,bandwidth=3GB/s"

[tenants.bob]
secret = "bob-secret-0123456789abc"
"#;

fn start() -> ServerHandle {
    let emu = EmuSettings {
        memory: 1 << 30,
        ..EmuSettings::default()
    };
    let backend = select_backend(BackendKind::Emu, &emu).unwrap();
    let tenants = Tenants::parse(TENANTS, "tenants.toml".as_ref()).unwrap();
    // A 10 GB/s port.
    let port = PortQos::new(TableConfig::new(Link::gbps(80.0, 2048))).unwrap();
    Server::bind("127.0.0.1:0", backend)
        .unwrap()
        .with_policy(Policy {
            tenants: Some(Arc::new(tenants)),
            ..Policy::default()
        })
        .with_qos(port)
        .spawn()
        .unwrap()
}

fn security(token: &str, qos: &str) -> Security {
    Security {
        credentials: Some(Credentials::parse(token).unwrap()),
        tls: None,
        qos: qos.into(),
    }
}

fn connect(addr: SocketAddr, token: &str, qos: &str) -> Result<Session, ClientError> {
    Session::connect_secured(
        &addr.to_string(),
        "qos test",
        TransportKind::Tcp,
        &security(token, qos),
    )
}

fn refusal(r: Result<Session, ClientError>) -> String {
    match r {
        Err(ClientError::Refused { message, .. }) => message,
        Err(e) => panic!("failed otherwise: {e}"),
        Ok(_) => panic!("admitted"),
    }
}

/// Copies `len` bytes there and back through the arbiter's turns.
fn round_trip(s: &mut Session, len: usize) {
    s.call(&req::Attach { gpu: 0, window: 0 }, &[], &mut [])
        .unwrap()
        .unwrap();
    let ptr = s
        .call(&req::Malloc { size: len as u64 }, &[], &mut [])
        .unwrap()
        .unwrap()
        .ptr;
    let data: Vec<u8> = (0..len).map(|i| (i * 31 + i / 4099) as u8).collect();
    s.call(
        &req::MemcpyHtoD {
            dst: ptr,
            len: len as u64,
        },
        &data,
        &mut [],
    )
    .unwrap()
    .unwrap();
    let mut back = vec![0u8; len];
    s.call(
        &req::MemcpyDtoH {
            src: ptr,
            len: len as u64,
        },
        &[],
        &mut back,
    )
    .unwrap()
    .unwrap();
    assert!(back == data, "the copy came back different");
}

#[test]
fn copies_cut_into_turns_arrive_intact_for_several_classes_at_once() {
    let server = start();
    let addr = server.addr();
    let threads: Vec<_> = [
        ("alice:alice-secret-0123456789", ""),
        ("alice:alice-secret-0123456789", "class=db,bandwidth=1GB/s"),
        ("bob:bob-secret-0123456789abc", "class=pbe"),
        ("bob:bob-secret-0123456789abc", ""),
    ]
    .into_iter()
    .map(|(token, qos)| {
        std::thread::spawn(move || {
            let mut s = connect(addr, token, qos).unwrap();
            // Several chunks, and a length that is not a multiple of one.
            round_trip(&mut s, 3 * rcud_server::qos::CHUNK + 12345);
        })
    })
    .collect();
    for t in threads {
        t.join().unwrap();
    }
    server.shutdown();
}

#[test]
fn classes_that_do_not_fit_or_exceed_the_tenant_are_refused_with_reasons() {
    let server = start();
    let addr = server.addr();
    // Above alice's class.
    let above = refusal(connect(
        addr,
        "alice:alice-secret-0123456789",
        "class=db,bandwidth=4GB/s",
    ));
    assert!(
        above.contains("more than tenant `alice` may have"),
        "{above}"
    );
    // A class that cannot be read.
    let garbled = refusal(connect(addr, "bob:bob-secret-0123456789abc", "class=gold"));
    assert!(garbled.contains("RCUD_QOS"), "{garbled}");
    // bob has no class of his own: the table decides. 8 GB/s fits a 10 GB/s
    // port once; a second does not, and the refusal says what still fits.
    let big = connect(
        addr,
        "bob:bob-secret-0123456789abc",
        "class=db,bandwidth=8GB/s",
    )
    .unwrap();
    let full = refusal(connect(
        addr,
        "bob:bob-secret-0123456789abc",
        "class=db,bandwidth=8GB/s",
    ));
    assert!(
        full.contains("does not fit") && full.contains("what still fits"),
        "{full}"
    );
    // A connection's reservation ends with it.
    drop(big);
    let mut again = None;
    for _ in 0..100 {
        match connect(
            addr,
            "bob:bob-secret-0123456789abc",
            "class=db,bandwidth=8GB/s",
        ) {
            Ok(s) => {
                again = Some(s);
                break;
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    assert!(again.is_some(), "the first reservation was never released");
    server.shutdown();
}
