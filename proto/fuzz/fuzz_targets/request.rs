//! Whatever a peer sends — a frame header, a request body for any op id, a
//! reply body, a hello — decodes to a value or an error, never a panic, and
//! what decodes re-encodes to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rcud_proto::codec::Writer;
use rcud_proto::frame::{FrameHeader, HEADER_LEN};
use rcud_proto::handshake::{self, ClientHello};
use rcud_proto::ops::{self, rep, Request};

fuzz_target!(|data: &[u8]| {
    if let Ok(raw) = <[u8; HEADER_LEN]>::try_from(data.get(..HEADER_LEN).unwrap_or(&[])) {
        let _ = FrameHeader::from_bytes(&raw);
    }
    let Some((&op, body)) = data.split_first() else { return };
    let op = u16::from(op);
    if let Ok(req) = Request::decode(op, body) {
        let mut again = Vec::new();
        req.encode(&mut Writer::new(&mut again));
        assert_eq!(again, body);
    }
    let _ = ops::decode_reply::<rep::GetDeviceInfo>(body);
    let _ = ops::decode_reply::<rep::LaunchKernel>(body);
    let _ = handshake::decode_hello::<ClientHello>(body);
});
