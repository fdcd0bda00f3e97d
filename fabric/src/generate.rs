//! Random irregular subnets like the thesis's, and the table-size growth
//! measured on them.
//!
//! The thesis's networks: 4-port switches joined at random (not every port
//! used), each switch with a host on a free port, the subnet manager on switch
//! 0. Its table of entries per algorithm lists more hosts than switches for
//! some sizes, so the host count is a parameter here: one host per switch in a
//! random order, then a second on as many switches as needed. Links are a
//! random spanning tree (so the subnet is connected) plus random extra links
//! between switches with free ports. Nodes are then numbered in the order a
//! breadth-first discovery from the root would assign LIDs.
//!
//! The generator uses its own SplitMix64 so a seed gives the same network on
//! every platform and every version of every dependency.

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::routing::{all_routes, Fera, Lengths, Pira};
use crate::topology::{NodeId, NodeKind, Port, Topology, TopologyBuilder};
use crate::updown::UpDown;
use crate::Error;

/// SplitMix64 (Steele, Lea and Flood): small, fast, and fixed forever.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (`n` > 0), without modulo bias.
    pub fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next_u64();
            if x < zone {
                return (x % n) as usize;
            }
        }
    }

    /// Shuffles in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// The shape of a random irregular subnet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Irregular {
    /// Switches.
    pub switches: usize,
    /// Hosts (each a single-ported node).
    pub hosts: usize,
    /// Ports per switch.
    pub ports: Port,
    /// Share of the switch ports left after the tree and the hosts that get
    /// extra links (0 = a tree, 1 = as many as fit).
    pub fill: f64,
    /// The seed.
    pub seed: u64,
}

impl Irregular {
    /// The thesis's shape: 4-port switches, every spare port used if possible.
    pub fn thesis(switches: usize, hosts: usize, seed: u64) -> Self {
        Self {
            switches,
            hosts,
            ports: 4,
            fill: 1.0,
            seed,
        }
    }

    /// Builds the subnet; switch 0 of the construction becomes node 1 (the root).
    pub fn build(&self) -> Result<Topology, Error> {
        let (s, p) = (self.switches, usize::from(self.ports));
        if s == 0 {
            return Err(Error::Unsupported(
                "a subnet needs at least one switch".into(),
            ));
        }
        // Two ports per switch stay free of hosts so the tree always fits.
        let per_switch_hosts = p.saturating_sub(2).max(usize::from(s == 1) * p);
        if self.hosts > s * per_switch_hosts || (s > 1 && p < 2) {
            return Err(Error::Unsupported(format!(
                "{} hosts do not fit on {s} switches of {p} ports (at most {} each, keeping two for links)",
                self.hosts, per_switch_hosts
            )));
        }
        let mut rng = SplitMix64::new(self.seed);
        let mut hosts_at = vec![0usize; s];
        let mut placed = 0;
        while placed < self.hosts {
            let mut order: Vec<usize> = (0..s).collect();
            rng.shuffle(&mut order);
            for i in order {
                if placed < self.hosts && hosts_at[i] < per_switch_hosts {
                    hosts_at[i] += 1;
                    placed += 1;
                }
            }
        }
        let mut free: Vec<usize> = (0..s).map(|i| p - hosts_at[i]).collect();
        let mut links: BTreeSet<(usize, usize)> = BTreeSet::new();
        // Spanning tree: each switch, in random order, joins a random earlier one.
        let mut order: Vec<usize> = (1..s).collect();
        rng.shuffle(&mut order);
        let mut joined = vec![0usize];
        for &i in &order {
            let open: Vec<usize> = joined.iter().copied().filter(|&j| free[j] > 0).collect();
            let j = open[rng.below(open.len())];
            links.insert((i.min(j), i.max(j)));
            free[i] -= 1;
            free[j] -= 1;
            joined.push(i);
        }
        // Extra links at random between switches that still have free ports.
        let spare: usize = free.iter().sum();
        let target = ((spare as f64 * self.fill.clamp(0.0, 1.0)) / 2.0).floor() as usize;
        for _ in 0..target {
            let mut cands = Vec::new();
            for a in 0..s {
                for b in a + 1..s {
                    if free[a] > 0 && free[b] > 0 && !links.contains(&(a, b)) {
                        cands.push((a, b));
                    }
                }
            }
            if cands.is_empty() {
                break;
            }
            let (a, b) = cands[rng.below(cands.len())];
            links.insert((a, b));
            free[a] -= 1;
            free[b] -= 1;
        }
        // Port numbers: each switch hands out its ports in a random order.
        let mut next_ports: Vec<Vec<Port>> = (0..s)
            .map(|_| {
                let mut v: Vec<Port> = (1..=self.ports).collect();
                rng.shuffle(&mut v);
                v.reverse();
                v
            })
            .collect();
        // Adjacency of the construction: switch i's ports -> (peer, peer port).
        // Peers >= s are hosts.
        let mut adj: Vec<Vec<(Port, usize, Port)>> = vec![Vec::new(); s + self.hosts];
        for &(a, b) in &links {
            let pa = next_ports[a].pop().expect("free port counted");
            let pb = next_ports[b].pop().expect("free port counted");
            adj[a].push((pa, b, pb));
            adj[b].push((pb, a, pa));
        }
        let mut h = s;
        for (i, &count) in hosts_at.iter().enumerate() {
            for _ in 0..count {
                let pi = next_ports[i].pop().expect("host port reserved");
                adj[i].push((pi, h, 1));
                adj[h].push((1, i, pi));
                h += 1;
            }
        }
        for a in &mut adj {
            a.sort();
        }
        // Number nodes as a breadth-first discovery from switch 0 would.
        let mut id = vec![0 as NodeId; s + self.hosts];
        let mut next: NodeId = 1;
        let mut queue = VecDeque::from([0usize]);
        id[0] = next;
        while let Some(i) = queue.pop_front() {
            for &(_, j, _) in &adj[i] {
                if id[j] == 0 {
                    next += 1;
                    id[j] = next;
                    queue.push_back(j);
                }
            }
        }
        let mut b = TopologyBuilder::new();
        for (i, &nid) in id.iter().enumerate() {
            if i < s {
                b.add_node(nid, NodeKind::Switch, self.ports)?;
            } else {
                b.add_node(nid, NodeKind::Host, 0)?;
            }
        }
        for (i, a) in adj.iter().enumerate() {
            for &(pi, j, pj) in a {
                if i < j {
                    b.link(id[i], pi, id[j], pj)?;
                }
            }
        }
        Ok(b.build(self.ports)?)
    }
}

