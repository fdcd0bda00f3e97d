//! Forwarding tables for up*/down* routes, computed two ways, and the routes
//! they give.
//!
//! FERa (fully explicit): one entry per (switch, destination). A switch from
//! which the destination can be reached going only down takes the shortest
//! all-down path, even when going up first would be shorter: InfiniBand tables
//! ignore the input port, so a packet that arrives going down must be able to
//! go on going down. Every other switch goes up, to the up neighbour whose own
//! route is shortest. Ties go to the lower port number.
//!
//! PIRa (partially implicit): nodes are visited from the root, a node once all
//! its up neighbours are visited (lowest number first). Each switch's default
//! port leads to its parent, the up neighbour visited last; explicit entries
//! are only written where a route leaves the default: toward the new node from
//! its up neighbours, from the new node to its other up neighbours, and from
//! every visited switch that reaches the parent by an explicit entry.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};

use serde::Serialize;

use crate::topology::{NodeId, Port, Topology};
use crate::updown::{is_legal, Dir, UpDown};

/// Output ports per (switch, destination), as dense node indices.
pub trait Tables {
    /// The port switch `s` sends packets for `d` to; 0 means `s` is `d`.
    fn port(&self, s: usize, d: usize) -> Option<Port>;
}

/// The fully explicit tables.
#[derive(Debug, Clone)]
pub struct Fera {
    n: usize,
    // [s * n + d]: output port and route length, for switch rows.
    port: Vec<Port>,
    dist: Vec<u32>,
    switches: usize,
}

/// The lowest port of `i` leading to `j`, if they are neighbours.
fn port_to(t: &Topology, i: usize, j: usize) -> Option<Port> {
    let id = t.at(j).id;
    t.at(i).links.iter().find(|l| l.peer == id).map(|l| l.port)
}

impl Fera {
    /// Computes FERa for every destination.
    pub fn new(t: &Topology, ud: &UpDown) -> Self {
        let n = t.len();
        let mut port = vec![0; n * n];
        let mut dist = vec![u32::MAX; n * n];
        let order = ud.top_down_order();
        let forwards = |i: usize, d: usize| i == d || t.at(i).is_switch();
        for d in 0..n {
            // Switches that reach d going only down: a breadth-first search
            // from d along links taken backwards, from their lower end up.
            let mut down = vec![u32::MAX; n];
            down[d] = 0;
            let mut queue = VecDeque::from([d]);
            while let Some(y) = queue.pop_front() {
                if !forwards(y, d) {
                    continue;
                }
                for l in &t.at(y).links {
                    let x = t.peer_index(l);
                    if ud.dir(x, y) == Dir::Down && t.at(x).is_switch() && down[x] == u32::MAX {
                        down[x] = down[y] + 1;
                        queue.push_back(x);
                    }
                }
            }
            let mut len = down.clone();
            for &x in &order {
                if !t.at(x).is_switch() {
                    continue;
                }
                let row = x * n + d;
                if x == d {
                    (port[row], dist[row]) = (0, 0);
                    continue;
                }
                let want = if down[x] != u32::MAX {
                    Dir::Down
                } else {
                    Dir::Up
                };
                let best = t
                    .at(x)
                    .links
                    .iter()
                    .filter_map(|l| {
                        let y = t.peer_index(l);
                        (ud.dir(x, y) == want && forwards(y, d) && len[y] != u32::MAX)
                            .then(|| (len[y] + 1, l.port))
                    })
                    .min()
                    .expect("up*/down*: every switch has a legal next hop");
                (dist[row], port[row]) = best;
                len[x] = best.0;
            }
        }
        Self {
            n,
            port,
            dist,
            switches: t.switch_count(),
        }
    }

    /// Entries written: one per switch and destination.
    pub fn entries(&self) -> usize {
        self.switches * self.n
    }

    /// The route length from switch `s` to `d`.
    pub fn dist(&self, s: usize, d: usize) -> u32 {
        self.dist[s * self.n + d]
    }
}

impl Tables for Fera {
    fn port(&self, s: usize, d: usize) -> Option<Port> {
        (self.dist[s * self.n + d] != u32::MAX).then(|| self.port[s * self.n + d])
    }
}

/// The partially implicit tables.
#[derive(Debug, Clone)]
pub struct Pira {
    default: Vec<Option<Port>>,
    parent: Vec<Option<usize>>,
    entries: Vec<BTreeMap<usize, Port>>,
    order: Vec<usize>,
}

