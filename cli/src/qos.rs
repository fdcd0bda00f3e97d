//! `rcud qos`: the arbitration table model as an operator's tool.
//!
//! `simulate` runs the table management models over random insertions and
//! releases; `arbiter` and `sawtooth` run the packet-level VL arbiter against
//! the bandwidth law measured on ConnectX-2; `plan` turns traffic classes into
//! OpenSM settings.

mod plot;

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Subcommand, ValueEnum};
use rcud_qos::arbiter::{
    connectx_ratio, misprinted_limit, saturate, two_lane_config, Discipline, PaperRow, PAPER_TABLE2,
};
use rcud_qos::plan::{plan, Plan, PlanConfig};
use rcud_qos::workload::{DistanceMix, Run, Tally, Workload};
use rcud_qos::Model;
use serde::Serialize;

type QosResult<T> = Result<T, Box<dyn Error>>;

/// Simulate and plan InfiniBand-style QoS.
#[derive(Debug, clap::Args)]
pub(crate) struct QosArgs {
    #[command(subcommand)]
    command: QosCommand,
}

#[derive(Debug, Subcommand)]
enum QosCommand {
    /// Random insertions and releases against a table: set swaps and time per operation.
    Simulate(SimulateArgs),
    /// One high and one low VL on a saturated link: simulated bandwidth ratio vs. the measured law.
    Arbiter(ArbiterArgs),
    /// The bandwidth ratio as the low weight grows, for a fixed limit and high weight.
    Sawtooth(SawtoothArgs),
    /// Turn traffic classes into an opensm.conf fragment and a qos-policy.conf.
    Plan(PlanArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModelArg {
    M1,
    M2,
    M3,
    Smart,
    /// The four, one after the other, on the same operations.
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum MixArg {
    /// Each distance class 2, 4, …, N equally likely.
    Levels,
    /// Distances uniform in 2..=N, rounded down to a power of two.
    Uniform,
    /// Distances in 2..=N with probability proportional to the distance.
    Proportional,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DisciplineArg {
    /// The behaviour measured on ConnectX-2 (seed 004).
    Connectx,
    /// The InfiniBand specification's text.
    Iba,
}

impl From<DisciplineArg> for Discipline {
    fn from(d: DisciplineArg) -> Self {
        match d {
            DisciplineArg::Connectx => Discipline::ConnectX,
            DisciplineArg::Iba => Discipline::Iba,
        }
    }
}

#[derive(Debug, clap::Args)]
struct SimulateArgs {
    /// Management model.
    #[arg(long, value_enum, default_value = "all")]
    model: ModelArg,
    /// Operations (insertions and releases).
    #[arg(long, default_value_t = 1_000_000)]
    ops: u64,
    /// Seed of the operation stream (the same seed gives the same operations).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Entries of the table (a power of two, 2 to 64).
    #[arg(long, default_value_t = 64)]
    entries: u32,
    /// Probability that an operation is an insertion.
    #[arg(long, default_value_t = 0.5)]
    insert_probability: f64,
    /// How request distances are drawn.
    #[arg(long, value_enum, default_value = "levels")]
    mix: MixArg,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

#[derive(Debug, clap::Args)]
struct ArbiterArgs {
    /// LimitOfHighPriority Q (0..=255; 255 is unbounded).
    #[arg(long, required_unless_present = "paper")]
    limit: Option<u8>,
    /// Weight H of the high-priority VL (1..=255, 64-byte units).
    #[arg(long, required_unless_present = "paper", value_parser = clap::value_parser!(u8).range(1..))]
    high: Option<u8>,
    /// Weight L of the low-priority VL (1..=255, 64-byte units).
    #[arg(long, required_unless_present = "paper", value_parser = clap::value_parser!(u8).range(1..))]
    low: Option<u8>,
    /// Run the ten settings of seed 004's Table 2 instead.
    #[arg(long, conflicts_with_all = ["limit", "high", "low"])]
    paper: bool,
    /// Bytes per packet (every lane always has one waiting).
    #[arg(long, default_value_t = 2048)]
    packet: u32,
    /// Link MTU: scales the allowance of the ConnectX discipline (the paper's is 2048).
    #[arg(long, default_value_t = 2048)]
    mtu: u32,
    /// Packets to simulate.
    #[arg(long, default_value_t = 1_000_000)]
    packets: u64,
    /// How the two tables share the link.
    #[arg(long, value_enum, default_value = "connectx")]
    discipline: DisciplineArg,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

#[derive(Debug, clap::Args)]
struct SawtoothArgs {
    /// LimitOfHighPriority Q.
    #[arg(long)]
    limit: u8,
    /// Weight H of the high-priority VL.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..))]
    high: u8,
    /// Smallest low weight L to run.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..))]
    low_min: u8,
    /// Largest low weight L to run.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..))]
    low_max: u8,
    /// Bytes per packet.
    #[arg(long, default_value_t = 2048)]
    packet: u32,
    /// Link MTU (the paper's is 2048).
    #[arg(long, default_value_t = 2048)]
    mtu: u32,
    /// Packets to simulate per point.
    #[arg(long, default_value_t = 200_000)]
    packets: u64,
    /// Write a plot (SVG or PNG, by the extension).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

#[derive(Debug, clap::Args)]
struct PlanArgs {
    /// The classes (TOML; see docs/qos.md).
    #[arg(long)]
    config: PathBuf,
    /// Write opensm.conf and qos-policy.conf into this directory (otherwise
    /// they are printed).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub(crate) fn qos(args: QosArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match args.command {
        QosCommand::Simulate(a) => simulate(a),
        QosCommand::Arbiter(a) => arbiter(a),
        QosCommand::Sawtooth(a) => sawtooth(a),
        QosCommand::Plan(a) => plan_cmd(a),
    }?;
    Ok(ExitCode::SUCCESS)
}

fn print_json<T: Serialize>(v: &T) -> QosResult<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

// ---- simulate -------------------------------------------------------------

/// Swaps per operation that seed 000 measured (table 6).
fn seed_swaps(model: Model) -> Option<f64> {
    match model {
        Model::M1 => Some(0.0715),
        Model::M2 => Some(0.1207),
        Model::M3 => Some(0.1126),
        Model::Smart => None,
    }
}

#[derive(Debug, Serialize)]
struct SimulateReport {
    model: String,
    entries: u32,
    mix: String,
    insert_probability: f64,
    seed: u64,
    ops: u64,
    inserted: u64,
    refused_full: u64,
    refused_fragmented: u64,
    released: u64,
    swaps: u64,
    swaps_per_op: f64,
    swaps_per_op_after_insert: f64,
    swaps_per_op_after_release: f64,
    seed_000_swaps_per_op: Option<f64>,
    mean_occupied_entries: f64,
    us_per_op: f64,
    seed_000_us_per_op: [f64; 2],
}

fn simulate(a: SimulateArgs) -> QosResult<()> {
    if !(0.0..=1.0).contains(&a.insert_probability) {
        return Err("--insert-probability is a probability, 0 to 1".into());
    }
    let models: Vec<Model> = match a.model {
        ModelArg::M1 => vec![Model::M1],
        ModelArg::M2 => vec![Model::M2],
        ModelArg::M3 => vec![Model::M3],
        ModelArg::Smart => vec![Model::Smart],
        ModelArg::All => Model::ALL.to_vec(),
    };
    let mix = match a.mix {
        MixArg::Levels => DistanceMix::Levels,
        MixArg::Uniform => DistanceMix::Uniform,
        MixArg::Proportional => DistanceMix::Proportional,
    };
    let mut reports = Vec::new();
    for model in models {
        let spec = Workload {
            model,
            entries: a.entries,
            insert_probability: a.insert_probability,
            mix,
            seed: a.seed,
        };
        let mut run = Run::new(spec)?;
        // The time includes drawing each operation (a few random numbers),
        // which is small next to the table's work.
        let start = Instant::now();
        for _ in 0..a.ops {
            run.step();
        }
        let elapsed = start.elapsed().as_secs_f64();
        let t: &Tally = run.tally();
        if t.refused_fragmented != 0 {
            return Err(format!(
                "{model}: {} insertions refused with enough free entries: the table lost its normalization",
                t.refused_fragmented
            )
            .into());
        }
        let per = |x: u64| x as f64 / t.ops.max(1) as f64;
        reports.push(SimulateReport {
            model: model.to_string(),
            entries: a.entries,
            mix: mix.to_string(),
            insert_probability: a.insert_probability,
            seed: a.seed,
            ops: t.ops,
            inserted: t.inserted,
            refused_full: t.refused_full,
            refused_fragmented: t.refused_fragmented,
            released: t.released,
            swaps: t.swaps(),
            swaps_per_op: t.swaps_per_op(),
            swaps_per_op_after_insert: per(t.swaps_after_insert),
            swaps_per_op_after_release: per(t.swaps_after_release),
            seed_000_swaps_per_op: seed_swaps(model),
            mean_occupied_entries: t.mean_occupied(),
            us_per_op: elapsed * 1e6 / t.ops.max(1) as f64,
            seed_000_us_per_op: [20.0, 30.0],
        });
    }
    if a.format == Format::Json {
        return print_json(&reports);
    }
    let r0 = &reports[0];
    println!(
        "{} operations on a {}-entry table, seed {}: insertion probability {}, distances {}",
        r0.ops, r0.entries, r0.seed, r0.insert_probability, r0.mix
    );
    println!(
        "{:<6} {:>9} {:>9} {:>9} {:>8} {:>10} {:>12} {:>10} {:>9}",
        "model",
        "inserted",
        "refused",
        "released",
        "occupied",
        "swaps/op",
        "(after ins)",
        "seed 000",
        "µs/op"
    );
    for r in &reports {
        println!(
            "{:<6} {:>9} {:>9} {:>9} {:>8.1} {:>10.4} {:>12.4} {:>10} {:>9.3}",
            r.model,
            r.inserted,
            r.refused_full,
            r.released,
            r.mean_occupied_entries,
            r.swaps_per_op,
            r.swaps_per_op_after_insert,
            r.seed_000_swaps_per_op
                .map_or("-".to_string(), |s| format!("{s:.4}")),
            r.us_per_op
        );
    }
    println!(
        "seed 000 measured 20-30 µs per operation on 2004 hardware; no insertion was refused for fragmentation"
    );
    Ok(())
}

// ---- arbiter --------------------------------------------------------------

#[derive(Debug, Serialize)]
struct ArbiterReport {
    limit: u8,
    high: u8,
    low: u8,
    packet: u32,
    mtu: u32,
    discipline: String,
    packets: u64,
    high_bytes: u64,
    low_bytes: u64,
    simulated_ratio: f64,
    formula_ratio: f64,
    deviation: f64,
    iba_text_ratio: f64,
    paper: Option<PaperReport>,
}

#[derive(Debug, Serialize)]
struct PaperReport {
    measured_high_gbs: f64,
    measured_low_gbs: f64,
    measured_ratio: f64,
    note: Option<String>,
}

fn paper_note(row: &PaperRow) -> Option<String> {
    misprinted_limit(row).map(|q| {
        format!(
            "the paper prints {:.0}:1 as its computed value and measured {:.2}:{:.2} = {:.1}, but the \
             formula at the printed Q = {} gives {:.0}; at Q = {q} it gives {:.0}, which matches both, \
             so the row's Q is most likely a misprint for {q}",
            connectx_ratio(q, row.h, row.l, 2048),
            row.high_gbs,
            row.low_gbs,
            row.measured(),
            row.q,
            connectx_ratio(row.q, row.h, row.l, 2048),
            connectx_ratio(q, row.h, row.l, 2048),
        )
    })
}

fn arbiter_one(q: u8, h: u8, l: u8, a: &ArbiterArgs) -> QosResult<ArbiterReport> {
    let d: Discipline = a.discipline.into();
    let s = saturate(two_lane_config(q, h, l, d, a.mtu), a.packet, a.packets)?;
    let iba = saturate(
        two_lane_config(q, h, l, Discipline::Iba, a.mtu),
        a.packet,
        a.packets,
    )?;
    let formula = connectx_ratio(q, h, l, a.mtu);
    let paper = PAPER_TABLE2
        .iter()
        .find(|r| (r.q, r.h, r.l) == (q, h, l))
        .map(|r| PaperReport {
            measured_high_gbs: r.high_gbs,
            measured_low_gbs: r.low_gbs,
            measured_ratio: r.measured(),
            note: paper_note(r),
        });
    Ok(ArbiterReport {
        limit: q,
        high: h,
        low: l,
        packet: a.packet,
        mtu: a.mtu,
        discipline: d.to_string(),
        packets: a.packets,
        high_bytes: s.high,
        low_bytes: s.low,
        simulated_ratio: s.ratio(),
        formula_ratio: formula,
        // At Q = 255 both are infinite: the low lane never sends.
        deviation: if formula.is_infinite() && s.low == 0 {
            0.0
        } else {
            s.ratio() / formula - 1.0
        },
        iba_text_ratio: iba.ratio(),
        paper,
    })
}

fn arbiter(a: ArbiterArgs) -> QosResult<()> {
    if a.packet == 0 {
        return Err("--packet must be at least 1 byte".into());
    }
    let settings: Vec<(u8, u8, u8)> = if a.paper {
        PAPER_TABLE2.iter().map(|r| (r.q, r.h, r.l)).collect()
    } else {
        vec![(
            a.limit.expect("required"),
            a.high.expect("required"),
            a.low.expect("required"),
        )]
    };
    let reports = settings
        .iter()
        .map(|&(q, h, l)| arbiter_one(q, h, l, &a))
        .collect::<QosResult<Vec<_>>>()?;
    if a.format == Format::Json {
        return if a.paper {
            print_json(&reports)
        } else {
            print_json(&reports[0])
        };
    }
    println!(
        "{} discipline, {}-byte packets, MTU {}, {} packets per setting",
        reports[0].discipline, a.packet, a.mtu, a.packets
    );
    println!(
        "{:>4} {:>4} {:>4} {:>12} {:>12} {:>9} {:>10} {:>10}",
        "Q", "H", "L", "simulated", "(H/L)·m", "dev", "IBA text", "measured"
    );
    for r in &reports {
        println!(
            "{:>4} {:>4} {:>4} {:>12.4} {:>12.4} {:>8.2}% {:>10.4} {:>10}",
            r.limit,
            r.high,
            r.low,
            r.simulated_ratio,
            r.formula_ratio,
            r.deviation * 100.0,
            r.iba_text_ratio,
            r.paper
                .as_ref()
                .map_or("-".into(), |p| format!("{:.3}", p.measured_ratio))
        );
    }
    println!(
        "(H/L)·m is seed 004's law (H/L)·max(1, ⌊2QL/H⌋) (2 = 4096/MTU); \"IBA text\" is the same \
         link under the specification's rule, which ignores one-lane weights"
    );
    for r in &reports {
        if let Some(note) = r.paper.as_ref().and_then(|p| p.note.as_ref()) {
            println!("Q={} H={} L={}: {note}", r.limit, r.high, r.low);
        }
    }
    Ok(())
}

// ---- sawtooth -------------------------------------------------------------

#[derive(Debug, Serialize)]
struct SawtoothPoint {
    low: u8,
    simulated: f64,
    formula: f64,
}

#[derive(Debug, Serialize)]
struct SawtoothReport {
    limit: u8,
    high: u8,
    packet: u32,
    mtu: u32,
    /// Period in L of the returns to the stable value `Q·4096/MTU`.
    period: u32,
    stable: f64,
    points: Vec<SawtoothPoint>,
    measured: Vec<(u8, f64)>,
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn sawtooth(a: SawtoothArgs) -> QosResult<()> {
    if a.limit == 255 {
        return Err("with --limit 255 the low lane never sends: there is no ratio to plot".into());
    }
    if a.packet == 0 {
        return Err("--packet must be at least 1 byte".into());
    }
    if let Some(p) = &a.plot {
        plot::check_path(p)?;
    }
    if a.low_min > a.low_max {
        return Err("--low-min is above --low-max".into());
    }
    let mut points = Vec::new();
    for l in a.low_min..=a.low_max {
        let cfg = two_lane_config(a.limit, a.high, l, Discipline::ConnectX, a.mtu);
        let s = saturate(cfg, a.packet, a.packets)?;
        points.push(SawtoothPoint {
            low: l,
            simulated: s.ratio(),
            formula: connectx_ratio(a.limit, a.high, l, a.mtu),
        });
    }
    // y(L) = (H/L)·⌊kQL/H⌋ with k = 4096/MTU is back at kQ whenever kQL/H is
    // a whole number: every H/gcd(H, kQ) (for whole kQ).
    let kq = (4096 / a.mtu) * a.limit as u32;
    let period = if kq == 0 {
        0
    } else {
        a.high as u32 / gcd(a.high as u32, kq)
    };
    let measured: Vec<(u8, f64)> = PAPER_TABLE2
        .iter()
        .filter(|r| (r.q, r.h) == (a.limit, a.high) && a.mtu == 2048)
        .filter(|r| (a.low_min..=a.low_max).contains(&r.l))
        .map(|r| (r.l, r.measured()))
        .collect();
    let report = SawtoothReport {
        limit: a.limit,
        high: a.high,
        packet: a.packet,
        mtu: a.mtu,
        period,
        stable: kq as f64,
        points,
        measured,
    };
    if let Some(p) = &a.plot {
        plot::sawtooth(p, &report)?;
    }
    if a.format == Format::Json {
        return print_json(&report);
    }
    println!(
        "Q={} H={}: ratio against L, {}-byte packets, MTU {}; back at {} every {} of L",
        a.limit, a.high, a.packet, a.mtu, report.stable, report.period
    );
    println!("{:>4} {:>12} {:>12}", "L", "simulated", "formula");
    for p in &report.points {
        println!("{:>4} {:>12.4} {:>12.4}", p.low, p.simulated, p.formula);
    }
    for (l, m) in &report.measured {
        println!("measured by seed 004 at L={l}: {m:.3}");
    }
    if let Some(p) = &a.plot {
        println!("plot written to {}", p.display());
    }
    Ok(())
}

// ---- plan -----------------------------------------------------------------

fn write_file(dir: &Path, name: &str, text: &str) -> QosResult<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

fn plan_cmd(a: PlanArgs) -> QosResult<()> {
    let text = std::fs::read_to_string(&a.config)
        .map_err(|e| format!("cannot read {}: {e}", a.config.display()))?;
    let config =
        PlanConfig::from_toml(&text).map_err(|e| format!("{}: {e}", a.config.display()))?;
    let p = plan(&config).map_err(|e| format!("{}: {e}", a.config.display()))?;
    let conf = p.opensm_conf();
    let policy = p.qos_policy();
    let written = match &a.out {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            Some((
                write_file(dir, "opensm.conf", &conf)?,
                write_file(dir, "qos-policy.conf", &policy)?,
            ))
        }
        None => None,
    };
    if a.format == Format::Json {
        #[derive(Serialize)]
        struct Out<'a> {
            plan: &'a Plan,
            high_share: f64,
            opensm_conf: &'a str,
            qos_policy: &'a str,
        }
        return print_json(&Out {
            plan: &p,
            high_share: p.high_share(),
            opensm_conf: &conf,
            qos_policy: &policy,
        });
    }
    print_plan(&p);
    match written {
        Some((c, q)) => println!("wrote {} and {}", c.display(), q.display()),
        None => {
            println!("\n--- opensm.conf fragment ---\n{conf}");
            println!("--- qos-policy.conf ---\n{policy}");
        }
    }
    Ok(())
}

fn print_plan(p: &Plan) {
    let (w, cap) = p.high_weight();
    println!(
        "port: {} Gb/s, MTU {}, {}-entry high table ({} model), {} data VLs",
        p.rate_gbps, p.mtu, p.table_entries, p.model, p.max_vls
    );
    println!(
        "reserved {} Gb/s; high weight {w} of {cap}; {} entries free; qos_high_limit {}{} \
         (high table's share under saturation {:.1} %); one entry ≤ {:.2} µs",
        p.reserved_gbps,
        p.free_entries,
        p.high_limit,
        if p.high_limit_derived {
            " (derived)"
        } else {
            ""
        },
        p.high_share() * 100.0,
        p.slot_us
    );
    println!(
        "{:<20} {:<5} {:>3} {:>3} {:>9} {:>8} {:>8} {:>11}",
        "class", "kind", "SL", "VL", "distance", "entries", "weight", "delay ≤ µs"
    );
    for c in &p.classes {
        println!(
            "{:<20} {:<5} {:>3} {:>3} {:>9} {:>8} {:>8} {:>11}",
            if c.implicit {
                format!("{} (added)", c.name)
            } else {
                c.name.clone()
            },
            c.kind.to_string(),
            c.sl,
            c.vl,
            c.distance.map_or("-".into(), |d| d.to_string()),
            c.positions.len(),
            c.weight,
            c.delay_bound_us.map_or("-".into(), |d| format!("{d:.2}"))
        );
    }
}