/// One row of the thesis's table of computed entries (its Table 20).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ThesisRow {
    /// Switches.
    pub switches: usize,
    /// Switches plus hosts.
    pub nodes: usize,
    /// FERa entries the thesis reports.
    pub fera: usize,
    /// PIRa entries the thesis reports (default ports not counted).
    pub pira: usize,
}

/// The thesis's sizes and counts.
pub const THESIS_GROWTH: [ThesisRow; 10] = [
    ThesisRow {
        switches: 8,
        nodes: 15,
        fera: 120,
        pira: 50,
    },
    ThesisRow {
        switches: 12,
        nodes: 23,
        fera: 276,
        pira: 85,
    },
    ThesisRow {
        switches: 16,
        nodes: 30,
        fera: 482,
        pira: 122,
    },
    ThesisRow {
        switches: 20,
        nodes: 40,
        fera: 800,
        pira: 188,
    },
    ThesisRow {
        switches: 24,
        nodes: 46,
        fera: 1108,
        pira: 262,
    },
    ThesisRow {
        switches: 32,
        nodes: 72,
        fera: 2304,
        pira: 435,
    },
    ThesisRow {
        switches: 40,
        nodes: 68,
        fera: 2740,
        pira: 515,
    },
    ThesisRow {
        switches: 48,
        nodes: 112,
        fera: 5417,
        pira: 927,
    },
    ThesisRow {
        switches: 64,
        nodes: 146,
        fera: 9353,
        pira: 1220,
    },
    ThesisRow {
        switches: 128,
        nodes: 218,
        fera: 27936,
        pira: 2592,
    },
];

