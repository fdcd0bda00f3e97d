//! How many subnet management packets (SMPs) the subnet manager spends to
//! learn a topology change: by rediscovering everything, or by exploring only
//! around the change while keeping what it knew (and the LIDs it gave).
//!
//! The cost model, per device (it gives the thesis's 97 SMPs for its
//! 15-device network):
//! - a device is found by a `Get(NodeInfo)`; a new switch then costs a
//!   `Get(SwitchInfo)`, a `Get(PortInfo)` per port including port 0, and a
//!   `Set(PortInfo)` giving port 0 its LID; a new host costs a `Get(PortInfo)`
//!   and a `Set(PortInfo)` for its port;
//! - from every active port of a new switch (and from the subnet manager's own
//!   port) a `Get(NodeInfo)` asks who is on the other side; the exploration
//!   stops at devices already known.
//!
//! Detection is a sweep: one `Get(SwitchInfo)` per known switch, routed by the
//! current tables, reading the PortStateChange flag.
//!
//! Partial discovery, after the sweep: each switch that answers with the flag
//! set gets a `Set(SwitchInfo)` clearing it and a `Get(PortInfo)` per port.
//! A port that went down removes its link and marks the device behind it
//! missing, along with every device whose route to or from the subnet manager
//! went through that device (its "destination devices"). A port that came up
//! gets a `Get(NodeInfo)` and new devices are explored as above. Switches that
//! did not answer are missing too. Then, while a missing device is linked to a
//! reachable switch, a missing host is reachable again (no SMP), and a missing
//! switch is probed with one `Get(SwitchInfo)` over a directed route from that
//! switch (examined like a sweep answer if its flag is set). What stays missing
//! is forgotten.
//!
//! Full discovery: the same sweep, a `Set(SwitchInfo)` clearing the flag of the
//! first switch that reports a change (the rediscovery starts there and the
//! rest of the sweep is ignored), then the whole subnet explored from scratch.
//! This reading gives the thesis's 123 SMPs for its example; its text does not
//! list those SMPs, so the single flag clear is inferred from the count.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use serde::Serialize;

use crate::routing::{follow, Fera, Route};
use crate::topology::{Link, NodeId, NodeKind, Port, Topology};
use crate::updown::UpDown;
use crate::Error;

/// Get or Set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Method {
    /// SubnGet.
    Get,
    /// SubnSet.
    Set,
}

/// The management attribute an SMP carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Attribute {
    /// Node type, GUID, port count.
    NodeInfo,
    /// Switch capabilities and the PortStateChange flag.
    SwitchInfo,
    /// One port: state, LID.
    PortInfo,
}

/// Why an SMP is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// Periodic sweep: is anything changed on this switch?
    Sweep,
    /// Clears PortStateChange on a switch that reported a change.
    ClearFlag,
    /// Reads each port of a switch that reported a change.
    ReadPort,
    /// Checks a switch the old routes no longer reach, over a new route.
    Probe,
    /// Asks who is behind a port (NodeInfo).
    Explore,
    /// Reads a newly found device (SwitchInfo, PortInfo).
    ReadDevice,
    /// Gives a newly found port its LID.
    AssignLid,
}

/// How an SMP travels: routed by LID to a switch, then by a directed route
/// (a list of output ports) from there.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct SmpRoute {
    /// The switch reached by the tables first, if any.
    pub lid: Option<NodeId>,
    /// The directed part.
    pub directed: Vec<Port>,
}

impl SmpRoute {
    fn then(&self, port: Port) -> Self {
        let mut r = self.clone();
        r.directed.push(port);
        r
    }
}

impl fmt::Display for SmpRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = || {
            let p: Vec<String> = self.directed.iter().map(|p| p.to_string()).collect();
            format!("({})", p.join(","))
        };
        match (self.lid, self.directed.is_empty()) {
            (Some(l), true) => write!(f, "SM->{l}"),
            (Some(l), false) => write!(f, "SM->{l} {}", dir()),
            (None, _) => f.write_str(&dir()),
        }
    }
}

/// One management packet of a discovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Smp {
    /// Get or Set.
    pub method: Method,
    /// What it carries.
    pub attribute: Attribute,
    /// The port, for PortInfo.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<Port>,
    /// Why.
    pub purpose: Purpose,
    /// How it gets there.
    pub route: SmpRoute,
    /// The node that answers; `None` when none does (device gone).
    pub answered_by: Option<NodeId>,
}

/// SMPs of one discovery, with a count per purpose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SmpLog {
    /// All SMPs.
    pub total: usize,
    /// How many per purpose.
    pub by_purpose: BTreeMap<Purpose, usize>,
    /// The SMPs in the order the model sends them.
    pub smps: Vec<Smp>,
}