impl Pira {
    /// Computes PIRa.
    pub fn new(t: &Topology, ud: &UpDown) -> Self {
        let n = t.len();
        let ups: Vec<BTreeSet<usize>> = (0..n)
            .map(|i| {
                t.at(i)
                    .links
                    .iter()
                    .map(|l| t.peer_index(l))
                    .filter(|&j| ud.dir(i, j) == Dir::Up)
                    .collect()
            })
            .collect();
        let mut waiting: Vec<usize> = ups.iter().map(BTreeSet::len).collect();
        let mut step = vec![usize::MAX; n];
        let mut default = vec![None; n];
        let mut parent = vec![None; n];
        let mut entries = vec![BTreeMap::new(); n];
        let mut order = Vec::with_capacity(n);
        // Dense indices follow node numbers, so a min-heap of indices visits
        // the lowest-numbered ready node first.
        let mut ready = BinaryHeap::from([std::cmp::Reverse(ud.root())]);
        while let Some(std::cmp::Reverse(x)) = ready.pop() {
            step[x] = order.len();
            let f = ups[x].iter().copied().max_by_key(|&y| step[y]);
            parent[x] = f;
            if t.at(x).is_switch() {
                entries[x].insert(x, 0);
                default[x] = f.map(|f| port_to(t, x, f).expect("parent is a neighbour"));
                for &y in ups[x].iter().filter(|&&y| Some(y) != f) {
                    entries[x].insert(y, port_to(t, x, y).expect("up neighbour"));
                }
            }
            for &y in &ups[x] {
                entries[y].insert(x, port_to(t, y, x).expect("up neighbour"));
            }
            if let Some(f) = f {
                for &y in &order {
                    if ups[x].contains(&y) || !t.at(y).is_switch() {
                        continue;
                    }
                    if let Some(&p) = entries[y].get(&f) {
                        if Some(p) != default[y] {
                            entries[y].insert(x, p);
                        }
                    }
                }
            }
            order.push(x);
            // Distinct neighbours below x (parallel links count once).
            let below: BTreeSet<usize> = t
                .at(x)
                .links
                .iter()
                .map(|l| t.peer_index(l))
                .filter(|&z| ups[z].contains(&x))
                .collect();
            for z in below {
                waiting[z] -= 1;
                if waiting[z] == 0 {
                    ready.push(std::cmp::Reverse(z));
                }
            }
        }
        Self {
            default,
            parent,
            entries,
            order,
        }
    }

    /// Explicit entries written (each switch's entry for itself included).
    pub fn entries(&self) -> usize {
        self.entries.iter().map(BTreeMap::len).sum()
    }

    /// Default ports set (one per switch but the root).
    pub fn defaults(&self) -> usize {
        self.default.iter().flatten().count()
    }

    /// A switch's default port.
    pub fn default_port(&self, s: usize) -> Option<Port> {
        self.default[s]
    }

    /// The up neighbour a node was attached to when visited.
    pub fn parent(&self, i: usize) -> Option<usize> {
        self.parent[i]
    }

    /// A switch's explicit entries, by destination index.
    pub fn explicit(&self, s: usize) -> &BTreeMap<usize, Port> {
        &self.entries[s]
    }

    /// The order nodes were visited in.
    pub fn order(&self) -> &[usize] {
        &self.order
    }
}

impl Tables for Pira {
    fn port(&self, s: usize, d: usize) -> Option<Port> {
        self.entries[s].get(&d).copied().or(self.default[s])
    }
}

/// One link crossed by a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Hop {
    /// The node the packet leaves.
    pub node: NodeId,
    /// Its output port.
    pub port: Port,
    /// The node reached.
    pub next: NodeId,
    /// The input port there.
    pub next_port: Port,
    /// Up or down.
    pub dir: Dir,
}

/// The path tables give from one node to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route {
    /// Source node.
    pub from: NodeId,
    /// Destination node.
    pub to: NodeId,
    /// The links crossed, in order.
    pub hops: Vec<Hop>,
}

impl Route {
    /// Links crossed.
    pub fn len(&self) -> usize {
        self.hops.len()
    }

    /// Whether source and destination are the same node.
    pub fn is_empty(&self) -> bool {
        self.hops.is_empty()
    }

    /// Never up after down.
    pub fn is_legal(&self) -> bool {
        is_legal(self.hops.iter().map(|h| h.dir))
    }
}

/// Why tables give no route between two nodes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// A switch without an entry or default for the destination.
    #[error("switch {switch} has no entry for {to}")]
    NoEntry {
        /// The switch.
        switch: NodeId,
        /// The destination.
        to: NodeId,
    },
    /// An entry pointing at an unconnected port.
    #[error("switch {switch} sends {to} to unconnected port {port}")]
    DeadPort {
        /// The switch.
        switch: NodeId,
        /// The destination.
        to: NodeId,
        /// The port.
        port: Port,
    },
    /// A packet delivered to the wrong host or looping.
    #[error("packets for {to} from {from} do not arrive (stuck at {at})")]
    Lost {
        /// Source.
        from: NodeId,
        /// Destination.
        to: NodeId,
        /// Where it went wrong.
        at: NodeId,
    },
}