/// Entries and route lengths measured on random subnets of one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrowthRow {
    /// Switches.
    pub switches: usize,
    /// Switches plus hosts.
    pub nodes: usize,
    /// Networks measured.
    pub samples: usize,
    /// FERa entries (the same for every network of this size).
    pub fera: usize,
    /// PIRa explicit entries, mean over the samples.
    pub pira: f64,
    /// PIRa default ports (switches but the root).
    pub pira_defaults: usize,
    /// FERa / PIRa.
    pub ratio: f64,
    /// Mean route length with FERa tables.
    pub fera_mean_hops: f64,
    /// Mean route length with PIRa tables.
    pub pira_mean_hops: f64,
    /// Mean (over the samples) of the fastest of 7 computations of the FERa
    /// tables, microseconds, on this machine.
    pub fera_micros: f64,
    /// The same for the PIRa tables.
    pub pira_micros: f64,
    /// The thesis's row for this size, if it has one.
    pub thesis: Option<ThesisRow>,
}

/// Runs `f` a few times; its last result and the shortest time taken.
fn fastest<T>(mut f: impl FnMut() -> T) -> (T, Duration) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..7 {
        let start = Instant::now();
        out = Some(f());
        best = best.min(start.elapsed());
    }
    (out.expect("ran at least once"), best)
}

/// Measures one size: `samples` networks from consecutive seeds, with
/// `ports`-port switches and `fill` as in [`Irregular`].
pub fn growth_row(
    switches: usize,
    nodes: usize,
    samples: usize,
    seed: u64,
    ports: Port,
    fill: f64,
) -> Result<GrowthRow, Error> {
    let hosts = nodes.checked_sub(switches).ok_or_else(|| {
        Error::Unsupported(format!("{nodes} nodes cannot hold {switches} switches"))
    })?;
    let samples = samples.max(1);
    let (mut pira, mut fera_hops, mut pira_hops) = (0usize, 0.0, 0.0);
    let (mut fera_time, mut pira_time) = (Duration::ZERO, Duration::ZERO);
    let mut fera = 0;
    for k in 0..samples {
        let shape = Irregular {
            ports,
            fill,
            ..Irregular::thesis(switches, hosts, seed.wrapping_add(k as u64))
        };
        let t = shape.build()?;
        let ud = UpDown::new(&t, 1)?;
        // The fastest of a few runs: other work on the machine only adds time.
        let (f, ft) = fastest(|| Fera::new(&t, &ud));
        let (p, pt) = fastest(|| Pira::new(&t, &ud));
        fera_time += ft;
        pira_time += pt;
        fera = f.entries();
        pira += p.entries();
        fera_hops += Lengths::of(&all_routes(&t, &ud, &f)?).mean_hops;
        pira_hops += Lengths::of(&all_routes(&t, &ud, &p)?).mean_hops;
    }
    let n = samples as f64;
    let pira = pira as f64 / n;
    Ok(GrowthRow {
        switches,
        nodes,
        samples,
        fera,
        pira,
        pira_defaults: switches - 1,
        ratio: fera as f64 / pira,
        fera_mean_hops: fera_hops / n,
        pira_mean_hops: pira_hops / n,
        fera_micros: fera_time.as_secs_f64() * 1e6 / n,
        pira_micros: pira_time.as_secs_f64() * 1e6 / n,
        thesis: THESIS_GROWTH
            .iter()
            .copied()
            .find(|r| r.switches == switches && r.nodes == nodes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_is_fixed_and_unbiased_enough() {
        let mut r = SplitMix64::new(0);
        // The reference sequence for seed 0.
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        let mut counts = [0usize; 6];
        for _ in 0..6000 {
            counts[r.below(6)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (850..1150).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn generated_subnets_have_the_asked_shape() {
        for seed in 0..20 {
            let t = Irregular::thesis(32, 40, seed).build().unwrap();
            assert_eq!(t.switch_count(), 32);
            assert_eq!(t.len(), 72);
            t.check_connected(0).unwrap();
            assert_eq!(t.at(0).id, 1);
            assert!(t.at(0).is_switch());
            for n in t.nodes().iter().filter(|n| n.is_switch()) {
                assert!(n.links.len() <= 4);
                let hosts = n
                    .links
                    .iter()
                    .filter(|l| !t.node(l.peer).unwrap().is_switch())
                    .count();
                assert!(
                    (1..=2).contains(&hosts),
                    "every switch gets a host, none more than two"
                );
            }
        }
        // Same seed, same network.
        assert_eq!(
            Irregular::thesis(16, 14, 7).build().unwrap(),
            Irregular::thesis(16, 14, 7).build().unwrap()
        );
        assert!(Irregular::thesis(4, 9, 0).build().is_err());
    }
}