impl SmpLog {
    fn new(smps: Vec<Smp>) -> Self {
        let mut by_purpose = BTreeMap::new();
        for s in &smps {
            *by_purpose.entry(s.purpose).or_insert(0) += 1;
        }
        Self {
            total: smps.len(),
            by_purpose,
            smps,
        }
    }
}

/// Nodes and links that differ between two topologies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Nodes only in the new one.
    pub added: Vec<NodeId>,
    /// Nodes only in the old one.
    pub removed: Vec<NodeId>,
    /// Links only in the new one.
    pub links_added: Vec<(NodeId, Port, NodeId, Port)>,
    /// Links only in the old one.
    pub links_removed: Vec<(NodeId, Port, NodeId, Port)>,
}

/// Partial and full discovery of one change, side by side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiscoveryReport {
    /// The subnet manager's node.
    pub sm: NodeId,
    /// What changed (as seen from the subnet manager).
    pub change: Change,
    /// Exploring only around the change.
    pub partial: SmpLog,
    /// Sweep, flag clear and a rediscovery from scratch.
    pub full: SmpLog,
    /// Nodes the subnet manager knows after the partial discovery.
    pub known_after: Vec<NodeId>,
    /// Nodes it forgot.
    pub forgotten: Vec<NodeId>,
    /// Links its database holds after the partial discovery, as (lower node,
    /// port, higher node, port): the new topology, if the model is right.
    #[serde(skip)]
    pub links_after: Vec<(NodeId, Port, NodeId, Port)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Answered, or found, in this round.
    Reachable,
    /// Swept, no answer yet.
    Waiting,
    /// Not reachable with what the subnet manager knows.
    Missing,
    /// A host nobody has reason to doubt.
    Presumed,
    /// Probed and silent.
    Dead,
}

fn smp(
    method: Method,
    attribute: Attribute,
    port: Option<Port>,
    purpose: Purpose,
    route: &SmpRoute,
    answered_by: Option<NodeId>,
) -> Smp {
    Smp {
        method,
        attribute,
        port,
        purpose,
        route: route.clone(),
        answered_by,
    }
}

/// What exploring a new device costs: its reads and LID, per the model.
fn read_device(
    out: &mut Vec<Smp>,
    node: &crate::topology::Node,
    route: &SmpRoute,
    arrival_port: Port,
) {
    use Attribute::*;
    use Method::*;
    let id = Some(node.id);
    match node.kind {
        NodeKind::Switch => {
            out.push(smp(Get, SwitchInfo, None, Purpose::ReadDevice, route, id));
            for p in 0..=node.num_ports {
                out.push(smp(Get, PortInfo, Some(p), Purpose::ReadDevice, route, id));
            }
            out.push(smp(Set, PortInfo, Some(0), Purpose::AssignLid, route, id));
        }
        NodeKind::Host => {
            out.push(smp(
                Get,
                PortInfo,
                Some(arrival_port),
                Purpose::ReadDevice,
                route,
                id,
            ));
            out.push(smp(
                Set,
                PortInfo,
                Some(arrival_port),
                Purpose::AssignLid,
                route,
                id,
            ));
        }
    }
}

/// The SMPs of discovering `t` from scratch from the subnet manager at `sm`.
pub fn full_discovery(t: &Topology, sm: NodeId) -> Result<SmpLog, Error> {
    let t = t.component(sm)?;
    let mut out = Vec::new();
    let mut known: BTreeSet<NodeId> = BTreeSet::new();
    let root = SmpRoute::default();
    out.push(smp(
        Method::Get,
        Attribute::NodeInfo,
        None,
        Purpose::Explore,
        &root,
        Some(sm),
    ));
    known.insert(sm);
    let me = t.node(sm).expect("component of sm");
    let own_port = me.links.first().map(|l| l.port).unwrap_or(1);
    read_device(&mut out, me, &root, own_port);
    // Breadth-first: (node, route to it).
    let mut queue = VecDeque::from([(sm, root)]);
    while let Some((id, route)) = queue.pop_front() {
        let node = t.node(id).expect("component node");
        // Only switches and the subnet manager's own port send SMPs onward.
        if !node.is_switch() && id != sm {
            continue;
        }
        for l in &node.links {
            let r = route.then(l.port);
            out.push(smp(
                Method::Get,
                Attribute::NodeInfo,
                None,
                Purpose::Explore,
                &r,
                Some(l.peer),
            ));
            if known.insert(l.peer) {
                read_device(
                    &mut out,
                    t.node(l.peer).expect("component node"),
                    &r,
                    l.peer_port,
                );
                queue.push_back((l.peer, r));
            }
        }
    }
    Ok(SmpLog::new(out))
}

