//! A deadlock-free way to install new tables after a topology change, without
//! taking ports down.
//!
//! While tables are replaced one switch (or one entry) at a time, a packet may
//! be forwarded by old entries at some switches and new ones at others. The
//! mix can close a dependency cycle through a turn that the new orientation
//! forbids but the old one allowed (a "ghost" dependency). Every turn the new
//! orientation forbids is a down→up turn, which enters a node by one up link
//! and leaves by another, so it happens only at nodes with two or more up
//! links: the new cut nodes. Before sending any table, the plan maps every
//! service level to VL15 on each (input, output) pair of distinct up ports
//! there, one SubnSet(SLtoVLMappingTable) per pair: data packets on VL15 are
//! dropped, so those turns are never taken. Every turn left is legal in the new
//! orientation, whichever tables a packet meets, so no cycle can form; the
//! tables can then be sent in any order, and the blocks need no undoing since
//! the new tables never use those turns.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::routing::{all_routes, Fera, Pira, Tables};
use crate::topology::{NodeId, Port, Topology};
use crate::updown::{CutNode, Dir, UpDown};
use crate::Error;

/// One (input, output) port pair mapped to VL15 during the update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct BlockedTurn {
    /// The cut node.
    pub node: NodeId,
    /// Input port (an up link: the packet was going down).
    pub input: Port,
    /// Output port (another up link: the packet would go up).
    pub output: Port,
    /// Whether some old route takes this turn (it must be blocked for sure).
    pub used_by_old_routes: bool,
}

/// A cut node of the new orientation and whether it was one before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewCutNode {
    /// The node and its up ports.
    #[serde(flatten)]
    pub cut: CutNode,
    /// Whether the old orientation had it as a cut node with the same up ports.
    pub unchanged: bool,
}

/// A link whose direction differs between the two orientations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FlippedLink {
    /// The end that is now the upper one.
    pub now_up: NodeId,
    /// Its port.
    pub now_up_port: Port,
    /// The end that is now the lower one.
    pub now_down: NodeId,
    /// Its port.
    pub now_down_port: Port,
}

/// Table entries to send for one algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TableDelta {
    /// Entries in the new tables.
    pub entries: usize,
    /// Entries that differ from what the switch holds now (new switches and
    /// new destinations included).
    pub changed: usize,
}

/// The plan for installing the tables of a changed topology.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpdatePlan {
    /// The root switch.
    pub root: NodeId,
    /// Cut nodes of the new orientation.
    pub cut_nodes: Vec<NewCutNode>,
    /// Cut nodes of the old orientation that are no longer cut nodes.
    pub former_cut_nodes: Vec<NodeId>,
    /// Turns to map to VL15 before sending tables, one SMP each.
    pub blocked: Vec<BlockedTurn>,
    /// Links that changed direction.
    pub flipped_links: Vec<FlippedLink>,
    /// FERa tables to send.
    pub fera: TableDelta,
    /// PIRa tables (the provisional routes of the thesis).
    pub pira: TableDelta,
    /// Old-route turns that the new orientation forbids (each is blocked).
    pub ghost_turns: usize,
}

