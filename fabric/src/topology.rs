//! The subnet as a graph of switches and host ports joined by links.
//!
//! Nodes are numbered as the thesis numbers them: by LID. A switch has one
//! number (its port 0); every host port is a node of its own, because each CA
//! port has its own LID and a CA never forwards packets.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

/// A node number: the LID of a switch (port 0) or of a host port.
pub type NodeId = u16;

/// A physical port number on a switch (1..=254) or a host.
pub type Port = u8;

/// The highest unicast LID; node numbers are LIDs.
pub const MAX_NODE_ID: NodeId = 0xBFFF;

/// Whether a node forwards packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// A switch: has a forwarding table.
    Switch,
    /// A channel adapter port (or router port): a leaf with one link.
    Host,
}

/// One end of a link seen from a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Link {
    /// The local port.
    pub port: Port,
    /// The node at the other end.
    pub peer: NodeId,
    /// The port at the other end.
    pub peer_port: Port,
}

/// A switch or a host port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Node {
    /// Its number (LID).
    pub id: NodeId,
    /// Switch or host.
    pub kind: NodeKind,
    /// How many physical ports it has (a switch's radix; counts PortInfo reads).
    pub num_ports: Port,
    /// Its links, sorted by local port.
    pub links: Vec<Link>,
    /// Node GUID when the topology came from `ibnetdiscover`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guid: Option<u64>,
    /// Node description when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl Node {
    /// The link on `port`, if that port is connected.
    pub fn link(&self, port: Port) -> Option<&Link> {
        self.links.iter().find(|l| l.port == port)
    }

    /// Whether this node forwards packets.
    pub fn is_switch(&self) -> bool {
        self.kind == NodeKind::Switch
    }
}

/// Why a topology cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// Node numbers are LIDs.
    #[error("node number {0} is not a unicast LID (1..={MAX_NODE_ID})")]
    BadNodeId(u32),
    /// Port 0 is the management port and 255 is reserved.
    #[error("port {port} of node {node} is not a physical port (1..=254)")]
    BadPort {
        /// The node.
        node: NodeId,
        /// The port.
        port: u32,
    },
    /// The same number used for a switch and for a host.
    #[error("node {0} is used both as a switch and as a host")]
    KindClash(NodeId),
    /// A port with two links.
    #[error("port {port} of node {node} is connected twice")]
    PortInUse {
        /// The node.
        node: NodeId,
        /// The port.
        port: Port,
    },
    /// A link from a node to itself.
    #[error("node {0} is linked to itself")]
    SelfLink(NodeId),
    /// Hosts are single-ported leaves.
    #[error("host {0} has more than one link (each host port is its own node)")]
    HostTwice(NodeId),
    /// Two hosts linked without a switch.
    #[error("hosts {0} and {1} are linked directly; only links to switches are supported")]
    HostToHost(NodeId, NodeId),
    /// A port number above the switch's declared radix.
    #[error("port {port} of switch {node} is above its {num_ports} ports")]
    AboveRadix {
        /// The switch.
        node: NodeId,
        /// The port.
        port: Port,
        /// Its declared number of ports.
        num_ports: Port,
    },
    /// A topology with no switch has nothing to route.
    #[error("the topology has no switch")]
    NoSwitch,
    /// A node named on the command line that the topology lacks.
    #[error("node {0} is not in the topology")]
    UnknownNode(NodeId),
    /// A node that must be a switch (a root) is a host.
    #[error("node {0} is a host, not a switch")]
    NotASwitch(NodeId),
    /// Some nodes cannot be reached from the root.
    #[error("{} node(s) are not connected to node {root}: {}", .nodes.len(), list(.nodes))]
    Disconnected {
        /// The root.
        root: NodeId,
        /// The unreachable nodes.
        nodes: Vec<NodeId>,
    },
}

fn list(nodes: &[NodeId]) -> String {
    let mut s: Vec<String> = nodes.iter().take(12).map(|n| n.to_string()).collect();
    if nodes.len() > 12 {
        s.push("...".into());
    }
    s.join(", ")
}

/// Builds a [`Topology`] link by link, checking each one.
#[derive(Debug, Default)]
pub struct TopologyBuilder {
    nodes: BTreeMap<NodeId, Node>,
}

