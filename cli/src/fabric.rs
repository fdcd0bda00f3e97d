//! `rcud fabric`: up*/down* routing and reconfiguration planning.
//!
//! A front end to `rcud-fabric`: reads topology files (a links file or
//! `ibnetdiscover` output), prints text or JSON. The computations and their
//! reasons live in the library.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rcud_fabric::discovery::{self, DiscoveryReport, Purpose, SmpLog};
use rcud_fabric::generate::{growth_row, GrowthRow, Irregular, THESIS_GROWTH};
use rcud_fabric::parse::{write_ibnetdiscover, write_links};
use rcud_fabric::routing::{all_routes, follow, Dependencies, Lengths, Route};
use rcud_fabric::update::{self, UpdatePlan};
use rcud_fabric::{CutNode, Dir, Fera, NodeId, NodeKind, Pira, Port, Tables, Topology, UpDown};
use serde::Serialize;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Plan and inspect InfiniBand routes.
#[derive(Debug, clap::Args)]
pub(crate) struct FabricArgs {
    #[command(subcommand)]
    command: FabricCommand,
}

#[derive(Debug, clap::Subcommand)]
enum FabricCommand {
    /// Orientation, cut nodes, and the FERa and PIRa forwarding tables.
    Routes(RoutesArgs),
    /// The FERa and PIRa routes between two nodes.
    Route(RouteArgs),
    /// Plan a deadlock-free table update after a topology change.
    Update(ChangeArgs),
    /// SMPs of a partial discovery after a change, next to a full one.
    Discover(DiscoverArgs),
    /// Table entries of FERa and PIRa on random subnets of growing size.
    Growth(GrowthArgs),
    /// Write a random irregular subnet as a topology file.
    Generate(GenerateArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
struct Output {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Debug, clap::Args)]
struct TopologyArgs {
    /// Topology: a links file (`SWITCH.PORT PEER.PORT`, `SWITCH.PORT HOST`)
    /// or `ibnetdiscover` output; the format is detected.
    #[arg(long, value_name = "FILE")]
    topology: PathBuf,
    /// Root switch of the up*/down* orientation (where the subnet manager
    /// runs); the lowest-numbered switch if omitted.
    #[arg(long, value_name = "N")]
    root: Option<NodeId>,
    /// Ports per switch for links files (PortInfo reads count them); the
    /// highest port number in the file if omitted.
    #[arg(long, value_name = "P", default_value_t = 0)]
    ports: Port,
}

#[derive(Debug, clap::Args)]
struct RoutesArgs {
    #[command(flatten)]
    topo: TopologyArgs,
    /// Only the counts, not the tables.
    #[arg(long)]
    summary: bool,
    #[command(flatten)]
    out: Output,
}

#[derive(Debug, clap::Args)]
struct RouteArgs {
    #[command(flatten)]
    topo: TopologyArgs,
    /// Source node.
    #[arg(long, value_name = "A")]
    from: NodeId,
    /// Destination node.
    #[arg(long, value_name = "B")]
    to: NodeId,
    #[command(flatten)]
    out: Output,
}

#[derive(Debug, clap::Args)]
struct ChangeArgs {
    #[command(flatten)]
    topo: TopologyArgs,
    /// The topology after the change.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "remove",
        conflicts_with = "remove"
    )]
    changed: Option<PathBuf>,
    /// Or: the change is these nodes going down (comma-separated); hosts
    /// left without a link go with them.
    #[arg(long, value_name = "N,...", value_delimiter = ',')]
    remove: Vec<NodeId>,
    #[command(flatten)]
    out: Output,
}

#[derive(Debug, clap::Args)]
struct DiscoverArgs {
    #[command(flatten)]
    topo: TopologyArgs,
    /// The topology after the change; without it (and without --remove),
    /// the cost of discovering --topology from scratch.
    #[arg(long, value_name = "FILE", conflicts_with = "remove")]
    changed: Option<PathBuf>,
    /// Or: the change is these nodes going down (comma-separated).
    #[arg(long, value_name = "N,...", value_delimiter = ',')]
    remove: Vec<NodeId>,
    /// The node the subnet manager runs on (a switch or a host); the root
    /// if omitted.
    #[arg(long, value_name = "N")]
    sm: Option<NodeId>,
    /// List every SMP.
    #[arg(long)]
    trace: bool,
    #[command(flatten)]
    out: Output,
}

