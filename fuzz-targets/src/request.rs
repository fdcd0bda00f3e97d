//! The request decoder: frame headers, request bodies of every operation and
//! reply bodies, as the agent and the client read them off the wire.

use rcud_proto::codec::{Wire, Writer};
use rcud_proto::frame::{FrameHeader, FrameKind, HEADER_LEN, MAX_BODY, MAX_BULK};
use rcud_proto::ops::{self, rep, Request};

/// Reads `data` three ways:
///
/// 1. as a stream of frames, the way an agent reads a connection: a header,
///    its body decoded as the request the header names, its bulk payload
///    skipped; until the bytes run out or something does not decode;
/// 2. as a request body for the operation named by the first two bytes;
/// 3. as the body of a reply to each operation of the table.
///
/// Whatever decodes must re-encode to the bytes it came from.
pub fn request(data: &[u8]) {
    frames(data);
    if let [lo, hi, body @ ..] = data {
        let op = u16::from_le_bytes([*lo, *hi]);
        one_request(op, body);
        replies(body);
    }
}

/// Walks `data` as back-to-back frames; returns how many headers decoded.
pub fn frames(mut data: &[u8]) -> usize {
    let mut decoded = 0;
    while let Some((raw, rest)) = data.split_first_chunk::<HEADER_LEN>() {
        let Ok(header) = FrameHeader::from_bytes(raw) else {
            break;
        };
        decoded += 1;
        check_header(raw, &header);
        let Some(body) = rest.get(..header.body_len as usize) else {
            break;
        };
        if header.kind == FrameKind::REQUEST {
            one_request(header.op, body);
        }
        let after_body = &rest[body.len()..];
        let bulk = usize::try_from(header.bulk_len).unwrap_or(usize::MAX);
        match after_body.get(bulk..) {
            Some(next) => data = next,
            None => break,
        }
    }
    decoded
}

/// A decoded header is within the limits and encodes back to its bytes, up
/// to the reserved field, which the decoder ignores.
fn check_header(raw: &[u8; HEADER_LEN], header: &FrameHeader) {
    assert!(header.body_len <= MAX_BODY, "{header:?}");
    assert!(header.bulk_len <= MAX_BULK, "{header:?}");
    assert!(
        header.kind == FrameKind::REQUEST || header.kind == FrameKind::REPLY,
        "{header:?}"
    );
    let mut expected = *raw;
    expected[6] = 0;
    expected[7] = 0;
    assert_eq!(header.to_bytes(), expected, "header re-encodes differently");
}

fn one_request(op: u16, body: &[u8]) {
    if let Ok(req) = Request::decode(op, body) {
        assert_eq!(req.op().0, op, "{} decoded under op {op:#06x}", req.name());
        let mut again = Vec::with_capacity(body.len());
        req.encode(&mut Writer::new(&mut again));
        assert_eq!(again, body, "{} re-encodes differently", req.name());
        // The bulk direction is a property of the op alone.
        let _ = req.bulk();
    }
}

/// Decodes `body` as a reply to every operation; what decodes re-encodes
/// to the same bytes.
fn replies(body: &[u8]) {
    macro_rules! each_reply {
        ($($name:ident),* $(,)?) => {$(
            one_reply::<rep::$name>(body);
        )*};
    }
    each_reply!(
        Attach,
        GetDeviceInfo,
        MemGetInfo,
        DeviceSynchronize,
        DeviceReset,
        Malloc,
        Free,
        MemcpyHtoD,
        MemcpyDtoH,
        MemcpyDtoD,
        Memset,
        Memcpy2DHtoD,
        Memcpy2DDtoH,
        Memcpy2DDtoD,
        Memset2D,
        ModuleLoadCached,
        ModuleLoad,
        ModuleGetFunction,
        ModuleGetGlobal,
        FuncSetAttribute,
        EventRecord,
        LaunchKernel,
        LaunchCooperative,
        PeerListen,
        PeerReceive,
        PeerSend,
        SetLimit,
        MemsetElements,
        GraphUpload,
        GraphLaunch,
        GraphDestroy,
    );
}

fn one_reply<R: Wire>(body: &[u8]) {
    let Ok(result) = ops::decode_reply::<R>(body) else {
        return;
    };
    let mut again = Vec::with_capacity(body.len());
    ops::encode_reply(result.as_ref(), &mut again);
    assert_eq!(
        again,
        body,
        "reply {} re-encodes differently",
        std::any::type_name::<R>()
    );
}