impl TopologyBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks a raw node number.
    pub fn node_id(raw: u32) -> Result<NodeId, TopologyError> {
        if raw == 0 || raw > u32::from(MAX_NODE_ID) {
            return Err(TopologyError::BadNodeId(raw));
        }
        Ok(raw as NodeId)
    }

    /// Checks a raw port number.
    pub fn port(node: NodeId, raw: u32) -> Result<Port, TopologyError> {
        if raw == 0 || raw > 254 {
            return Err(TopologyError::BadPort { node, port: raw });
        }
        Ok(raw as Port)
    }

    /// Declares a node (idempotent for the same kind). `num_ports` 0 means
    /// "as many as its highest connected port".
    pub fn add_node(
        &mut self,
        id: NodeId,
        kind: NodeKind,
        num_ports: Port,
    ) -> Result<(), TopologyError> {
        let node = self.nodes.entry(id).or_insert_with(|| Node {
            id,
            kind,
            num_ports: 0,
            links: Vec::new(),
            guid: None,
            description: None,
        });
        if node.kind != kind {
            return Err(TopologyError::KindClash(id));
        }
        if num_ports != 0 {
            if let Some(l) = node.links.iter().find(|l| l.port > num_ports) {
                return Err(TopologyError::AboveRadix {
                    node: id,
                    port: l.port,
                    num_ports,
                });
            }
            node.num_ports = num_ports;
        }
        Ok(())
    }

    /// Records a node's GUID and description.
    pub fn describe(&mut self, id: NodeId, guid: Option<u64>, description: Option<String>) {
        if let Some(n) = self.nodes.get_mut(&id) {
            n.guid = guid.or(n.guid);
            n.description = description.or(n.description.take());
        }
    }

    /// Whether the node was declared, and as what.
    pub fn kind(&self, id: NodeId) -> Option<NodeKind> {
        self.nodes.get(&id).map(|n| n.kind)
    }

    /// The link already recorded on a port, if any.
    pub fn link_at(&self, id: NodeId, port: Port) -> Option<Link> {
        self.nodes.get(&id).and_then(|n| n.link(port).copied())
    }

    /// Links `a.pa` to `b.pb`; both nodes must have been declared.
    pub fn link(&mut self, a: NodeId, pa: Port, b: NodeId, pb: Port) -> Result<(), TopologyError> {
        if a == b {
            return Err(TopologyError::SelfLink(a));
        }
        let ka = self.kind(a).ok_or(TopologyError::UnknownNode(a))?;
        let kb = self.kind(b).ok_or(TopologyError::UnknownNode(b))?;
        if ka == NodeKind::Host && kb == NodeKind::Host {
            return Err(TopologyError::HostToHost(a, b));
        }
        for (n, k, p) in [(a, ka, pa), (b, kb, pb)] {
            let node = &self.nodes[&n];
            if k == NodeKind::Host && !node.links.is_empty() {
                return Err(TopologyError::HostTwice(n));
            }
            if node.link(p).is_some() {
                return Err(TopologyError::PortInUse { node: n, port: p });
            }
            if k == NodeKind::Switch && node.num_ports != 0 && p > node.num_ports {
                return Err(TopologyError::AboveRadix {
                    node: n,
                    port: p,
                    num_ports: node.num_ports,
                });
            }
        }
        for (n, p, peer, peer_port) in [(a, pa, b, pb), (b, pb, a, pa)] {
            let node = self.nodes.get_mut(&n).expect("declared above");
            node.links.push(Link {
                port: p,
                peer,
                peer_port,
            });
            node.links.sort_by_key(|l| l.port);
        }
        Ok(())
    }

    /// Finishes: every switch without a declared radix gets `default_ports`
    /// ports, or its highest connected port if that is larger.
    pub fn build(mut self, default_ports: Port) -> Result<Topology, TopologyError> {
        for n in self.nodes.values_mut() {
            let highest = n.links.iter().map(|l| l.port).max().unwrap_or(1);
            if n.num_ports == 0 {
                n.num_ports = match n.kind {
                    NodeKind::Switch => highest.max(default_ports),
                    NodeKind::Host => highest,
                };
            }
        }
        Topology::from_nodes(self.nodes.into_values().collect())
    }
}

/// A subnet: switches and host ports with their links, in node-number order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Topology {
    nodes: Vec<Node>,
    #[serde(skip)]
    index: BTreeMap<NodeId, usize>,
}

impl Topology {
    fn from_nodes(mut nodes: Vec<Node>) -> Result<Self, TopologyError> {
        nodes.sort_by_key(|n| n.id);
        if !nodes.iter().any(Node::is_switch) {
            return Err(TopologyError::NoSwitch);
        }
        let index = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
        Ok(Self { nodes, index })
    }

    /// All nodes in number order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no nodes (never true for a built topology).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The dense index of a node number.
    pub fn index_of(&self, id: NodeId) -> Option<usize> {
        self.index.get(&id).copied()
    }

