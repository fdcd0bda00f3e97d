//! A client that follows the CSR and MSR set-up with verbs objects of its
//! own, so that a fault test can then post what a correct module never
//! would. Shared by the transport's tests and the server's
//! (`#[path = "…/transport/tests/rogue/mod.rs"]`).
#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

use rcud_transport::setup::Rendezvous;
use rcud_transport::verbs::cm::Pending;
use rcud_transport::verbs::{
    Access, Completion, CompletionQueue, MemoryRegion, ProtectionDomain, QpInit, QueuePair, RecvWr,
    RemoteRegion, SendOp, SendWr, WcOpcode, WcStatus,
};
use rcud_transport::TransportError;

/// Work-request id of set-up receives (as the modules use).
const SETUP_WR: u64 = u64::MAX;
/// Set-up buffer: receive half, then send half; room for 1024 addresses.
const SETUP_HALF: usize = 16 + 1024 * RemoteRegion::ENCODED_LEN;

pub fn blank() -> Completion {
    Completion {
        wr_id: 0,
        qp_num: 0,
        opcode: WcOpcode::Send,
        status: WcStatus::Success,
        byte_len: 0,
        imm: None,
    }
}

/// One channel of the rogue: a queue pair, its queues, `chunks` registered
/// chunks and a set-up buffer, all in one protection domain.
pub struct RogueChannel {
    pub qp: QueuePair,
    pub chunks: Vec<MemoryRegion>,
    pub setup: MemoryRegion,
    pub send_cq: CompletionQueue,
    pub recv_cq: CompletionQueue,
    pub pd: ProtectionDomain,
}

impl RogueChannel {
    /// Resolves the agent's `port` and creates the channel's objects; the
    /// caller posts receives and establishes the returned connection.
    pub fn open(
        rv: &Rendezvous,
        port: u16,
        chunks: usize,
        chunk: usize,
    ) -> Result<(RogueChannel, Pending), TransportError> {
        let mut p = rv.resolve(port, "rogue", "rogue")?;
        let ctx = p.context().clone();
        let pd = ctx.alloc_pd().unwrap();
        let send_cq = ctx.create_cq(4096).unwrap();
        let recv_cq = ctx.create_cq(4096).unwrap();
        let qp = p
            .create_qp(
                &pd,
                &QpInit {
                    send_cq: &send_cq,
                    recv_cq: &recv_cq,
                    max_send_wr: 1024,
                    max_recv_wr: 1024,
                },
            )
            .unwrap();
        let chunks = (0..chunks)
            .map(|_| {
                pd.alloc_mr(chunk, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
                    .unwrap()
            })
            .collect();
        let setup = pd.alloc_mr(2 * SETUP_HALF, Access::LOCAL_WRITE).unwrap();
        Ok((
            RogueChannel {
                qp,
                chunks,
                setup,
                send_cq,
                recv_cq,
                pd,
            },
            p,
        ))
    }

    /// Posts `n` receives, into the chunks or empty.
    pub fn post_recvs(&self, n: usize, into_chunks: bool) {
        let wrs: Vec<RecvWr<'_>> = (0..n)
            .map(|i| RecvWr {
                wr_id: i as u64,
                buf: into_chunks.then(|| self.chunks[i].sge(0, self.chunks[i].len())),
            })
            .collect();
        self.qp.post_recv(&wrs).unwrap();
    }

    /// Posts a receive for a set-up message.
    pub fn post_setup_recv(&self) {
        self.qp
            .post_recv(&[RecvWr {
                wr_id: SETUP_WR,
                buf: Some(self.setup.sge(0, SETUP_HALF)),
            }])
            .unwrap();
    }

    /// Sends `bytes` (empty: a zero-length send) and waits for its completion.
    pub fn say(&self, bytes: &[u8]) {
        let src = (!bytes.is_empty()).then(|| {
            self.setup.write(SETUP_HALF, bytes).unwrap();
            self.setup.sge(SETUP_HALF, bytes.len())
        });
        self.qp
            .post_send(&[SendWr::new(SETUP_WR, SendOp::Send, src)])
            .unwrap();
        let wcs = self.completions(1);
        assert!(
            wcs.len() == 1 && wcs[0].status.is_success(),
            "the rogue's message: {wcs:?}"
        );
    }

    /// Waits for the next message and returns its bytes.
    pub fn hear(&self) -> Vec<u8> {
        let mut wc = [blank(); 1];
        let deadline = Instant::now() + Duration::from_secs(10);
        while self
            .recv_cq
            .poll_wait(&mut wc, Duration::from_millis(50))
            .unwrap()
            == 0
        {
            assert!(Instant::now() < deadline, "the rogue heard nothing");
        }
        assert!(wc[0].status.is_success(), "{wc:?}");
        let mut b = vec![0u8; wc[0].byte_len as usize];
        if wc[0].wr_id == SETUP_WR {
            self.setup.read(0, &mut b).unwrap();
        } else if !b.is_empty() {
            self.chunks[wc[0].wr_id as usize].read(0, &mut b).unwrap();
        }
        b
    }

    /// Waits (up to 10 s) for the completions of `n` sends.
    pub fn completions(&self, n: usize) -> Vec<Completion> {
        let mut out = Vec::new();
        let mut buf = [blank(); 16];
        let deadline = Instant::now() + Duration::from_secs(10);
        while out.len() < n && Instant::now() < deadline {
            let got = self
                .send_cq
                .poll_wait(&mut buf, Duration::from_millis(50))
                .unwrap();
            out.extend_from_slice(&buf[..got]);
        }
        out
    }
}

/// A CSR geometry message.
pub fn csr_geometry(chunk: usize, n: u32, port: u16) -> Vec<u8> {
    let mut b = b"CSR2".to_vec();
    b.extend_from_slice(&(chunk as u64).to_le_bytes());
    b.extend_from_slice(&n.to_le_bytes());
    b.extend_from_slice(&port.to_le_bytes());
    b
}

/// A CSR client's two channels, `chunks` receive chunks of `chunk` bytes on
/// the data channel (all posted) and 8 credit receives on the control one.
pub struct RogueCsr {
    pub data: RogueChannel,
    pub ctrl: RogueChannel,
    /// The agent's chunk count.
    pub agent_chunks: usize,
}

impl RogueCsr {
    /// Opens the data channel only, its receives posted.
    pub fn data_channel(
        rv: &Rendezvous,
        port: u16,
        chunks: usize,
        chunk: usize,
    ) -> Result<RogueChannel, TransportError> {
        let (data, p) = RogueChannel::open(rv, port, chunks, chunk)?;
        data.post_recvs(chunks, true);
        rv.establish(p, "rogue", "data")?;
        Ok(data)
    }