/// Partial and full discovery of the change from `old` to `new`. `root` is the
/// switch the old tables were computed from; `sm` is where the subnet manager
/// runs (a switch, or a host).
pub fn discover(
    old: &Topology,
    new: &Topology,
    root: NodeId,
    sm: NodeId,
) -> Result<DiscoveryReport, Error> {
    // The subnet manager only ever knows the part it is connected to.
    let old = &old.component(sm).map_err(|_| {
        Error::Unsupported(format!(
            "the subnet manager's node {sm} is not in the old topology"
        ))
    })?;
    let new = new.component(sm).map_err(|_| {
        Error::Unsupported(format!(
            "the subnet manager's node {sm} is not in the new topology"
        ))
    })?;
    if new.node(root).is_none() || old.node(root).is_none() {
        return Err(Error::Unsupported(format!(
            "root switch {root} must be in both topologies, on the subnet manager's side"
        )));
    }
    let old_ud = UpDown::new(old, root)?;
    let fera = Fera::new(old, &old_ud);
    let mut p = Partial::new(old, &new, &old_ud, &fera, sm)?;
    p.run();
    let known_after: Vec<NodeId> = p.db.keys().copied().collect();
    let mut links_after = Vec::new();
    for (&n, links) in &p.db {
        for l in links.values() {
            if (n, l.port) < (l.peer, l.peer_port) {
                links_after.push((n, l.port, l.peer, l.peer_port));
            }
        }
    }
    let forgotten: Vec<NodeId> = old
        .nodes()
        .iter()
        .map(|n| n.id)
        .filter(|id| !p.db.contains_key(id))
        .collect();

    let mut full = Vec::new();
    let mut flagged = false;
    for s in old.nodes().iter().filter(|n| n.is_switch()) {
        let answers = p.sweep_answers(s.id);
        let route = SmpRoute {
            lid: (s.id != sm).then_some(s.id),
            directed: vec![],
        };
        full.push(smp(
            Method::Get,
            Attribute::SwitchInfo,
            None,
            Purpose::Sweep,
            &route,
            answers.then_some(s.id),
        ));
        if answers && p.changed(s.id) && !flagged {
            flagged = true;
            full.push(smp(
                Method::Set,
                Attribute::SwitchInfo,
                None,
                Purpose::ClearFlag,
                &route,
                Some(s.id),
            ));
        }
    }
    full.extend(full_discovery(&new, sm)?.smps);

    let old_ids: BTreeSet<NodeId> = old.nodes().iter().map(|n| n.id).collect();
    let new_ids: BTreeSet<NodeId> = new.nodes().iter().map(|n| n.id).collect();
    let old_links: BTreeSet<_> = old.links().into_iter().collect();
    let new_links: BTreeSet<_> = new.links().into_iter().collect();
    Ok(DiscoveryReport {
        sm,
        change: Change {
            added: new_ids.difference(&old_ids).copied().collect(),
            removed: old_ids.difference(&new_ids).copied().collect(),
            links_added: new_links.difference(&old_links).copied().collect(),
            links_removed: old_links.difference(&new_links).copied().collect(),
        },
        partial: SmpLog::new(p.out),
        full: SmpLog::new(full),
        known_after,
        forgotten,
        links_after,
    })
}

/// The state of a partial discovery.
struct Partial<'a> {
    old: &'a Topology,
    new: &'a Topology,
    sm: NodeId,
    // Routes of the old tables from and to the subnet manager, per node.
    to: BTreeMap<NodeId, Route>,
    back: BTreeMap<NodeId, Route>,
    // The subnet manager's database: node -> its links by port.
    db: BTreeMap<NodeId, BTreeMap<Port, Link>>,
    state: BTreeMap<NodeId, State>,
    route: BTreeMap<NodeId, SmpRoute>,
    examined: BTreeSet<NodeId>,
    out: Vec<Smp>,
}