/// Whether a port connects the same peer in both topologies.
fn same_link(old: &Topology, new: &Topology, node: NodeId, port: Port) -> bool {
    match (
        old.node(node).and_then(|n| n.link(port)),
        new.node(node).and_then(|n| n.link(port)),
    ) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Plans the update from `old` to `new`, both oriented from `root`.
pub fn plan(old: &Topology, new: &Topology, root: NodeId) -> Result<UpdatePlan, Error> {
    let old_ud = UpDown::new(old, root)?;
    let new_ud = UpDown::new(new, root)?;
    let old_cuts = old_ud.cut_nodes(old);
    let new_cuts = new_ud.cut_nodes(new);

    // Turns the old routes take: only those whose two links survive matter.
    let old_fera = Fera::new(old, &old_ud);
    let mut used: BTreeSet<(NodeId, Port, Port)> = BTreeSet::new();
    for r in all_routes(old, &old_ud, &old_fera)? {
        for w in r.hops.windows(2) {
            used.insert((w[1].node, w[0].next_port, w[1].port));
        }
    }

    let mut blocked = Vec::new();
    for c in &new_cuts {
        for &i in &c.up_ports {
            for &o in &c.up_ports {
                if i != o {
                    blocked.push(BlockedTurn {
                        node: c.node,
                        input: i,
                        output: o,
                        used_by_old_routes: used.contains(&(c.node, i, o))
                            && same_link(old, new, c.node, i)
                            && same_link(old, new, c.node, o),
                    });
                }
            }
        }
    }

    // Ghost turns: old turns through surviving links that the new orientation
    // forbids (in on an up link, out on an up link).
    let mut ghost_turns = 0;
    for &(node, i, o) in &used {
        let Some(ni) = new.index_of(node) else {
            continue;
        };
        if !same_link(old, new, node, i) || !same_link(old, new, node, o) {
            continue;
        }
        let up = |p: Port| {
            let l = new.at(ni).link(p).expect("surviving link");
            new_ud.dir(ni, new.peer_index(l)) == Dir::Up
        };
        if up(i) && up(o) {
            ghost_turns += 1;
            if !blocked
                .iter()
                .any(|b| b.node == node && b.input == i && b.output == o)
            {
                return Err(Error::Unsupported(format!(
                    "turn {node}:{i}->{o} is forbidden but not blocked (a bug)"
                )));
            }
        }
    }

    let cut_nodes = new_cuts
        .iter()
        .map(|c| NewCutNode {
            cut: c.clone(),
            unchanged: old_cuts.contains(c),
        })
        .collect();
    let former_cut_nodes = old_cuts
        .iter()
        .filter(|c| !new_cuts.iter().any(|n| n.node == c.node))
        .map(|c| c.node)
        .collect();

    let mut flipped_links = Vec::new();
    for (a, pa, b, pb) in new.links() {
        if !same_link(old, new, a, pa) {
            continue;
        }
        let (oa, ob) = (
            old.index_of(a).expect("same link"),
            old.index_of(b).expect("same link"),
        );
        let (na, nb) = (
            new.index_of(a).expect("new node"),
            new.index_of(b).expect("new node"),
        );
        let was = old_ud.dir(oa, ob);
        let now = new_ud.dir(na, nb);
        if was != now {
            let (u, pu, d, pd) = if now == Dir::Up {
                (b, pb, a, pa)
            } else {
                (a, pa, b, pb)
            };
            flipped_links.push(FlippedLink {
                now_up: u,
                now_up_port: pu,
                now_down: d,
                now_down_port: pd,
            });
        }
    }

    let new_fera = Fera::new(new, &new_ud);
    let old_pira = Pira::new(old, &old_ud);
    let new_pira = Pira::new(new, &new_ud);
    Ok(UpdatePlan {
        root,
        cut_nodes,
        former_cut_nodes,
        blocked,
        flipped_links,
        fera: delta(old, &old_fera, new, &new_fera, new_fera.entries()),
        pira: delta_pira(old, &old_pira, new, &new_pira),
        ghost_turns,
    })
}

/// FERa: entries whose port differs from the old table of the same switch.
fn delta(
    old: &Topology,
    ot: &dyn Tables,
    new: &Topology,
    nt: &dyn Tables,
    entries: usize,
) -> TableDelta {
    let mut changed = 0;
    for (s, sw) in new
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.is_switch())
    {
        for (d, dn) in new.nodes().iter().enumerate() {
            let before = match (old.index_of(sw.id), old.index_of(dn.id)) {
                (Some(os), Some(od)) if old.at(os).is_switch() => ot.port(os, od),
                _ => None,
            };
            if before != nt.port(s, d) {
                changed += 1;
            }
        }
    }
    TableDelta { entries, changed }
}

/// PIRa: explicit entries and default ports that differ.
fn delta_pira(old: &Topology, op: &Pira, new: &Topology, np: &Pira) -> TableDelta {
    let mut changed = 0;
    for (s, sw) in new
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.is_switch())
    {
        let os = old.index_of(sw.id).filter(|&i| old.at(i).is_switch());
        if np.default_port(s) != os.and_then(|os| op.default_port(os)) {
            changed += 1;
        }
        for (&d, &p) in np.explicit(s) {
            let before = os.and_then(|os| {
                old.index_of(new.at(d).id)
                    .and_then(|od| op.explicit(os).get(&od).copied())
            });
            if before != Some(p) {
                changed += 1;
            }
        }
    }
    TableDelta {
        entries: np.entries() + np.defaults(),
        changed,
    }
}
