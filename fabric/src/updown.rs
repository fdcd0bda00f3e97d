//! The up*/down* orientation of a topology from a root switch.
//!
//! Every link points up toward the end nearer the root: the end with the lower
//! hop count from the root, or, between ends at the same hop count, the one
//! with the lower node number. That is a strict total order on nodes, so the
//! directed graph is acyclic and the root is its only sink (every other node
//! has a neighbour one hop nearer). A legal route never takes an up link after
//! a down link.

use serde::Serialize;

use crate::topology::{NodeId, Port, Topology, TopologyError};

/// Which way a hop goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Toward the root.
    Up,
    /// Away from the root.
    Down,
}

/// A node with two or more up links: where down→up turns must be forbidden.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CutNode {
    /// The node.
    pub node: NodeId,
    /// Its ports on up links, ascending.
    pub up_ports: Vec<Port>,
}

/// The orientation of every link of a topology.
#[derive(Debug, Clone)]
pub struct UpDown {
    root: usize,
    level: Vec<u32>,
    id: Vec<NodeId>,
}

impl UpDown {
    /// Orients `t` from the switch `root`; every node must be reachable.
    pub fn new(t: &Topology, root: NodeId) -> Result<Self, TopologyError> {
        let r = t.switch_index(root)?;
        t.check_connected(r)?;
        let level = t
            .hops_from(r)
            .into_iter()
            .map(|l| l.expect("connected: every node has a level"))
            .collect();
        Ok(Self {
            root: r,
            level,
            id: t.nodes().iter().map(|n| n.id).collect(),
        })
    }

    /// The root's dense index.
    pub fn root(&self) -> usize {
        self.root
    }

    /// Hop count from the root.
    pub fn level(&self, i: usize) -> u32 {
        self.level[i]
    }

    /// The order that decides direction: lower is nearer the root.
    pub fn key(&self, i: usize) -> (u32, NodeId) {
        (self.level[i], self.id[i])
    }

    /// The direction of the hop from `from` to its neighbour `to`.
    pub fn dir(&self, from: usize, to: usize) -> Dir {
        if self.key(to) < self.key(from) {
            Dir::Up
        } else {
            Dir::Down
        }
    }

    /// Whether the link between two neighbours joins nodes at the same level
    /// (its direction is decided by node number alone).
    pub fn is_lateral(&self, a: usize, b: usize) -> bool {
        self.level[a] == self.level[b]
    }

    /// The ports of node `i` whose links go up, ascending.
    pub fn up_ports(&self, t: &Topology, i: usize) -> Vec<Port> {
        t.at(i)
            .links
            .iter()
            .filter(|l| self.dir(i, t.peer_index(l)) == Dir::Up)
            .map(|l| l.port)
            .collect()
    }

    /// The nodes with two or more up links, in node order.
    pub fn cut_nodes(&self, t: &Topology) -> Vec<CutNode> {
        (0..t.len())
            .filter_map(|i| {
                let up_ports = self.up_ports(t, i);
                (up_ports.len() >= 2).then(|| CutNode {
                    node: t.at(i).id,
                    up_ports,
                })
            })
            .collect()
    }

    /// Nodes in increasing key order: every node after all its up neighbours.
    pub fn top_down_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.level.len()).collect();
        order.sort_by_key(|&i| self.key(i));
        order
    }
}

/// Whether a sequence of hop directions is a legal up*/down* route.
pub fn is_legal(dirs: impl IntoIterator<Item = Dir>) -> bool {
    let mut gone_down = false;
    for d in dirs {
        match d {
            Dir::Down => gone_down = true,
            Dir::Up if gone_down => return false,
            Dir::Up => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    #[test]
    fn same_level_links_point_to_the_lower_number() {
        // A triangle of switches: 2 and 3 are both one hop from 1.
        let t = parse("1.1 2.1\n1.2 3.1\n2.2 3.2\n", 4).unwrap();
        let ud = UpDown::new(&t, 1).unwrap();
        let (i2, i3) = (t.index_of(2).unwrap(), t.index_of(3).unwrap());
        assert!(ud.is_lateral(i2, i3));
        assert_eq!(ud.dir(i3, i2), Dir::Up);
        assert_eq!(ud.dir(i2, i3), Dir::Down);
        let cut = ud.cut_nodes(&t);
        assert_eq!(
            cut,
            vec![CutNode {
                node: 3,
                up_ports: vec![1, 2]
            }]
        );
    }

    #[test]
    fn legality_is_no_up_after_down() {
        use Dir::*;
        assert!(is_legal([Up, Up, Down, Down]));
        assert!(is_legal([Down]));
        assert!(is_legal([]));
        assert!(!is_legal([Up, Down, Up]));
    }

    #[test]
    fn root_must_be_a_connected_switch() {
        let t = parse("1.1 2\n3.1 4\n", 4).unwrap();
        assert_eq!(
            UpDown::new(&t, 2).unwrap_err(),
            TopologyError::NotASwitch(2)
        );
        assert_eq!(
            UpDown::new(&t, 9).unwrap_err(),
            TopologyError::UnknownNode(9)
        );
        assert!(matches!(
            UpDown::new(&t, 1).unwrap_err(),
            TopologyError::Disconnected { .. }
        ));
    }
}