    /// The node with this number.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.index_of(id).map(|i| &self.nodes[i])
    }

    /// The node at a dense index.
    pub fn at(&self, i: usize) -> &Node {
        &self.nodes[i]
    }

    /// The node a link leads to, as a dense index.
    pub fn peer_index(&self, link: &Link) -> usize {
        self.index[&link.peer]
    }

    /// The number of switches.
    pub fn switch_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.is_switch()).count()
    }

    /// Every link once, as (lower node, its port, higher node, its port).
    pub fn links(&self) -> Vec<(NodeId, Port, NodeId, Port)> {
        let mut out = Vec::new();
        for n in &self.nodes {
            for l in &n.links {
                if (n.id, l.port) < (l.peer, l.peer_port) {
                    out.push((n.id, l.port, l.peer, l.peer_port));
                }
            }
        }
        out
    }

    /// A switch named on the command line, checked.
    pub fn switch_index(&self, id: NodeId) -> Result<usize, TopologyError> {
        let i = self.index_of(id).ok_or(TopologyError::UnknownNode(id))?;
        if !self.nodes[i].is_switch() {
            return Err(TopologyError::NotASwitch(id));
        }
        Ok(i)
    }

    /// Breadth-first hop counts from `from` (None where unreachable).
    pub fn hops_from(&self, from: usize) -> Vec<Option<u32>> {
        let mut level = vec![None; self.nodes.len()];
        let mut queue = std::collections::VecDeque::from([from]);
        level[from] = Some(0);
        while let Some(i) = queue.pop_front() {
            let here = level[i].expect("queued nodes have a level");
            // Only switches forward: a host is a leaf even when it is the start.
            if i != from && !self.nodes[i].is_switch() {
                continue;
            }
            for l in &self.nodes[i].links {
                let j = self.peer_index(l);
                if level[j].is_none() {
                    level[j] = Some(here + 1);
                    queue.push_back(j);
                }
            }
        }
        level
    }

    /// Fails unless every node is reachable from `root`.
    pub fn check_connected(&self, root: usize) -> Result<(), TopologyError> {
        let level = self.hops_from(root);
        let lost: Vec<NodeId> = (0..self.nodes.len())
            .filter(|&i| level[i].is_none())
            .map(|i| self.nodes[i].id)
            .collect();
        if lost.is_empty() {
            Ok(())
        } else {
            Err(TopologyError::Disconnected {
                root: self.nodes[root].id,
                nodes: lost,
            })
        }
    }

    /// The topology without some nodes and their links; hosts left with no
    /// link go too (a host is only reachable through its switch).
    pub fn without(&self, gone: &[NodeId]) -> Result<Topology, TopologyError> {
        for &g in gone {
            self.index_of(g).ok_or(TopologyError::UnknownNode(g))?;
        }
        let keep = |id: NodeId| !gone.contains(&id);
        let nodes = self
            .nodes
            .iter()
            .filter(|n| keep(n.id))
            .map(|n| Node {
                links: n.links.iter().filter(|l| keep(l.peer)).copied().collect(),
                ..n.clone()
            })
            .filter(|n| n.is_switch() || !n.links.is_empty())
            .collect();
        Topology::from_nodes(nodes)
    }

    /// The part of the topology reachable from `from` (what a subnet manager
    /// there can see).
    pub fn component(&self, from: NodeId) -> Result<Topology, TopologyError> {
        let start = self
            .index_of(from)
            .ok_or(TopologyError::UnknownNode(from))?;
        let level = self.hops_from(start);
        let nodes = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| level[*i].is_some())
            .map(|(_, n)| n.clone())
            .collect();
        Topology::from_nodes(nodes)
    }
}

impl fmt::Display for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NodeKind::Switch => "switch",
            NodeKind::Host => "host",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(b: &mut TopologyBuilder, id: NodeId) {
        b.add_node(id, NodeKind::Switch, 0).unwrap();
    }

    #[test]
    fn builder_rejects_bad_links() {
        let mut b = TopologyBuilder::new();
        sw(&mut b, 1);
        sw(&mut b, 2);
        b.add_node(3, NodeKind::Host, 0).unwrap();
        b.add_node(4, NodeKind::Host, 0).unwrap();
        b.link(1, 1, 2, 1).unwrap();
        assert_eq!(
            b.link(1, 1, 2, 2),
            Err(TopologyError::PortInUse { node: 1, port: 1 })
        );
        assert_eq!(b.link(1, 2, 1, 3), Err(TopologyError::SelfLink(1)));
        assert_eq!(b.link(3, 1, 4, 1), Err(TopologyError::HostToHost(3, 4)));
        b.link(1, 2, 3, 1).unwrap();
        assert_eq!(b.link(2, 2, 3, 1), Err(TopologyError::HostTwice(3)));
        assert_eq!(
            b.add_node(3, NodeKind::Switch, 0),
            Err(TopologyError::KindClash(3))
        );
        assert_eq!(
            TopologyBuilder::node_id(0),
            Err(TopologyError::BadNodeId(0))
        );
        assert_eq!(
            TopologyBuilder::port(1, 255),
            Err(TopologyError::BadPort { node: 1, port: 255 })
        );
    }

    #[test]
    fn radix_defaults_to_the_larger_of_default_and_highest_port() {
        let mut b = TopologyBuilder::new();
        sw(&mut b, 1);
        sw(&mut b, 2);
        b.link(1, 6, 2, 1).unwrap();
        let t = b.build(4).unwrap();
        assert_eq!(t.node(1).unwrap().num_ports, 6);
        assert_eq!(t.node(2).unwrap().num_ports, 4);
    }

    #[test]
    fn disconnected_nodes_are_named() {
        let mut b = TopologyBuilder::new();
        for id in [1, 2, 3] {
            sw(&mut b, id);
        }
        b.link(1, 1, 2, 1).unwrap();
        let t = b.build(4).unwrap();
        let err = t.check_connected(0).unwrap_err();
        assert_eq!(
            err,
            TopologyError::Disconnected {
                root: 1,
                nodes: vec![3]
            }
        );
        assert_eq!(t.component(1).unwrap().len(), 2);
    }
}
