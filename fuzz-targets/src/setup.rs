//! The RDMA set-up data a peer supplies before any frame: the agent's offer
//! of the first RDMA port over the TCP bootstrap (read by the client), the
//! receive-chunk addresses of the memory-semantics module, and the
//! transport code of the hello.
//!
//! The offer is read by `rcud_transport::setup::take_offer` from a real TCP
//! socket, so each run plays the agent over a loopback connection: it
//! writes the input and closes its side, and the client reads the offer.

use std::io::Write;
use std::net::Shutdown;
use std::sync::OnceLock;

use rcud_transport::bootstrap::TransportKind;
use rcud_transport::setup;
use rcud_transport::verbs::{Provider, RemoteRegion};

/// Longest input written to the socket: more than any offer (5 + 2 + 4096
/// bytes), and little enough to fit the socket's buffers at once.
const MAX_OFFER_INPUT: usize = 8192;

/// Feeds `data` to every decoder of peer-supplied set-up data.
pub fn setup(data: &[u8]) {
    remote_region(data);
    if let Some(&code) = data.first() {
        if let Some(kind) = TransportKind::from_code(code) {
            assert_eq!(kind.code(), code);
        }
    }
    offer(&data[..data.len().min(MAX_OFFER_INPUT)]);
}

/// An encoded chunk address decodes exactly when it has the right length,
/// and encodes back to the same bytes.
fn remote_region(data: &[u8]) {
    match RemoteRegion::from_bytes(data) {
        Some(r) => {
            assert_eq!(data.len(), RemoteRegion::ENCODED_LEN);
            assert_eq!(r.to_bytes().as_slice(), data);
        }
        None => assert_ne!(data.len(), RemoteRegion::ENCODED_LEN),
    }
}

/// This host's boot id as the set-up reads it, `None` when unknown.
fn host_id() -> Option<&'static [u8]> {
    static ID: OnceLock<Vec<u8>> = OnceLock::new();
    let id = ID.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().as_bytes().iter().copied().take(36).collect())
            .unwrap_or_default()
    });
    (!id.is_empty()).then_some(id.as_slice())
}

/// What a well-formed offer says: the provider and the port, when `data`
/// is one that the client must take.
fn expected_offer(data: &[u8]) -> Option<(Provider, u16)> {
    if data.len() < 5 + 3 + 36 || &data[..4] != b"RDV1" || data[4] != 0 {
        return None;
    }
    let provider = match data[5] {
        0 => Provider::Soft,
        1 => Provider::RdmaCore,
        _ => return None,
    };
    if provider == Provider::Soft {
        // The soft provider only reaches peers on this host.
        let theirs = &data[8..44];
        let known = theirs.iter().any(|&b| b != 0);
        if let Some(ours) = host_id() {
            let mut ours_padded = [0u8; 36];
            ours_padded[..ours.len()].copy_from_slice(ours);
            if known && theirs != ours_padded {
                return None;
            }
        }
    }
    Some((provider, u16::from_le_bytes([data[6], data[7]])))
}

/// Plays an agent that sends `data` as its offer and closes; the client
/// takes the offer when it is well-formed and refuses it otherwise.
/// Returns whether it took it.
pub fn offer(data: &[u8]) -> bool {
    let (mut client, mut agent) = crate::loopback::pair();
    agent.write_all(data).expect("write the offer");
    agent
        .shutdown(Shutdown::Write)
        .expect("close the agent's side");
    let taken = setup::take_offer(&mut client, "CSR");
    crate::loopback::close_hard(client);
    drop(agent);
    // With RCUD_RDMA_DEVICE set, the client may refuse good offers too.
    let device_asked = std::env::var_os("RCUD_RDMA_DEVICE").is_some();
    let took = taken.is_ok();
    match (taken, expected_offer(data)) {
        (Ok((rv, port)), Some((provider, expected_port))) => {
            assert_eq!(port, expected_port);
            assert_eq!(rv.provider(), provider);
        }
        (Ok((rv, port)), None) => panic!(
            "a malformed offer was taken: port {port} on {:?}",
            rv.provider()
        ),
        (Err(e), Some(_)) if !device_asked => panic!("a well-formed offer was refused: {e}"),
        (Err(e), _) => assert!(!e.to_string().is_empty()),
    }
    took
}