impl<'a> Partial<'a> {
    fn new(
        old: &'a Topology,
        new: &'a Topology,
        ud: &UpDown,
        fera: &Fera,
        sm: NodeId,
    ) -> Result<Self, Error> {
        let s = old.index_of(sm).expect("checked");
        let mut to = BTreeMap::new();
        let mut back = BTreeMap::new();
        for (i, n) in old.nodes().iter().enumerate() {
            if i != s {
                to.insert(n.id, follow(old, ud, fera, s, i)?);
                back.insert(n.id, follow(old, ud, fera, i, s)?);
            }
        }
        let db = old
            .nodes()
            .iter()
            .map(|n| (n.id, n.links.iter().map(|l| (l.port, *l)).collect()))
            .collect();
        let state = old
            .nodes()
            .iter()
            .map(|n| {
                (
                    n.id,
                    if n.is_switch() {
                        State::Waiting
                    } else {
                        State::Presumed
                    },
                )
            })
            .collect();
        Ok(Self {
            old,
            new,
            sm,
            to,
            back,
            db,
            state,
            route: BTreeMap::new(),
            examined: BTreeSet::new(),
            out: Vec::new(),
        })
    }

    fn kind(&self, id: NodeId) -> NodeKind {
        self.new
            .node(id)
            .or(self.old.node(id))
            .map(|n| n.kind)
            .expect("node of either topology")
    }

    /// Whether every link of an old route is still cabled the same way.
    fn intact(&self, r: Option<&Route>) -> bool {
        r.is_none_or(|r| {
            r.hops.iter().all(|h| {
                self.new.node(h.node).and_then(|n| n.link(h.port))
                    == Some(&Link {
                        port: h.port,
                        peer: h.next,
                        peer_port: h.next_port,
                    })
            })
        })
    }

    fn sweep_answers(&self, id: NodeId) -> bool {
        self.new.node(id).is_some()
            && self.intact(self.to.get(&id))
            && self.intact(self.back.get(&id))
    }

    /// PortStateChange: some port of a switch present in both topologies
    /// is cabled differently.
    fn changed(&self, id: NodeId) -> bool {
        match (self.old.node(id), self.new.node(id)) {
            (Some(a), Some(b)) => a.links != b.links,
            _ => false,
        }
    }

    /// Devices whose old route to or from the subnet manager passes through `x`.
    fn destination_devices(&self, x: NodeId) -> Vec<NodeId> {
        let through = |r: &Route| r.hops.iter().skip(1).any(|h| h.node == x);
        self.to
            .iter()
            .filter(|(d, r)| **d != x && (through(r) || self.back.get(d).is_some_and(through)))
            .map(|(d, _)| *d)
            .collect()
    }

    fn mark_missing(&mut self, x: NodeId) {
        let mut all = vec![x];
        if self.kind(x) == NodeKind::Switch {
            all.extend(self.destination_devices(x));
        }
        for d in all {
            if let Some(s) = self.state.get_mut(&d) {
                if matches!(s, State::Waiting | State::Presumed) {
                    *s = State::Missing;
                }
            }
        }
    }

    fn unlink(&mut self, a: NodeId, pa: Port) {
        if let Some(l) = self.db.get_mut(&a).and_then(|m| m.remove(&pa)) {
            if let Some(m) = self.db.get_mut(&l.peer) {
                m.remove(&l.peer_port);
            }
        }
    }

    /// Clears the flag, reads every port, and acts on what differs from
    /// before the change. Returns the ports that came up.
    fn examine(&mut self, s: NodeId) -> Vec<Port> {
        use Attribute::*;
        use Method::*;
        self.examined.insert(s);
        let route = self.route[&s].clone();
        let node = self.new.node(s).expect("answered, so present");
        self.out.push(smp(
            Set,
            SwitchInfo,
            None,
            Purpose::ClearFlag,
            &route,
            Some(s),
        ));
        for p in 1..=node.num_ports {
            self.out.push(smp(
                Get,
                PortInfo,
                Some(p),
                Purpose::ReadPort,
                &route,
                Some(s),
            ));
        }
        let before = self
            .old
            .node(s)
            .map(|n| n.links.clone())
            .unwrap_or_default();
        let now = node.links.clone();
        let mut up = Vec::new();
        for p in 1..=node.num_ports {
            let was = before.iter().find(|l| l.port == p);
            let is = now.iter().find(|l| l.port == p);
            if was == is {
                continue;
            }
            if let Some(w) = was {
                self.unlink(s, p);
                self.mark_missing(w.peer);
            }
            if is.is_some() {
                up.push(p);
            }
        }
        up
    }

    /// Makes a known node reachable over `route`; examines it if flagged.
    fn reach(&mut self, id: NodeId, route: SmpRoute) -> Vec<(NodeId, Port)> {
        self.state.insert(id, State::Reachable);
        self.route.insert(id, route);
        if self.kind(id) == NodeKind::Switch && self.changed(id) && !self.examined.contains(&id) {
            return self.examine(id).into_iter().map(|p| (id, p)).collect();
        }
        Vec::new()
    }