/// Follows the tables from `from` to `to` (dense indices).
pub fn follow(
    t: &Topology,
    ud: &UpDown,
    tables: &dyn Tables,
    from: usize,
    to: usize,
) -> Result<Route, RouteError> {
    let (fid, tid) = (t.at(from).id, t.at(to).id);
    let mut hops = Vec::new();
    let mut cur = from;
    while cur != to {
        let node = t.at(cur);
        let lost = RouteError::Lost {
            from: fid,
            to: tid,
            at: node.id,
        };
        let port = if node.is_switch() {
            tables.port(cur, to).ok_or(RouteError::NoEntry {
                switch: node.id,
                to: tid,
            })?
        } else if cur == from {
            node.links.first().ok_or(lost.clone())?.port
        } else {
            return Err(lost);
        };
        let link = node.link(port).ok_or(RouteError::DeadPort {
            switch: node.id,
            to: tid,
            port,
        })?;
        let next = t.peer_index(link);
        hops.push(Hop {
            node: node.id,
            port,
            next: link.peer,
            next_port: link.peer_port,
            dir: ud.dir(cur, next),
        });
        if hops.len() > t.len() {
            return Err(lost);
        }
        cur = next;
    }
    Ok(Route {
        from: fid,
        to: tid,
        hops,
    })
}

/// Every route between two distinct nodes.
pub fn all_routes(
    t: &Topology,
    ud: &UpDown,
    tables: &dyn Tables,
) -> Result<Vec<Route>, RouteError> {
    let n = t.len();
    let mut out = Vec::with_capacity(n * n.saturating_sub(1));
    for a in 0..n {
        for b in 0..n {
            if a != b {
                out.push(follow(t, ud, tables, a, b)?);
            }
        }
    }
    Ok(out)
}

/// A channel: a link direction, named by the node and port it leaves from.
pub type Channel = (NodeId, Port);

/// The channel dependency graph of a set of routes: channel `a` depends on `b`
/// when some route holds `a` while asking for `b`. Acyclic means no deadlock.
#[derive(Debug, Default, Clone)]
pub struct Dependencies {
    edges: BTreeMap<Channel, BTreeSet<Channel>>,
}

impl Dependencies {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the turns of a route.
    pub fn add_route(&mut self, r: &Route) {
        for w in r.hops.windows(2) {
            self.add((w[0].node, w[0].port), (w[1].node, w[1].port));
        }
    }

    /// Adds one dependency.
    pub fn add(&mut self, from: Channel, to: Channel) {
        self.edges.entry(from).or_default().insert(to);
    }

    /// The dependencies, as (held, requested).
    pub fn edges(&self) -> impl Iterator<Item = (Channel, Channel)> + '_ {
        self.edges
            .iter()
            .flat_map(|(a, bs)| bs.iter().map(move |b| (*a, *b)))
    }

    /// A cycle of channels if there is one.
    pub fn find_cycle(&self) -> Option<Vec<Channel>> {
        // Iterative three-colour depth-first search.
        let mut colour: BTreeMap<Channel, u8> = BTreeMap::new();
        for &start in self.edges.keys() {
            if colour.get(&start).copied().unwrap_or(0) != 0 {
                continue;
            }
            let mut stack: Vec<(Channel, Vec<Channel>)> =
                vec![(start, self.edges[&start].iter().copied().collect())];
            colour.insert(start, 1);
            while let Some((node, rest)) = stack.last_mut() {
                match rest.pop() {
                    Some(next) => match colour.get(&next).copied().unwrap_or(0) {
                        0 => {
                            colour.insert(next, 1);
                            let succ = self
                                .edges
                                .get(&next)
                                .map(|s| s.iter().copied().collect())
                                .unwrap_or_default();
                            stack.push((next, succ));
                        }
                        1 => {
                            let at = stack
                                .iter()
                                .position(|(c, _)| *c == next)
                                .expect("grey is on the stack");
                            return Some(stack[at..].iter().map(|(c, _)| *c).collect());
                        }
                        _ => {}
                    },
                    None => {
                        colour.insert(*node, 2);
                        stack.pop();
                    }
                }
            }
        }
        None
    }
}

/// Path-length statistics of a set of routes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Lengths {
    /// Routes counted.
    pub routes: usize,
    /// Sum of their lengths.
    pub total_hops: usize,
    /// The longest.
    pub max_hops: usize,
    /// Mean length.
    pub mean_hops: f64,
}

impl Lengths {
    /// Summarises routes.
    pub fn of(routes: &[Route]) -> Self {
        let total: usize = routes.iter().map(Route::len).sum();
        Self {
            routes: routes.len(),
            total_hops: total,
            max_hops: routes.iter().map(Route::len).max().unwrap_or(0),
            mean_hops: if routes.is_empty() {
                0.0
            } else {
                total as f64 / routes.len() as f64
            },
        }
    }
}