    /// The whole set-up, saying `chunks` as its count.
    pub fn connect(
        rv: &Rendezvous,
        port: u16,
        chunks: usize,
        chunk: usize,
    ) -> Result<RogueCsr, TransportError> {
        let data = Self::data_channel(rv, port, chunks, chunk)?;
        data.say(&csr_geometry(chunk, chunks as u32, 0));
        let theirs = data.hear();
        assert_eq!(&theirs[..4], b"CSR2");
        let agent_chunks = u32::from_le_bytes(theirs[12..16].try_into().unwrap()) as usize;
        let ctrl_port = u16::from_le_bytes(theirs[16..18].try_into().unwrap());
        // The geometry took a receive chunk: put it back.
        data.qp
            .post_recv(&[RecvWr {
                wr_id: 0,
                buf: Some(data.chunks[0].sge(0, chunk)),
            }])
            .unwrap();
        let (ctrl, p) = RogueChannel::open(rv, ctrl_port, 0, chunk)?;
        ctrl.post_recvs(8, false);
        rv.establish(p, "rogue", "control")?;
        Ok(RogueCsr {
            data,
            ctrl,
            agent_chunks,
        })
    }
}

/// An MSR client's two channels after the whole set-up.
pub struct RogueMsr {
    /// Server→client: the agent writes into `inc.chunks`.
    pub inc: RogueChannel,
    /// Client→server: our writes and notifications.
    pub out: RogueChannel,
    /// The agent's receive chunks.
    pub agent_regions: Vec<RemoteRegion>,
}

impl RogueMsr {
    /// The set-up up to the client's addresses (not sent yet), with `chunks`
    /// receive chunks of `chunk` bytes.
    pub fn open(
        rv: &Rendezvous,
        port: u16,
        chunks: usize,
        chunk: usize,
    ) -> Result<RogueMsr, TransportError> {
        let (inc, p) = RogueChannel::open(rv, port, chunks, chunk)?;
        inc.post_setup_recv();
        rv.establish(p, "rogue", "server→client")?;
        let port_msg = inc.hear();
        assert_eq!(&port_msg[..4], b"MSRP");
        let second = u16::from_le_bytes(port_msg[4..6].try_into().unwrap());
        let (out, p) = RogueChannel::open(rv, second, 0, chunk)?;
        out.post_setup_recv();
        out.post_recvs(chunks, false);
        inc.post_recvs(chunks, false);
        rv.establish(p, "rogue", "client→server")?;
        let theirs = out.hear();
        assert_eq!(&theirs[..4], b"MSR2");
        let n = u32::from_le_bytes(theirs[12..16].try_into().unwrap()) as usize;
        let agent_regions = (0..n)
            .map(|i| {
                let at = 16 + i * RemoteRegion::ENCODED_LEN;
                RemoteRegion::from_bytes(&theirs[at..at + RemoteRegion::ENCODED_LEN]).unwrap()
            })
            .collect();
        Ok(RogueMsr {
            inc,
            out,
            agent_regions,
        })
    }

    /// The address message of our receive chunks, changed by `tamper`.
    pub fn addresses(&self, tamper: impl Fn(&mut [RemoteRegion])) -> Vec<u8> {
        let mut mine: Vec<RemoteRegion> =
            self.inc.chunks.iter().map(MemoryRegion::remote).collect();
        tamper(&mut mine);
        let mut b = b"MSR2".to_vec();
        b.extend_from_slice(&(self.inc.chunks[0].len() as u64).to_le_bytes());
        b.extend_from_slice(&(mine.len() as u32).to_le_bytes());
        for r in &mine {
            b.extend_from_slice(&r.to_bytes());
        }
        b
    }

    /// Sends `addresses` and waits for "ready for writes" (which takes a
    /// flow-control receive).
    pub fn finish(&self, addresses: &[u8]) {
        self.out.say(addresses);
        let ready = self.out.hear();
        assert!(ready.is_empty(), "{ready:?}");
    }

    /// The whole set-up, our addresses changed by `tamper`.
    pub fn connect(
        rv: &Rendezvous,
        port: u16,
        chunks: usize,
        chunk: usize,
        tamper: impl Fn(&mut [RemoteRegion]),
    ) -> Result<RogueMsr, TransportError> {
        let rogue = Self::open(rv, port, chunks, chunk)?;
        rogue.finish(&rogue.addresses(tamper));
        Ok(rogue)
    }
}