    /// `Get(NodeInfo)` through each (switch, port), exploring what is new.
    fn explore(&mut self, mut work: VecDeque<(NodeId, Port)>) {
        while let Some((s, p)) = work.pop_front() {
            let l = *self
                .new
                .node(s)
                .and_then(|n| n.link(p))
                .expect("an active port");
            let route = self.route[&s].then(p);
            self.out.push(smp(
                Method::Get,
                Attribute::NodeInfo,
                None,
                Purpose::Explore,
                &route,
                Some(l.peer),
            ));
            // A re-cabled port loses its old link at both ends first.
            self.unlink(s, p);
            self.unlink(l.peer, l.peer_port);
            self.db.entry(s).or_default().insert(p, l);
            self.db.entry(l.peer).or_default().insert(
                l.peer_port,
                Link {
                    port: l.peer_port,
                    peer: s,
                    peer_port: p,
                },
            );
            match self.state.get(&l.peer) {
                None => {
                    // A new device: read it, give it its LID, look behind it.
                    let node = self.new.node(l.peer).expect("linked in the new topology");
                    read_device(&mut self.out, node, &route, l.peer_port);
                    self.state.insert(l.peer, State::Reachable);
                    self.route.insert(l.peer, route);
                    if node.is_switch() {
                        self.examined.insert(l.peer);
                        work.extend(node.links.iter().map(|m| (l.peer, m.port)));
                    }
                }
                Some(State::Reachable | State::Presumed) => {}
                Some(_) => work.extend(self.reach(l.peer, route)),
            }
        }
    }

    fn run(&mut self) {
        // Sweep every known switch over the old routes.
        let switches: Vec<NodeId> = self
            .old
            .nodes()
            .iter()
            .filter(|n| n.is_switch())
            .map(|n| n.id)
            .collect();
        let mut flagged = Vec::new();
        for &s in &switches {
            let answers = self.sweep_answers(s);
            let route = SmpRoute {
                lid: (s != self.sm).then_some(s),
                directed: vec![],
            };
            self.out.push(smp(
                Method::Get,
                Attribute::SwitchInfo,
                None,
                Purpose::Sweep,
                &route,
                answers.then_some(s),
            ));
            if answers {
                self.state.insert(s, State::Reachable);
                self.route.insert(s, route);
                if self.changed(s) {
                    flagged.push(s);
                }
            }
        }
        self.state.insert(self.sm, State::Reachable);
        self.route.entry(self.sm).or_default();
        // Every flagged switch's ports are read before anything is explored.
        let mut work = VecDeque::new();
        for s in flagged {
            work.extend(self.examine(s).into_iter().map(|p| (s, p)));
        }
        self.explore(work);
        for s in self.state.values_mut() {
            if *s == State::Waiting {
                *s = State::Missing;
            }
        }
        // Reconnect missing devices through reachable switches.
        loop {
            let next = self.db.iter().find_map(|(&s, links)| {
                (self.state.get(&s) == Some(&State::Reachable) && self.kind(s) == NodeKind::Switch)
                    .then(|| {
                        links
                            .values()
                            .find(|l| self.state.get(&l.peer) == Some(&State::Missing))
                            .map(|l| (l.peer, s, l.port, l.peer_port))
                    })
                    .flatten()
            });
            let Some((d, s, p, q)) = next else { break };
            let route = self.route[&s].then(p);
            let alive = self.new.node(s).and_then(|n| n.link(p))
                == Some(&Link {
                    port: p,
                    peer: d,
                    peer_port: q,
                });
            if self.kind(d) == NodeKind::Host {
                self.state
                    .insert(d, if alive { State::Reachable } else { State::Dead });
                self.route.insert(d, route);
                continue;
            }
            self.out.push(smp(
                Method::Get,
                Attribute::SwitchInfo,
                None,
                Purpose::Probe,
                &route,
                alive.then_some(d),
            ));
            if alive {
                let up = self.reach(d, route);
                self.explore(up.into());
            } else {
                self.state.insert(d, State::Dead);
            }
        }
        // Forget whatever stayed out of reach.
        let gone: Vec<NodeId> = self
            .state
            .iter()
            .filter(|(_, s)| matches!(s, State::Missing | State::Dead | State::Waiting))
            .map(|(&id, _)| id)
            .collect();
        for id in gone {
            if let Some(links) = self.db.remove(&id) {
                for l in links.values() {
                    if let Some(m) = self.db.get_mut(&l.peer) {
                        m.remove(&l.peer_port);
                    }
                }
            }
        }
    }
}
