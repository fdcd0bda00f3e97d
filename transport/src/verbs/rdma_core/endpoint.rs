//! The bytes of an rdma-core [`Endpoint`](crate::verbs::Endpoint): what the
//! peer needs to move its queue pair to ready-to-receive.
//!
//! Layout, little-endian, exactly [`ENCODED_LEN`] bytes: `"RVR1"`, LID u16,
//! port u8, path MTU u8 (`ibv_mtu`: 1 = 256 … 5 = 4096), QPN u32, PSN u32,
//! GID 16 bytes (as the port reports it, network order).

use crate::verbs::{Result, VerbsError};

const MAGIC: &[u8; 4] = b"RVR1";
/// Encoded length.
pub(super) const ENCODED_LEN: usize = 32;

/// A queue pair's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Address {
    pub(super) lid: u16,
    pub(super) port: u8,
    pub(super) mtu: u8,
    pub(super) qpn: u32,
    pub(super) psn: u32,
    pub(super) gid: [u8; 16],
}

impl Address {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(ENCODED_LEN);
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&self.lid.to_le_bytes());
        b.push(self.port);
        b.push(self.mtu);
        b.extend_from_slice(&self.qpn.to_le_bytes());
        b.extend_from_slice(&self.psn.to_le_bytes());
        b.extend_from_slice(&self.gid);
        b
    }

    pub(super) fn decode(b: &[u8]) -> Result<Address> {
        let bad = |m: &str| VerbsError::BadEndpoint(m.to_owned());
        if b.len() < MAGIC.len() || &b[..4] != MAGIC {
            return Err(bad("not an rdma-core endpoint (wrong provider or version)"));
        }
        if b.len() != ENCODED_LEN {
            return Err(VerbsError::BadEndpoint(format!(
                "{} bytes, expected {ENCODED_LEN}",
                b.len()
            )));
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[16..32]);
        let a = Address {
            lid: u16::from_le_bytes([b[4], b[5]]),
            port: b[6],
            mtu: b[7],
            qpn: u32_at(8),
            psn: u32_at(12),
            gid,
        };
        if a.qpn == 0 || a.qpn > 0x00FF_FFFF {
            return Err(bad("queue pair number outside 1..2^24"));
        }
        if a.psn > 0x00FF_FFFF {
            return Err(bad("packet sequence number outside 0..2^24"));
        }
        if !(1..=5).contains(&a.mtu) {
            return Err(bad("path MTU is not one of 256..4096"));
        }
        if a.port == 0 {
            return Err(bad("port 0"));
        }
        if a.lid == 0 && a.gid == [0; 16] {
            return Err(bad("neither a LID nor a GID"));
        }
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Address {
        Address {
            lid: 7,
            port: 1,
            mtu: 5,
            qpn: 0x1234,
            psn: 0xABCDEF,
            gid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
        }
    }

    #[test]
    fn round_trip() {
        let a = sample();
        let b = a.encode();
        assert_eq!(b.len(), ENCODED_LEN);
        assert_eq!(Address::decode(&b).unwrap(), a);
    }

    #[test]
    fn rejects_truncated_trailing_and_out_of_range() {
        let b = sample().encode();
        for cut in 0..b.len() {
            assert!(Address::decode(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = b.clone();
        long.push(0);
        assert!(Address::decode(&long).is_err());
        let soft = b"RVS1rest-of-a-soft-endpoint.....";
        assert!(Address::decode(soft).is_err());
        for (field, value) in [(8usize, 0u32), (8, 0x0100_0000), (12, 0x0100_0000)] {
            let mut x = b.clone();
            x[field..field + 4].copy_from_slice(&value.to_le_bytes());
            assert!(Address::decode(&x).is_err(), "{field}={value:#x}");
        }
        let mut mtu = b.clone();
        mtu[7] = 6;
        assert!(Address::decode(&mtu).is_err());
        let mut port = b.clone();
        port[6] = 0;
        assert!(Address::decode(&port).is_err());
        let mut nowhere = sample();
        nowhere.lid = 0;
        nowhere.gid = [0; 16];
        assert!(Address::decode(&nowhere.encode()).is_err());
    }
}
