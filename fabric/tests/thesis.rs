//! The thesis's worked examples, reproduced from the topology files in
//! `tests/fabric/` (Bermúdez 2004: Tables 12–15, 18–20, Figures 67–69, 76).

use std::collections::BTreeMap;

use rcud_fabric::discovery::{discover, full_discovery, Purpose};
use rcud_fabric::generate::growth_row;
use rcud_fabric::routing::{all_routes, follow, Dependencies, Lengths};
use rcud_fabric::update::plan;
use rcud_fabric::{parse, CutNode, Dir, Fera, NodeId, Pira, Tables, Topology, UpDown};

fn load(name: &str) -> Topology {
    let path = format!("{}/../tests/fabric/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse(&text, 4).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn idx(t: &Topology, id: NodeId) -> usize {
    t.index_of(id).unwrap()
}

/// The thesis's Table 18, destination by destination: `switch:port/length`.
const FERA_TABLE: &str = "
1:  1:0/0  2:1/1  3:1/1  5:2/2  6:1/2  8:1/2  9:1/2 10:1/3
2:  2:0/0  1:1/1  5:2/1  6:1/1  3:1/2 10:1/2  8:1/3  9:1/3
3:  3:0/0  1:2/1  8:1/1  9:1/1  6:2/1  2:1/2 10:2/2  5:2/3
4:  1:3/1  2:1/2  3:1/2  5:2/3  6:1/3  8:1/3  9:1/3 10:1/4
5:  5:0/0 10:1/1  2:2/1  1:1/2  6:1/2  3:1/3  8:1/4  9:1/4
6:  6:0/0  2:3/1  3:4/1 10:2/1  1:1/2  5:2/2  8:1/2  9:1/2
7:  2:4/1  1:1/2  5:2/2  6:1/2  3:1/3 10:1/3  8:1/4  9:1/4
8:  8:0/0  3:2/1  1:2/2  9:1/2  6:2/2  2:1/3 10:2/3  5:2/4
9:  9:0/0  3:3/1  1:2/2  8:1/2  6:2/2  2:1/3 10:2/3  5:2/4
10: 10:0/0 5:1/1  6:3/1  2:2/2  3:4/2  1:1/3  8:1/3  9:1/3
11: 5:3/1 10:1/2  2:2/2  1:1/3  6:1/3  3:1/4  8:1/5  9:1/5
12: 6:4/1  2:3/2  3:4/2 10:2/2  1:1/3  5:2/3  8:1/3  9:1/3
13: 8:2/1  3:2/2  1:2/3  9:1/3  6:2/3  2:1/4 10:2/4  5:2/5
14: 9:2/1  3:3/2  1:2/3  8:1/3  6:2/3  2:1/4 10:2/4  5:2/5
15: 10:3/1 5:1/2  6:3/2  2:2/3  3:4/3  1:1/4  8:1/4  9:1/4
";

/// The thesis's Table 19 regrouped by switch: `destination:port`, and the
/// default port after `|`.
const PIRA_TABLE: &str = "
1:  1:0 2:1 3:2 4:3 5:1 6:2 7:1 8:2 9:2 10:2 11:1 12:2 13:2 14:2 15:2 |
2:  2:0 5:2 6:3 7:4 10:3 11:2 12:3 15:3 | 1
3:  3:0 6:4 8:2 9:3 10:4 12:4 13:2 14:3 15:4 | 1
5:  5:0 10:1 11:3 15:1 | 2
6:  6:0 2:1 7:1 10:3 12:4 15:3 | 2
8:  8:0 13:2 | 1
9:  9:0 14:2 | 1
10: 10:0 5:1 11:1 15:3 | 2
";

#[test]
fn fera_reproduces_table_18_entry_for_entry() {
    let t = load("thesis8.links");
    let ud = UpDown::new(&t, 1).unwrap();
    let fera = Fera::new(&t, &ud);
    assert_eq!(fera.entries(), 120, "8 switches x 15 destinations");
    let mut checked = 0;
    for line in FERA_TABLE.lines().filter(|l| !l.trim().is_empty()) {
        let (d, rest) = line.split_once(':').unwrap();
        let d: NodeId = d.trim().parse().unwrap();
        for e in rest.split_whitespace() {
            let (s, pd) = e.split_once(':').unwrap();
            let (p, len) = pd.split_once('/').unwrap();
            let (s, d) = (idx(&t, s.parse().unwrap()), idx(&t, d));
            assert_eq!(
                fera.port(s, d),
                Some(p.parse().unwrap()),
                "switch {} to {}",
                t.at(s).id,
                t.at(d).id
            );
            assert_eq!(
                fera.dist(s, d),
                len.parse::<u32>().unwrap(),
                "length {} to {}",
                t.at(s).id,
                t.at(d).id
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 120);
}

#[test]
fn pira_reproduces_table_19_with_its_parents() {
    let t = load("thesis8.links");
    let ud = UpDown::new(&t, 1).unwrap();
    let pira = Pira::new(&t, &ud);
    assert_eq!(pira.entries(), 50);
    assert_eq!(pira.defaults(), 7);
    let parents: Vec<(NodeId, NodeId)> = t
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.is_switch())
        .filter_map(|(i, n)| pira.parent(i).map(|p| (n.id, t.at(p).id)))
        .collect();
    assert_eq!(
        parents,
        [(2, 1), (3, 1), (5, 2), (6, 3), (8, 3), (9, 3), (10, 6)]
    );
    for line in PIRA_TABLE.lines().filter(|l| !l.trim().is_empty()) {
        let (s, rest) = line.split_once(':').unwrap();
        let s = idx(&t, s.trim().parse().unwrap());
        let (entries, default) = rest.split_once('|').unwrap();
        let want: BTreeMap<usize, u8> = entries
            .split_whitespace()
            .map(|e| {
                let (d, p) = e.split_once(':').unwrap();
                (idx(&t, d.parse().unwrap()), p.parse().unwrap())
            })
            .collect();
        assert_eq!(pira.explicit(s), &want, "switch {}", t.at(s).id);
        assert_eq!(
            pira.default_port(s),
            default.trim().parse().ok(),
            "default of {}",
            t.at(s).id
        );
    }
}

#[test]
fn cut_nodes_are_6_and_10_with_up_ports_1_and_2() {
    let t = load("thesis8.links");
    let ud = UpDown::new(&t, 1).unwrap();
    assert_eq!(
        ud.cut_nodes(&t),
        [
            CutNode {
                node: 6,
                up_ports: vec![1, 2]
            },
            CutNode {
                node: 10,
                up_ports: vec![1, 2]
            }
        ]
    );
}

#[test]
fn the_thesis_legal_and_illegal_routes() {
    // "7 -> 2 -> 1 <- 3 <- 9 <- 14" is legal; through 6 down then up to 3 is not.
    let t = load("thesis8.links");
    let ud = UpDown::new(&t, 1).unwrap();
    let fera = Fera::new(&t, &ud);
    let r = follow(&t, &ud, &fera, idx(&t, 7), idx(&t, 14)).unwrap();
    let path: Vec<NodeId> = std::iter::once(r.from)
        .chain(r.hops.iter().map(|h| h.next))
        .collect();
    assert_eq!(path, [7, 2, 1, 3, 9, 14]);
    assert_eq!(
        r.hops.iter().map(|h| h.dir).collect::<Vec<_>>(),
        [Dir::Up, Dir::Up, Dir::Down, Dir::Down, Dir::Down]
    );
    assert!(r.is_legal());
    let (i2, i6, i3) = (idx(&t, 2), idx(&t, 6), idx(&t, 3));
    let dirs = [
        Dir::Up,
        ud.dir(i2, i6),
        ud.dir(i6, i3),
        Dir::Down,
        Dir::Down,
    ];
    assert!(!rcud_fabric::updown::is_legal(dirs));
}

#[test]
fn both_tables_are_deadlock_free_and_pira_routes_are_a_little_longer() {
    let t = load("thesis8.links");
    let ud = UpDown::new(&t, 1).unwrap();
    let fera = Fera::new(&t, &ud);
    let pira = Pira::new(&t, &ud);
    let mut lengths = Vec::new();
    for tables in [&fera as &dyn Tables, &pira] {
        let routes = all_routes(&t, &ud, tables).unwrap();
        assert_eq!(routes.len(), 15 * 14);
        assert!(routes.iter().all(|r| r.is_legal()));
        let mut deps = Dependencies::new();
        routes.iter().for_each(|r| deps.add_route(r));
        assert_eq!(deps.find_cycle(), None);
        lengths.push(Lengths::of(&routes));
    }
    assert!(lengths[1].total_hops > lengths[0].total_hops, "{lengths:?}");
}

#[test]
fn ibnetdiscover_and_links_files_are_the_same_network() {
    let a = load("thesis8.links");
    let b = load("thesis8.ibnetdiscover");
    assert_eq!(a.links(), b.links());
    assert_eq!(b.node(3).unwrap().description.as_deref(), Some("leaf-3"));
}

#[test]
fn full_discovery_of_the_whole_network_is_97_smps() {
    // Table 12 and its text: the subnet manager on host 4 (the thesis's node 1).
    let log = full_discovery(&load("thesis8.links"), 4).unwrap();
    assert_eq!(log.total, 97);
    assert_eq!(
        log.by_purpose[&Purpose::Explore],
        1 + 1 + 25,
        "self, own port, every switch port"
    );
    assert_eq!(log.by_purpose[&Purpose::AssignLid], 15);
}

#[test]
fn a_switch_and_two_hosts_appear_35_smps_against_123() {
    let old = load("thesis8.links");
    let new = load("thesis8-switch-added.links");
    let r = discover(&old, &new, 1, 4).unwrap();
    assert_eq!(r.change.added, [16, 17, 18]);
    assert_eq!(r.partial.total, 35);
    let count = |p| r.partial.by_purpose.get(&p).copied().unwrap_or(0);
    // Table 14: 8 sweeps; switches 8 and 9 each cleared and read port by
    // port; two NodeInfos reach the new switch, one reads it (SwitchInfo,
    // PortInfo 0-4, LID), four look behind its ports, two hosts read and
    // numbered.
    assert_eq!(count(Purpose::Sweep), 8);
    assert_eq!(count(Purpose::ClearFlag), 2);
    assert_eq!(count(Purpose::ReadPort), 8);
    assert_eq!(count(Purpose::Explore), 2 + 4);
    assert_eq!(count(Purpose::ReadDevice), 6 + 2);
    assert_eq!(count(Purpose::AssignLid), 3);
    assert_eq!(count(Purpose::Probe), 0);
    assert_eq!(r.full.total, 123);
    assert_eq!(r.forgotten, Vec::<NodeId>::new());
    assert_eq!(r.links_after, new.links());
}

#[test]
fn a_switch_disappears_26_smps() {
    let old = load("thesis8.links");
    let new = load("thesis8-switch2-removed.links");
    let r = discover(&old, &new, 1, 4).unwrap();
    assert_eq!(r.change.removed, [2, 7]);
    assert_eq!(r.partial.total, 26);
    let probes: Vec<Option<NodeId>> = r
        .partial
        .smps
        .iter()
        .filter(|s| s.purpose == Purpose::Probe)
        .map(|s| s.answered_by)
        .collect();
    // Table 15: switches 6, 10 and 5 are probed over directed routes, in
    // that order, and 6 and 5 report a changed port.
    assert_eq!(probes, [Some(6), Some(10), Some(5)]);
    assert_eq!(r.partial.by_purpose[&Purpose::ClearFlag], 3);
    assert_eq!(r.partial.by_purpose[&Purpose::ReadPort], 12);
    let silent: Vec<NodeId> = r
        .partial
        .smps
        .iter()
        .filter(|s| s.purpose == Purpose::Sweep && s.answered_by.is_none())
        .map(|s| s.route.lid.unwrap())
        .collect();
    assert_eq!(silent, [2, 5, 6, 10]);
    assert_eq!(r.forgotten, [2, 7]);
    assert_eq!(r.links_after, new.links());
    assert!(r.full.total > r.partial.total);
}

#[test]
fn one_switch_down_averages_table_17() {
    // Table 17, 8 switches, partial discovery after one switch goes down:
    // 18.57 SMPs on average over every switch but the subnet manager's, with
    // a standard deviation of 4.44. The same model on this network gives the
    // same figures, which says Table 17's network is this one.
    let t = load("thesis8.links");
    let counts: Vec<f64> = t
        .nodes()
        .iter()
        .filter(|n| n.is_switch() && n.id != 1)
        .map(|n| {
            let new = t.without(&[n.id]).unwrap().component(1).unwrap();
            discover(&t, &new, 1, 4).unwrap().partial.total as f64
        })
        .collect();
    assert_eq!(counts.len(), 7);
    assert_eq!(counts[0], 26.0, "switch 2: Table 15");
    let mean = counts.iter().sum::<f64>() / counts.len() as f64;
    let sd = (counts.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / counts.len() as f64).sqrt();
    assert_eq!(format!("{mean:.2} {sd:.2}"), "18.57 4.44");
}

#[test]
fn update_blocks_both_turns_at_each_cut_node() {
    let t = load("thesis8.links");
    let p = plan(&t, &t, 1).unwrap();
    let turns: Vec<(NodeId, u8, u8)> = p
        .blocked
        .iter()
        .map(|b| (b.node, b.input, b.output))
        .collect();
    assert_eq!(turns, [(6, 1, 2), (6, 2, 1), (10, 1, 2), (10, 2, 1)]);
    assert!(p.cut_nodes.iter().all(|c| c.unchanged));
    assert_eq!(p.fera.changed, 0);
    assert_eq!(p.ghost_turns, 0);
}

#[test]
fn update_after_switch_2_goes_down_leaves_no_cut_node() {
    // Without switch 2, 6 hangs from 3 alone and 5 ends up below 10: the link
    // 5-10 turns round, 6 and 10 stop being cut nodes, nothing is blocked.
    let old = load("thesis8.links");
    let new = load("thesis8-switch2-removed.links");
    let p = plan(&old, &new, 1).unwrap();
    assert!(p.cut_nodes.is_empty());
    assert_eq!(p.former_cut_nodes, [6, 10]);
    assert!(p.blocked.is_empty());
    let flipped: Vec<(NodeId, NodeId)> = p
        .flipped_links
        .iter()
        .map(|l| (l.now_down, l.now_up))
        .collect();
    assert_eq!(flipped, [(5, 10)]);
    assert_eq!(p.fera.entries, 7 * 13);
    assert!(p.fera.changed > 0);
}

#[test]
fn update_after_a_switch_appears_blocks_turns_at_the_new_cut_node() {
    // Switch 16 comes up below 8 and 9: a third cut node, up ports 2 and 4.
    let old = load("thesis8.links");
    let new = load("thesis8-switch-added.links");
    let p = plan(&old, &new, 1).unwrap();
    let cuts: Vec<(NodeId, Vec<u8>, bool)> = p
        .cut_nodes
        .iter()
        .map(|c| (c.cut.node, c.cut.up_ports.clone(), c.unchanged))
        .collect();
    assert_eq!(
        cuts,
        [
            (6, vec![1, 2], true),
            (10, vec![1, 2], true),
            (16, vec![2, 4], false)
        ]
    );
    assert_eq!(p.blocked.len(), 6);
}

#[test]
fn update_when_a_cut_node_moves_blocks_the_turns_old_routes_took() {
    // The thesis's Section 7.1.1 story: a link change moves a cycle's cut
    // node. With 1-2 down, 2 hangs below 6 and 5 below both 2 and 10: 5 is
    // the cycle's cut node now, and the turns between its links to 10 and 2,
    // which old routes took going up, must be blocked before any table moves.
    let old = load("thesis8.links");
    let new = load("thesis8-link1-2-down.links");
    assert_eq!(new.links().len(), old.links().len() - 1);
    let p = plan(&old, &new, 1).unwrap();
    let turns: Vec<(NodeId, u8, u8, bool)> = p
        .blocked
        .iter()
        .map(|b| (b.node, b.input, b.output, b.used_by_old_routes))
        .collect();
    assert_eq!(turns, [(5, 1, 2, true), (5, 2, 1, true)]);
    assert_eq!(p.former_cut_nodes, [6, 10]);
    assert!(p.ghost_turns > 0);
    assert!(p.blocked.iter().any(|b| b.used_by_old_routes));
    for b in p.blocked.iter().filter(|b| b.used_by_old_routes) {
        assert!(
            p.cut_nodes
                .iter()
                .any(|c| c.cut.node == b.node && !c.unchanged),
            "{b:?}"
        );
    }
}

#[test]
fn growth_in_the_shape_of_table_20() {
    // FERa/PIRa grows with size and the counts are near the thesis's. FERa
    // is switches x nodes here (the thesis's flooding rewrote a few entries,
    // hence 482 rather than 480).
    let mut last_ratio = 0.0;
    for (s, n) in [(16, 30), (32, 72), (64, 146), (128, 218)] {
        let row = growth_row(s, n, 3, 1, 4, 1.0).unwrap();
        let thesis = row.thesis.unwrap();
        assert_eq!(row.fera, s * n);
        let off = (row.fera as f64 - thesis.fera as f64).abs() / thesis.fera as f64;
        assert!(off < 0.01, "{row:?}");
        let off = row.pira / thesis.pira as f64;
        assert!(
            (0.67..1.5).contains(&off),
            "PIRa {} against the thesis's {}",
            row.pira,
            thesis.pira
        );
        assert!(row.ratio > last_ratio, "{row:?}");
        assert!(row.pira_mean_hops >= row.fera_mean_hops, "{row:?}");
        last_ratio = row.ratio;
    }
}