#[derive(Debug, clap::Args)]
struct GrowthArgs {
    /// Sizes as SWITCHES:NODES (comma-separated); the thesis's if omitted.
    #[arg(long, value_name = "S:N,...", value_delimiter = ',')]
    sizes: Vec<String>,
    /// Random subnets measured per size.
    #[arg(long, default_value_t = 10)]
    samples: usize,
    /// Seed of the first subnet of each size (the next ones count up).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Ports per switch.
    #[arg(long, default_value_t = 4)]
    ports: Port,
    /// Share of spare switch ports given extra random links (0..=1).
    #[arg(long, default_value_t = 1.0)]
    fill: f64,
    #[command(flatten)]
    out: Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FileKind {
    Links,
    Ibnetdiscover,
}

#[derive(Debug, clap::Args)]
struct GenerateArgs {
    /// Switches.
    #[arg(long, default_value_t = 16)]
    switches: usize,
    /// Hosts.
    #[arg(long, default_value_t = 14)]
    hosts: usize,
    /// Ports per switch.
    #[arg(long, default_value_t = 4)]
    ports: Port,
    /// Share of spare switch ports given extra random links (0..=1).
    #[arg(long, default_value_t = 1.0)]
    fill: f64,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// File flavour for text output.
    #[arg(long = "as", value_enum, default_value_t = FileKind::Links)]
    kind: FileKind,
    #[command(flatten)]
    out: Output,
}

pub(crate) fn fabric(args: FabricArgs) -> Result<ExitCode> {
    match args.command {
        FabricCommand::Routes(a) => routes(a),
        FabricCommand::Route(a) => route(a),
        FabricCommand::Update(a) => update(a),
        FabricCommand::Discover(a) => discover(a),
        FabricCommand::Growth(a) => growth(a),
        FabricCommand::Generate(a) => generate(a),
    }?;
    Ok(ExitCode::SUCCESS)
}

fn load(path: &Path, ports: Port) -> Result<Topology> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    rcud_fabric::parse(&text, ports).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// The topology and its checked root.
fn load_rooted(a: &TopologyArgs) -> Result<(Topology, NodeId)> {
    let t = load(&a.topology, a.ports)?;
    let root = match a.root {
        Some(r) => r,
        None => t
            .nodes()
            .iter()
            .find(|n| n.is_switch())
            .map(|n| n.id)
            .ok_or("no switch")?,
    };
    t.switch_index(root).map_err(|e| format!("--root: {e}"))?;
    Ok((t, root))
}

fn changed(
    a: &TopologyArgs,
    old: &Topology,
    file: &Option<PathBuf>,
    remove: &[NodeId],
    root: NodeId,
) -> Result<Topology> {
    match file {
        Some(f) => Ok(load(f, a.ports)?),
        None => {
            if remove.contains(&root) {
                return Err(format!("--remove: {root} is the root switch").into());
            }
            Ok(old.without(remove).map_err(|e| format!("--remove: {e}"))?)
        }
    }
}

fn print_json<T: Serialize>(v: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

fn ports(list: &[Port]) -> String {
    if list.is_empty() {
        return "-".into();
    }
    list.iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

// ---------------------------------------------------------------------------
// routes

#[derive(Serialize)]
struct OrientedNode {
    node: NodeId,
    kind: NodeKind,
    level: u32,
    up_ports: Vec<Port>,
    down_ports: Vec<Port>,
}

#[derive(Serialize)]
struct FeraReport {
    entries: usize,
    /// switch -> destination -> output port (0: the switch itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    tables: Option<BTreeMap<NodeId, BTreeMap<NodeId, Port>>>,
    mean_hops: f64,
}

#[derive(Serialize)]
struct PiraSwitch {
    parent: Option<NodeId>,
    default_port: Option<Port>,
    entries: BTreeMap<NodeId, Port>,
}

#[derive(Serialize)]
struct PiraReport {
    entries: usize,
    default_ports: usize,
    /// Visit order of the computation.
    order: Vec<NodeId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tables: Option<BTreeMap<NodeId, PiraSwitch>>,
    mean_hops: f64,
}

#[derive(Serialize)]
struct RoutesReport {
    root: NodeId,
    nodes: usize,
    switches: usize,
    hosts: usize,
    links: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    orientation: Option<Vec<OrientedNode>>,
    cut_nodes: Vec<CutNode>,
    fera: FeraReport,
    pira: PiraReport,
    deadlock_free: bool,
}

fn routes(a: RoutesArgs) -> Result<()> {
    let (t, root) = load_rooted(&a.topo)?;
    let ud = UpDown::new(&t, root)?;
    let fera = Fera::new(&t, &ud);
    let pira = Pira::new(&t, &ud);
    let mut deadlock_free = true;
    let mut mean = Vec::new();
    for tables in [&fera as &dyn Tables, &pira] {
        let rs = all_routes(&t, &ud, tables)?;
        let mut deps = Dependencies::new();
        rs.iter().for_each(|r| deps.add_route(r));
        deadlock_free &= deps.find_cycle().is_none() && rs.iter().all(Route::is_legal);
        mean.push(Lengths::of(&rs).mean_hops);
    }
    let switches: Vec<usize> = (0..t.len()).filter(|&i| t.at(i).is_switch()).collect();
    let full = !a.summary;
    let orientation = full.then(|| {
        (0..t.len())
            .map(|i| {
                let up = ud.up_ports(&t, i);
                let down = t
                    .at(i)
                    .links
                    .iter()
                    .map(|l| l.port)
                    .filter(|p| !up.contains(p))
                    .collect();
                OrientedNode {
                    node: t.at(i).id,
                    kind: t.at(i).kind,
                    level: ud.level(i),
                    up_ports: up,
                    down_ports: down,
                }
            })
            .collect()
    });
    let fera_tables = full.then(|| {
        switches
            .iter()
            .map(|&s| {
                let row = (0..t.len())
                    .filter_map(|d| fera.port(s, d).map(|p| (t.at(d).id, p)))
                    .collect();
                (t.at(s).id, row)
            })
            .collect()
    });
    let pira_tables = full.then(|| {
        switches
            .iter()
            .map(|&s| {
                let sw = PiraSwitch {
                    parent: pira.parent(s).map(|p| t.at(p).id),
                    default_port: pira.default_port(s),
                    entries: pira
                        .explicit(s)
                        .iter()
                        .map(|(&d, &p)| (t.at(d).id, p))
                        .collect(),
                };
                (t.at(s).id, sw)
            })
            .collect()
    });
    let report = RoutesReport {
        root,
        nodes: t.len(),
        switches: t.switch_count(),
        hosts: t.len() - t.switch_count(),
        links: t.links().len(),
        orientation,
        cut_nodes: ud.cut_nodes(&t),
        fera: FeraReport {
            entries: fera.entries(),
            tables: fera_tables,
            mean_hops: mean[0],
        },
        pira: PiraReport {
            entries: pira.entries(),
            default_ports: pira.defaults(),
            order: pira.order().iter().map(|&i| t.at(i).id).collect(),
            tables: pira_tables,
            mean_hops: mean[1],
        },
        deadlock_free,
    };
    match a.out.format {
        Format::Json => print_json(&report),
        Format::Text => {
            print!("{}", routes_text(&report));
            Ok(())
        }
    }
}

fn cut_text(cuts: &[CutNode]) -> String {
    if cuts.is_empty() {
        return "none".into();
    }
    cuts.iter()
        .map(|c| format!("{} (up ports {})", c.node, ports(&c.up_ports)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn routes_text(r: &RoutesReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} nodes ({} switches, {} hosts), {} links; up*/down* from root switch {}",
        r.nodes, r.switches, r.hosts, r.links, r.root
    );
    if let Some(o) = &r.orientation {
        let _ = writeln!(s, "\n  node  kind    level  up ports  down ports");
        for n in o {
            let _ = writeln!(
                s,
                "  {:<5} {:<7} {:<6} {:<9} {}",
                n.node,
                n.kind.to_string(),
                n.level,
                ports(&n.up_ports),
                ports(&n.down_ports)
            );
        }
    }
    let _ = writeln!(s, "\ncut nodes: {}", cut_text(&r.cut_nodes));
    let _ = writeln!(
        s,
        "\nFERa: {} entries ({} switches x {} destinations), mean route {:.2} hops",
        r.fera.entries, r.switches, r.nodes, r.fera.mean_hops
    );
    if let Some(tables) = &r.fera.tables {
        let _ = writeln!(s, "  switch  destination:port (0 = itself)");
        for (sw, row) in tables {
            let cells: Vec<String> = row.iter().map(|(d, p)| format!("{d}:{p}")).collect();
            let _ = writeln!(s, "  {:<7} {}", sw, cells.join(" "));
        }
    }
    let _ = writeln!(
        s,
        "\nPIRa: {} entries and {} default ports, mean route {:.2} hops",
        r.pira.entries, r.pira.default_ports, r.pira.mean_hops
    );
    if let Some(tables) = &r.pira.tables {
        let order: Vec<String> = r.pira.order.iter().map(|n| n.to_string()).collect();
        let _ = writeln!(s, "  visit order: {}", order.join(" "));
        let _ = writeln!(s, "  switch  parent  default  destination:port");
        for (sw, t) in tables {
            let cells: Vec<String> = t.entries.iter().map(|(d, p)| format!("{d}:{p}")).collect();
            let opt = |o: Option<String>| o.unwrap_or_else(|| "-".into());
            let _ = writeln!(
                s,
                "  {:<7} {:<7} {:<8} {}",
                sw,
                opt(t.parent.map(|p| p.to_string())),
                opt(t.default_port.map(|p| p.to_string())),
                cells.join(" ")
            );
        }
    }
    let _ = writeln!(
        s,
        "\nevery route legal and channel dependencies acyclic: {}",
        if r.deadlock_free { "yes" } else { "NO" }
    );
    s
}

// ---------------------------------------------------------------------------
// route

#[derive(Serialize)]
struct RouteOf {
    hops: usize,
    legal: bool,
    path: Vec<NodeId>,
    links: Vec<rcud_fabric::routing::Hop>,
}

#[derive(Serialize)]
struct RouteReport {
    root: NodeId,
    from: NodeId,
    to: NodeId,
    fera: RouteOf,
    pira: RouteOf,
}

fn route(a: RouteArgs) -> Result<()> {
    let (t, root) = load_rooted(&a.topo)?;
    let ud = UpDown::new(&t, root)?;
    let idx = |n: NodeId, what: &str| {
        t.index_of(n)
            .ok_or_else(|| format!("{what}: node {n} is not in the topology"))
    };
    let (from, to) = (idx(a.from, "--from")?, idx(a.to, "--to")?);
    let of = |tables: &dyn Tables| -> Result<RouteOf> {
        let r = follow(&t, &ud, tables, from, to)?;
        Ok(RouteOf {
            hops: r.len(),
            legal: r.is_legal(),
            path: std::iter::once(r.from)
                .chain(r.hops.iter().map(|h| h.next))
                .collect(),
            links: r.hops,
        })
    };
    let report = RouteReport {
        root,
        from: a.from,
        to: a.to,
        fera: of(&Fera::new(&t, &ud))?,
        pira: of(&Pira::new(&t, &ud))?,
    };
    match a.out.format {
        Format::Json => print_json(&report),
        Format::Text => {
            for (name, r) in [("FERa", &report.fera), ("PIRa", &report.pira)] {
                let path: Vec<String> = r.path.iter().map(|n| n.to_string()).collect();
                println!(
                    "{name} {} -> {}: {} hop(s), {}: {}",
                    a.from,
                    a.to,
                    r.hops,
                    if r.legal { "legal" } else { "ILLEGAL" },
                    path.join(" ")
                );
                for h in &r.links {
                    let d = match h.dir {
                        Dir::Up => "up",
                        Dir::Down => "down",
                    };
                    println!(
                        "  {:>5} port {:<3} -> {:>5} port {:<3} {d}",
                        h.node, h.port, h.next, h.next_port
                    );
                }
            }
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------
// update

fn update(a: ChangeArgs) -> Result<()> {
    let (old, root) = load_rooted(&a.topo)?;
    let new = changed(&a.topo, &old, &a.changed, &a.remove, root)?;
    let p = update::plan(&old, &new, root)?;
    match a.out.format {
        Format::Json => print_json(&p),
        Format::Text => {
            print!("{}", update_text(&p));
            Ok(())
        }
    }
}

fn update_text(p: &UpdatePlan) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "new up*/down* orientation from root switch {}", p.root);
    let cuts: Vec<String> = p
        .cut_nodes
        .iter()
        .map(|c| {
            format!(
                "{} (up ports {}{})",
                c.cut.node,
                ports(&c.cut.up_ports),
                if c.unchanged { "" } else { ", new" }
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "cut nodes: {}",
        if cuts.is_empty() {
            "none".into()
        } else {
            cuts.join(", ")
        }
    );
    if !p.former_cut_nodes.is_empty() {
        let f: Vec<String> = p.former_cut_nodes.iter().map(|n| n.to_string()).collect();
        let _ = writeln!(s, "no longer cut nodes: {}", f.join(", "));
    }
    if !p.flipped_links.is_empty() {
        let f: Vec<String> = p
            .flipped_links
            .iter()
            .map(|l| {
                format!(
                    "{}.{}->{}.{}",
                    l.now_down, l.now_down_port, l.now_up, l.now_up_port
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "links now pointing the other way (lower->upper end): {}",
            f.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "\n1. map every service level to VL15 on these turns ({} SubnSet(SLtoVLMappingTable)):",
        p.blocked.len()
    );
    for b in &p.blocked {
        let _ = writeln!(
            s,
            "   switch {:<5} in port {:<3} -> out port {:<3}{}",
            b.node,
            b.input,
            b.output,
            if b.used_by_old_routes {
                "  (taken by old routes)"
            } else {
                ""
            }
        );
    }
    if p.blocked.is_empty() {
        let _ = writeln!(s, "   none: the new orientation has no cut node");
    }
    let _ = writeln!(
        s,
        "2. send the new tables in any order: FERa {} of {} entries change; PIRa {} of {} entries and default ports",
        p.fera.changed, p.fera.entries, p.pira.changed, p.pira.entries
    );
    let _ = writeln!(
        s,
        "3. nothing to undo: the new tables never take the blocked turns\n\nold-route turns the new orientation forbids: {} (all blocked)",
        p.ghost_turns
    );
    s
}

// ---------------------------------------------------------------------------
// discover

#[derive(Serialize)]
struct ColdDiscovery {
    sm: NodeId,
    full: SmpLog,
}

fn discover(a: DiscoverArgs) -> Result<()> {
    let (old, root) = load_rooted(&a.topo)?;
    let sm = a.sm.unwrap_or(root);
    if old.node(sm).is_none() {
        return Err(format!("--sm: node {sm} is not in the topology").into());
    }
    if a.changed.is_none() && a.remove.is_empty() {
        let mut log = discovery::full_discovery(&old, sm)?;
        if !a.trace {
            log.smps.clear();
        }
        return match a.out.format {
            Format::Json => print_json(&ColdDiscovery { sm, full: log }),
            Format::Text => {
                println!(
                    "discovering the whole subnet from node {sm}: {} SMPs",
                    log.total
                );
                println!("  {}", purposes(&log));
                print!("{}", trace_text(&log));
                Ok(())
            }
        };
    }
    let new = changed(&a.topo, &old, &a.changed, &a.remove, root)?;
    let mut r = discovery::discover(&old, &new, root, sm)?;
    if !a.trace {
        r.partial.smps.clear();
        r.full.smps.clear();
    }
    match a.out.format {
        Format::Json => print_json(&r),
        Format::Text => {
            print!("{}", discover_text(&r));
            Ok(())
        }
    }
}

fn purposes(log: &SmpLog) -> String {
    let name = |p: Purpose| match p {
        Purpose::Sweep => "sweep",
        Purpose::ClearFlag => "clear flag",
        Purpose::ReadPort => "read port",
        Purpose::Probe => "probe",
        Purpose::Explore => "NodeInfo",
        Purpose::ReadDevice => "read device",
        Purpose::AssignLid => "assign LID",
    };
    log.by_purpose
        .iter()
        .map(|(p, n)| format!("{} {n}", name(*p)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn trace_text(log: &SmpLog) -> String {
    let mut s = String::new();
    for (i, m) in log.smps.iter().enumerate() {
        let attr = match m.port {
            Some(p) => format!("{:?}({:?} {p})", m.method, m.attribute),
            None => format!("{:?}({:?})", m.method, m.attribute),
        };
        let who = m
            .answered_by
            .map(|n| format!("node {n}"))
            .unwrap_or_else(|| "no answer".into());
        let _ = writeln!(
            s,
            "  {:>4}  {:<22} {:<20} {}",
            i + 1,
            attr,
            m.route.to_string(),
            who
        );
    }
    s
}

fn discover_text(r: &DiscoveryReport) -> String {
    let mut s = String::new();
    let list = |v: &[NodeId]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    let _ = writeln!(
        s,
        "change seen from node {}: nodes up {}; nodes down {}; {} link(s) up, {} down",
        r.sm,
        list(&r.change.added),
        list(&r.change.removed),
        r.change.links_added.len(),
        r.change.links_removed.len()
    );
    let _ = writeln!(s, "\npartial discovery: {} SMPs", r.partial.total);
    let _ = writeln!(s, "  {}", purposes(&r.partial));
    s.push_str(&trace_text(&r.partial));
    let _ = writeln!(s, "full discovery:    {} SMPs", r.full.total);
    let _ = writeln!(s, "  {}", purposes(&r.full));
    s.push_str(&trace_text(&r.full));
    let _ = writeln!(
        s,
        "\nafter the partial discovery the subnet manager forgets: {}",
        list(&r.forgotten)
    );
    s
}

// ---------------------------------------------------------------------------
// growth and generate

fn growth(a: GrowthArgs) -> Result<()> {
    let sizes: Vec<(usize, usize)> = if a.sizes.is_empty() {
        THESIS_GROWTH
            .iter()
            .map(|r| (r.switches, r.nodes))
            .collect()
    } else {
        a.sizes
            .iter()
            .map(|s| {
                let (sw, n) = s
                    .split_once(':')
                    .ok_or_else(|| format!("--sizes: `{s}` is not SWITCHES:NODES"))?;
                let num = |x: &str| {
                    x.trim()
                        .parse::<usize>()
                        .map_err(|_| format!("--sizes: `{s}` is not SWITCHES:NODES"))
                };
                Ok((num(sw)?, num(n)?))
            })
            .collect::<std::result::Result<_, String>>()?
    };
    let mut rows: Vec<GrowthRow> = Vec::new();
    for (s, n) in sizes {
        rows.push(growth_row(s, n, a.samples, a.seed, a.ports, a.fill)?);
    }
    match a.out.format {
        Format::Json => print_json(&rows),
        Format::Text => {
            println!(
                "random irregular subnets: {}-port switches, {:.0}% of spare ports linked, {} per size, seeds from {}",
                a.ports,
                a.fill * 100.0,
                a.samples,
                a.seed
            );
            println!(
                "                    measured                                           thesis"
            );
            println!("switches  nodes     FERa    PIRa  ratio  hops F/P   time F/P (us)       FERa   PIRa  ratio");
            for r in &rows {
                let thesis = r
                    .thesis
                    .map(|t| {
                        format!(
                            "{:>9} {:>6} {:>6.2}",
                            t.fera,
                            t.pira,
                            t.fera as f64 / t.pira as f64
                        )
                    })
                    .unwrap_or_default();
                let time = format!("{:.0}/{:.0}", r.fera_micros, r.pira_micros);
                println!(
                    "{:>8} {:>6} {:>8} {:>7.1} {:>6.2}  {:.2}/{:.2} {time:>15} {thesis}",
                    r.switches,
                    r.nodes,
                    r.fera,
                    r.pira,
                    r.ratio,
                    r.fera_mean_hops,
                    r.pira_mean_hops
                );
            }
            Ok(())
        }
    }
}

fn generate(a: GenerateArgs) -> Result<()> {
    let t = Irregular {
        switches: a.switches,
        hosts: a.hosts,
        ports: a.ports,
        fill: a.fill,
        seed: a.seed,
    }
    .build()?;
    match (a.out.format, a.kind) {
        (Format::Json, _) => print_json(&t),
        (Format::Text, FileKind::Links) => {
            println!(
                "# random irregular subnet: {} switches of {} ports, {} hosts, fill {}, seed {}",
                a.switches, a.ports, a.hosts, a.fill, a.seed
            );
            print!("{}", write_links(&t));
            Ok(())
        }
        (Format::Text, FileKind::Ibnetdiscover) => {
            print!("{}", write_ibnetdiscover(&t));
            Ok(())
        }
    }
}
