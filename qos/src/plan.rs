//! From an operator's list of traffic classes to OpenSM settings.
//!
//! The input (TOML) describes one kind of port (link rate, MTU, the size of its
//! high-priority VL arbitration table) and the classes sharing it. Guaranteed
//! classes (DBTS, DB) are admitted into the high table with [`Table`], exactly
//! as the server admits connections; the others get low-table entries. The
//! output is an `opensm.conf` fragment (`qos_max_vls`, `qos_high_limit`,
//! `qos_vlarb_high`, `qos_vlarb_low`, `qos_sl2vl`) and a `qos-policy.conf`
//! mapping each class to its service level.
//!
//! Service levels: distance class `2^i` (i = 1..n) is SL `i − 1`, shared by
//! every guaranteed class of that distance; each non-guaranteed class gets
//! its own SL after those. Lanes: one per distance class in use (a VL never
//! mixes distances), then one per non-guaranteed class. Unused SLs map to
//! the default (best-effort) lane.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::admission::{Link, Refusal, Request, Table, TableConfig, MAX_WEIGHT};
use crate::arbiter::{ArbEntry, LIMIT_UNIT};
use crate::class::TrafficClass;
use crate::manage::Model;
use crate::workload::level_of_distance;

/// The whole input file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanConfig {
    /// The port the classes share.
    pub port: PortConfig,
    /// The classes, in priority of admission.
    #[serde(default, rename = "class")]
    pub classes: Vec<ClassConfig>,
}

/// The `[port]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortConfig {
    /// Data rate of the link, Gb/s (e.g. 100 for EDR 4x).
    pub rate_gbps: f64,
    /// MTU in bytes.
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// Entries of the high-priority table: the ports' VLArbHighCap, a power
    /// of two up to 64 (OpenSM writes only that many).
    #[serde(default = "default_entries")]
    pub table_entries: u32,
    /// Data VLs (OpenSM `qos_max_vls`): 1, 2, 4, 8 or 15.
    #[serde(default = "default_max_vls")]
    pub max_vls: u8,
    /// LimitOfHighPriority; derived from the reserved share when absent.
    #[serde(default)]
    pub high_limit: Option<u8>,
    /// Management model for the table (`m1`, `m2`, `m3`, `smart`).
    #[serde(default)]
    pub model: Option<String>,
}

fn default_mtu() -> u32 {
    2048
}
fn default_entries() -> u32 {
    64
}
fn default_max_vls() -> u8 {
    8
}

/// One `[[class]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassConfig {
    /// Name (letters, digits, `-`, `_`, `.`), also the QoS level's name.
    pub name: String,
    /// `dbts`, `db`, `pbe`, `be` or `ch`.
    pub kind: TrafficClass,
    /// Guaranteed mean bandwidth, Gb/s (DBTS, DB).
    #[serde(default)]
    pub bandwidth_gbps: Option<f64>,
    /// Delay bound at each hop, µs (DBTS).
    #[serde(default)]
    pub delay_us: Option<f64>,
    /// Low-table entries (PBE, BE, CH); default by kind.
    #[serde(default)]
    pub entries: Option<u32>,
    /// Low-table weight per entry (PBE, BE, CH); default by kind.
    #[serde(default)]
    pub weight: Option<u8>,
    /// Port GUIDs of the class's hosts: traffic from or to them is the class's.
    #[serde(default)]
    pub port_guids: Vec<String>,
    /// Service IDs or ranges (`0x10` or `0x10-0x1f`) of the class's traffic.
    #[serde(default)]
    pub service_ids: Vec<String>,
    /// P_Keys or ranges of the class's partitions.
    #[serde(default)]
    pub pkeys: Vec<String>,
}

/// Why a plan cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The file is not valid TOML of this shape.
    #[error("{0}")]
    Syntax(String),
    /// A port setting is out of range.
    #[error("[port]: {0}")]
    Port(String),
    /// A class setting is wrong.
    #[error("class {name:?}: {problem}")]
    Class {
        /// The class.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// A guaranteed class does not fit the table.
    #[error("class {name:?} does not fit: {refusal}{hint}")]
    Refused {
        /// The class.
        name: String,
        /// The table's answer.
        refusal: Refusal,
        /// What would still fit, in words.
        hint: String,
    },
    /// More lanes needed than the port has.
    #[error("the classes need {needed} data VLs (one per distance class in use, one per non-guaranteed class) but max_vls is {max}")]
    TooManyLanes {
        /// Lanes needed.
        needed: usize,
        /// Lanes available.
        max: u8,
    },
    /// More service levels needed than 16.
    #[error("the classes need {0} service levels; InfiniBand has 16")]
    TooManyLevels(usize),
    /// The low table would exceed 64 entries.
    #[error("the low-priority table would have {0} entries; at most 64")]
    LowTableTooLong(usize),
}

/// A class as planned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedClass {
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: TrafficClass,
    /// Service level.
    pub sl: u8,
    /// Virtual lane.
    pub vl: u8,
    /// Distance class (guaranteed classes).
    pub distance: Option<u32>,
    /// Its entries: for a guaranteed class the high-table positions of its
    /// lane (shared with the other classes of its distance), otherwise its
    /// low-table positions.
    pub positions: Vec<u32>,
    /// For a guaranteed class the summed weight of those entries, otherwise
    /// the weight of each of its low entries.
    pub weight: u32,
    /// Reserved bandwidth, Gb/s.
    pub bandwidth_gbps: Option<f64>,
    /// Delay asked for, µs.
    pub delay_us: Option<f64>,
    /// Delay the table bounds at each hop: the largest gap between two
    /// consecutive entries of its lane (at most its distance) times one
    /// entry's worst case, µs.
    pub delay_bound_us: Option<f64>,
    /// Port GUIDs, normalized to 16 hex digits.
    pub port_guids: Vec<String>,
    /// Service ID values or ranges.
    pub service_ids: Vec<String>,
    /// P_Key values or ranges.
    pub pkeys: Vec<String>,
    /// Added by the planner for default traffic (no BE class was given).
    pub implicit: bool,
}

/// The settings for one kind of port.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Link rate, Gb/s.
    pub rate_gbps: f64,
    /// MTU, bytes.
    pub mtu: u32,
    /// High-table entries.
    pub table_entries: u32,
    /// Data VLs.
    pub max_vls: u8,
    /// Management model used to place the sequences.
    pub model: String,
    /// LimitOfHighPriority.
    pub high_limit: u8,
    /// Whether the limit was derived (not given).
    pub high_limit_derived: bool,
    /// Reserved bandwidth of the guaranteed classes, Gb/s.
    pub reserved_gbps: f64,
    /// Worst-case time of one high-table entry, µs.
    pub slot_us: f64,
    /// Free high-table entries.
    pub free_entries: u32,
    /// The classes.
    pub classes: Vec<PlannedClass>,
    /// High-priority table, by position.
    pub vlarb_high: Vec<ArbEntry>,
    /// Low-priority table, by position.
    pub vlarb_low: Vec<ArbEntry>,
    /// VL of each SL.
    pub sl2vl: [u8; 16],
    /// SL of traffic no rule matches.
    pub default_sl: u8,
}

fn class_err(name: &str, problem: impl Into<String>) -> PlanError {
    PlanError::Class {
        name: name.to_owned(),
        problem: problem.into(),
    }
}

/// `0x…` (or decimal) as an integer no larger than `max`.
fn parse_number(s: &str, max: u64) -> Option<u64> {
    let s = s.trim();
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => s.parse().ok()?,
    };
    (v <= max).then_some(v)
}

/// A value or an ascending `a-b` range, normalized to hex.
fn parse_range(s: &str, max: u64, digits: usize) -> Option<String> {
    match s.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (parse_number(a, max)?, parse_number(b, max)?);
            (a <= b).then(|| format!("0x{a:0digits$x}-0x{b:0digits$x}"))
        }
        None => parse_number(s, max).map(|v| format!("0x{v:0digits$x}")),
    }
}

impl PlanConfig {
    /// Parses the TOML text.
    pub fn from_toml(text: &str) -> Result<Self, PlanError> {
        toml::from_str(text).map_err(|e| PlanError::Syntax(e.to_string()))
    }
}

/// The smallest LimitOfHighPriority that lets the high table carry a share
/// `f` of the link while low-priority traffic saturates it: the high table
/// gets `Q·4096` bytes per low packet of one MTU, so `Q·4096 / (Q·4096 + MTU)
/// ≥ f`. Anything larger only starves the low classes further.
pub fn derived_high_limit(share: f64, mtu: u32) -> u8 {
    if share <= 0.0 {
        0
    } else if share >= 1.0 {
        255
    } else {
        // The small slack keeps an exact quotient (0.8 → 4) from rounding up.
        let q = (share * mtu as f64 / ((1.0 - share) * LIMIT_UNIT as f64) - 1e-9).ceil();
        q.clamp(1.0, 254.0) as u8
    }
}

/// Makes the plan.
pub fn plan(config: &PlanConfig) -> Result<Plan, PlanError> {
    let port = &config.port;
    if !(port.rate_gbps.is_finite() && port.rate_gbps > 0.0) {
        return Err(PlanError::Port("rate_gbps must be positive".into()));
    }
    if ![256, 512, 1024, 2048, 4096].contains(&port.mtu) {
        return Err(PlanError::Port(format!(
            "mtu {} is not 256, 512, 1024, 2048 or 4096",
            port.mtu
        )));
    }
    if !port.table_entries.is_power_of_two() || !(2..=64).contains(&port.table_entries) {
        return Err(PlanError::Port(format!(
            "table_entries {} is not a power of two from 2 to 64",
            port.table_entries
        )));
    }
    if ![1, 2, 4, 8, 15].contains(&port.max_vls) {
        return Err(PlanError::Port(format!(
            "max_vls {} is not 1, 2, 4, 8 or 15",
            port.max_vls
        )));
    }
    let model: Model = match &port.model {
        Some(m) => m.parse().map_err(|e| PlanError::Port(format!("{e}")))?,
        None => Model::Smart,
    };
    let bits = port.table_entries.trailing_zeros();

    // Check every class before placing any.
    let mut names = BTreeSet::new();
    let mut classes = config.classes.clone();
    for c in &classes {
        let ok_name = !c.name.is_empty()
            && c.name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch));
        if !ok_name {
            return Err(class_err(
                &c.name,
                "names are letters, digits, '-', '_' and '.'",
            ));
        }
        if c.name.eq_ignore_ascii_case("default") {
            return Err(class_err(&c.name, "DEFAULT is OpenSM's own QoS level"));
        }
        if !names.insert(c.name.to_ascii_lowercase()) {
            return Err(class_err(&c.name, "defined twice"));
        }
        match c.kind {
            TrafficClass::Dbts | TrafficClass::Db => {
                match c.bandwidth_gbps {
                    Some(b) if b.is_finite() && b > 0.0 => {}
                    _ => return Err(class_err(&c.name, "needs a positive bandwidth_gbps")),
                }
                if c.kind == TrafficClass::Dbts
                    && !matches!(c.delay_us, Some(d) if d.is_finite() && d > 0.0)
                {
                    return Err(class_err(&c.name, "dbts needs a positive delay_us"));
                }
                if c.kind == TrafficClass::Db && c.delay_us.is_some() {
                    return Err(class_err(&c.name, "db has no delay bound: use dbts"));
                }
                if c.entries.is_some() || c.weight.is_some() {
                    return Err(class_err(
                        &c.name,
                        "entries and weight are for non-guaranteed classes; they follow from the bandwidth",
                    ));
                }
            }
            _ => {
                if c.bandwidth_gbps.is_some() || c.delay_us.is_some() {
                    return Err(class_err(
                        &c.name,
                        format!(
                            "{} guarantees nothing: no bandwidth_gbps or delay_us",
                            c.kind
                        ),
                    ));
                }
                if c.entries == Some(0) || c.weight == Some(0) {
                    return Err(class_err(&c.name, "entries and weight must be at least 1"));
                }
            }
        }
        for g in &c.port_guids {
            parse_number(g, u64::MAX).ok_or_else(|| {
                class_err(&c.name, format!("port GUID {g:?} is not a 64-bit number"))
            })?;
        }
        for s in &c.service_ids {
            parse_range(s, u64::MAX, 16).ok_or_else(|| {
                class_err(
                    &c.name,
                    format!("service ID {s:?} is not a number or range"),
                )
            })?;
        }
        for p in &c.pkeys {
            parse_range(p, 0xffff, 4).ok_or_else(|| {
                class_err(
                    &c.name,
                    format!("P_Key {p:?} is not a 16-bit number or range"),
                )
            })?;
        }
    }
    // Traffic that matches no rule needs a best-effort lane.
    let implicit = !classes.iter().any(|c| c.kind == TrafficClass::Be);
    if implicit {
        classes.push(ClassConfig {
            name: "best-effort".into(),
            kind: TrafficClass::Be,
            bandwidth_gbps: None,
            delay_us: None,
            entries: None,
            weight: None,
            port_guids: vec![],
            service_ids: vec![],
            pkeys: vec![],
        });
    }

    let link = Link::gbps(port.rate_gbps, port.mtu);
    let reserved_gbps: f64 = classes.iter().filter_map(|c| c.bandwidth_gbps).sum();
    let (high_limit, high_limit_derived) = match port.high_limit {
        Some(q) => (q, false),
        None => (
            derived_high_limit(reserved_gbps / port.rate_gbps, port.mtu),
            true,
        ),
    };
    let mut tc = TableConfig::new(link);
    tc.entries = port.table_entries;
    tc.model = model;
    tc.high_limit = high_limit;

    // Distance class of each guaranteed class.
    let mut distance = vec![None; classes.len()];
    for (i, c) in classes.iter().enumerate() {
        distance[i] = match c.kind {
            TrafficClass::Dbts => {
                let delay = std::time::Duration::from_secs_f64(c.delay_us.unwrap_or(0.0) * 1e-6);
                let r =
                    Request::with_delay(1.0, delay, &tc).map_err(|refusal| PlanError::Refused {
                        name: c.name.clone(),
                        refusal,
                        hint: String::new(),
                    })?;
                Some(r.distance)
            }
            TrafficClass::Db => Some(port.table_entries),
            _ => None,
        };
    }

    // Lanes: distance classes in use (shortest distance first), then the
    // non-guaranteed classes in file order.
    let levels: BTreeSet<u32> = distance
        .iter()
        .flatten()
        .map(|&d| level_of_distance(d))
        .collect();
    let low: Vec<usize> = (0..classes.len())
        .filter(|&i| distance[i].is_none())
        .collect();
    let needed = levels.len() + low.len();
    if needed > port.max_vls as usize {
        return Err(PlanError::TooManyLanes {
            needed,
            max: port.max_vls,
        });
    }
    let sls_needed = bits as usize + low.len();
    if sls_needed > 16 {
        return Err(PlanError::TooManyLevels(sls_needed));
    }
    let mut lanes = vec![None; bits as usize + 1];
    for (vl, &level) in levels.iter().enumerate() {
        lanes[level as usize] = Some(vl as u8);
    }
    tc.lanes = lanes;

    // Admit the guaranteed classes.
    let mut table = Table::new(tc.clone()).map_err(|e| PlanError::Port(e.to_string()))?;
    let mut out: Vec<PlannedClass> = Vec::new();
    let mut admitted = Vec::new();
    for (i, c) in classes.iter().enumerate() {
        let Some(d) = distance[i] else { continue };
        let bw = c.bandwidth_gbps.unwrap_or(0.0) * 1e9 / 8.0;
        match table.admit(Request::new(bw, d)) {
            Ok(a) => admitted.push((i, a)),
            Err(refusal) => {
                let hint = match &refusal {
                    Refusal::NoRoom { headroom, .. } => format!(
                        " (still fits at distance {d}: {:.3} Gb/s; {} entries free{})",
                        headroom.bytes_per_second * 8.0 / 1e9,
                        headroom.free_entries,
                        headroom
                            .smallest_distance
                            .map(|s| format!(", the tightest new distance is {s}"))
                            .unwrap_or_default()
                    ),
                    _ => String::new(),
                };
                return Err(PlanError::Refused {
                    name: c.name.clone(),
                    refusal,
                    hint,
                });
            }
        }
    }
    let slot_us = tc.slot_seconds() * 1e6;
    // Positions can move while later classes are admitted: read them at the end.
    let vlarb_high = table.arbitration();
    for (i, a) in &admitted {
        let c = &classes[*i];
        let positions: Vec<u32> = (0..port.table_entries)
            .filter(|&p| {
                let e = vlarb_high[p as usize];
                e.weight > 0 && e.vl == a.vl
            })
            .collect();
        let weight = positions
            .iter()
            .map(|&p| vlarb_high[p as usize].weight as u32)
            .sum();
        let gap = max_gap(&positions, port.table_entries);
        out.push(PlannedClass {
            name: c.name.clone(),
            kind: c.kind,
            sl: (level_of_distance(a.distance) - 1) as u8,
            vl: a.vl,
            distance: Some(a.distance),
            positions,
            weight,
            bandwidth_gbps: c.bandwidth_gbps,
            delay_us: c.delay_us,
            delay_bound_us: Some(gap as f64 * slot_us),
            port_guids: vec![],
            service_ids: vec![],
            pkeys: vec![],
            implicit: false,
        });
    }

    // The low table: classes interleaved round by round, so that a class's
    // several entries are spread over the cycle.
    let shares: Vec<(usize, u32, u8)> = low
        .iter()
        .map(|&i| {
            let c = &classes[i];
            let (e, w) = c.kind.low_table_default().expect("non-guaranteed");
            (i, c.entries.unwrap_or(e), c.weight.unwrap_or(w))
        })
        .collect();
    let total: usize = shares.iter().map(|s| s.1 as usize).sum();
    if total > 64 {
        return Err(PlanError::LowTableTooLong(total));
    }
    let mut vlarb_low = Vec::new();
    let mut low_positions = vec![Vec::new(); shares.len()];
    let first_low_vl = levels.len() as u8;
    for round in 0.. {
        let before = vlarb_low.len();
        for (k, &(_, entries, weight)) in shares.iter().enumerate() {
            if round < entries {
                low_positions[k].push(vlarb_low.len() as u32);
                vlarb_low.push(ArbEntry {
                    vl: first_low_vl + k as u8,
                    weight,
                });
            }
        }
        if vlarb_low.len() == before {
            break;
        }
    }
    for (k, &(i, _, weight)) in shares.iter().enumerate() {
        let c = &classes[i];
        out.push(PlannedClass {
            name: c.name.clone(),
            kind: c.kind,
            sl: (bits as usize + k) as u8,
            vl: first_low_vl + k as u8,
            distance: None,
            positions: low_positions[k].clone(),
            weight: weight as u32,
            bandwidth_gbps: None,
            delay_us: None,
            delay_bound_us: None,
            port_guids: vec![],
            service_ids: vec![],
            pkeys: vec![],
            implicit: implicit && i == classes.len() - 1,
        });
    }
    // Matching criteria, normalized, in the order of the file.
    for p in &mut out {
        let c = classes
            .iter()
            .find(|c| c.name == p.name)
            .expect("planned from a class");
        p.port_guids = c
            .port_guids
            .iter()
            .map(|g| format!("0x{:016x}", parse_number(g, u64::MAX).expect("checked")))
            .collect();
        p.service_ids = c
            .service_ids
            .iter()
            .map(|s| parse_range(s, u64::MAX, 16).expect("checked"))
            .collect();
        p.pkeys = c
            .pkeys
            .iter()
            .map(|s| parse_range(s, 0xffff, 4).expect("checked"))
            .collect();
    }
    let order = |name: &str| classes.iter().position(|c| c.name == name);
    out.sort_by_key(|p| order(&p.name));

    let default = out
        .iter()
        .find(|p| p.kind == TrafficClass::Be)
        .expect("a BE class exists");
    let (default_sl, default_vl) = (default.sl, default.vl);
    let mut sl2vl = [default_vl; 16];
    for p in &out {
        sl2vl[p.sl as usize] = p.vl;
    }

    Ok(Plan {
        rate_gbps: port.rate_gbps,
        mtu: port.mtu,
        table_entries: port.table_entries,
        max_vls: port.max_vls,
        model: model.to_string(),
        high_limit,
        high_limit_derived,
        reserved_gbps,
        slot_us,
        free_entries: table.sets().free_entries(),
        classes: out,
        vlarb_high,
        vlarb_low,
        sl2vl,
        default_sl,
    })
}

/// The largest distance between cyclically consecutive positions.
fn max_gap(positions: &[u32], entries: u32) -> u32 {
    let (Some(&first), Some(&last)) = (positions.first(), positions.last()) else {
        return entries;
    };
    positions
        .windows(2)
        .map(|w| w[1] - w[0])
        .chain([first + entries - last])
        .max()
        .unwrap_or(entries)
}

fn vlarb_list(entries: &[ArbEntry]) -> String {
    entries
        .iter()
        .map(|e| format!("{}:{}", e.vl, e.weight))
        .collect::<Vec<_>>()
        .join(",")
}

impl Plan {
    /// The high-priority table's share of the link when both tables are
    /// saturated, as the IBA text and the ConnectX law both give it for
    /// MTU-sized packets: `Q·4096` high bytes per low packet.
    pub fn high_share(&self) -> f64 {
        let high = match self.high_limit {
            255 => return 1.0,
            // One high packet per low packet.
            0 => self.mtu as f64,
            q => q as f64 * LIMIT_UNIT as f64,
        };
        high / (high + self.mtu as f64)
    }

    /// The `opensm.conf` fragment.
    pub fn opensm_conf(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# QoS settings from `rcud qos plan`: {}-entry high-priority table, {} data VLs,",
            self.table_entries, self.max_vls
        );
        let _ = writeln!(
            s,
            "# link {} Gb/s, MTU {}. Merge into opensm.conf or pass with -F; the QoS",
            self.rate_gbps, self.mtu
        );
        let _ = writeln!(
            s,
            "# policy file goes with -Y (default /etc/opensm/qos-policy.conf)."
        );
        let _ = writeln!(s, "qos TRUE");
        let _ = writeln!(s, "qos_max_vls {}", self.max_vls);
        let _ = writeln!(s, "qos_high_limit {}", self.high_limit);
        let _ = writeln!(s, "qos_vlarb_high {}", vlarb_list(&self.vlarb_high));
        let _ = writeln!(s, "qos_vlarb_low {}", vlarb_list(&self.vlarb_low));
        let sl2vl: Vec<String> = self.sl2vl.iter().map(|v| v.to_string()).collect();
        let _ = writeln!(s, "qos_sl2vl {}", sl2vl.join(","));
        s
    }

    /// The `qos-policy.conf` file.
    pub fn qos_policy(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# QoS policy from `rcud qos plan`: one QoS level per class; traffic"
        );
        let _ = writeln!(
            s,
            "# from or to a class's ports, or with its service IDs or P_Keys, gets"
        );
        let _ = writeln!(
            s,
            "# the class's service level. Everything else is DEFAULT (best effort)."
        );
        let grouped: Vec<&PlannedClass> = self
            .classes
            .iter()
            .filter(|c| !c.port_guids.is_empty())
            .collect();
        if !grouped.is_empty() {
            let _ = writeln!(s, "\nport-groups");
            for c in &grouped {
                let _ = writeln!(s, "    port-group");
                let _ = writeln!(s, "        name: {}-ports", c.name);
                let _ = writeln!(s, "        port-guid: {}", c.port_guids.join(", "));
                let _ = writeln!(s, "    end-port-group");
            }
            let _ = writeln!(s, "end-port-groups");
        }
        let _ = writeln!(s, "\nqos-levels");
        let default = self
            .classes
            .iter()
            .find(|c| c.sl == self.default_sl)
            .map_or("best effort", |c| c.name.as_str());
        let _ = writeln!(s, "    qos-level");
        let _ = writeln!(s, "        name: DEFAULT");
        let _ = writeln!(s, "        use: unmatched traffic as class {default}");
        let _ = writeln!(s, "        sl: {}", self.default_sl);
        let _ = writeln!(s, "    end-qos-level");
        for c in &self.classes {
            let _ = writeln!(s, "    qos-level");
            let _ = writeln!(s, "        name: {}", c.name);
            let what = match (c.bandwidth_gbps, c.delay_us) {
                (Some(b), Some(d)) => format!("{} {b} Gbps within {d} us", c.kind),
                (Some(b), None) => format!("{} {b} Gbps", c.kind),
                _ => format!(
                    "{} weight {} on {} entries",
                    c.kind,
                    c.weight,
                    c.positions.len()
                ),
            };
            let _ = writeln!(s, "        use: {what}");
            let _ = writeln!(s, "        sl: {}", c.sl);
            let _ = writeln!(s, "    end-qos-level");
        }
        let _ = writeln!(s, "end-qos-levels");
        let mut rules = String::new();
        for c in &self.classes {
            let mut rule = |criterion: &str, value: &str, why: &str| {
                let _ = writeln!(rules, "    qos-match-rule");
                let _ = writeln!(rules, "        use: {} {why}", c.name);
                let _ = writeln!(rules, "        {criterion}: {value}");
                let _ = writeln!(rules, "        qos-level-name: {}", c.name);
                let _ = writeln!(rules, "    end-qos-match-rule");
            };
            if !c.port_guids.is_empty() {
                let group = format!("{}-ports", c.name);
                rule("source", &group, "from its ports");
                rule("destination", &group, "to its ports");
            }
            if !c.service_ids.is_empty() {
                rule("service-id", &c.service_ids.join(", "), "by service ID");
            }
            if !c.pkeys.is_empty() {
                rule("pkey", &c.pkeys.join(", "), "by partition");
            }
        }
        if !rules.is_empty() {
            let _ = writeln!(s, "\nqos-match-rules\n{rules}end-qos-match-rules");
        }
        s
    }

    /// Total weight of the high table, and its capacity.
    pub fn high_weight(&self) -> (u32, u32) {
        (
            self.vlarb_high.iter().map(|e| e.weight as u32).sum(),
            self.table_entries * MAX_WEIGHT,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
        [port]
        rate_gbps = 100
        mtu = 2048

        [[class]]
        name = "inference"
        kind = "dbts"
        bandwidth_gbps = 10
        delay_us = 20
        port_guids = ["0x0002c903000e0b72", "0x2c903000e0b73"]

        [[class]]
        name = "training"
        kind = "db"
        bandwidth_gbps = 40

        [[class]]
        name = "interactive"
        kind = "pbe"
        service_ids = ["0x10000-0x1ffff"]

        [[class]]
        name = "backup"
        kind = "ch"
        pkeys = ["0x8002"]
    "#;

    fn example() -> Plan {
        plan(&PlanConfig::from_toml(EXAMPLE).unwrap()).unwrap()
    }

    #[test]
    fn guaranteed_classes_get_high_entries_by_distance() {
        let p = example();
        // 50 of 100 Gb/s reserved: Q ≥ 0.5·2048 / (0.5·4096) = 0.5 → 1.
        assert_eq!((p.high_limit, p.high_limit_derived), (1, true));
        let inf = &p.classes[0];
        // Slot at Q = 1: 16320 + 2048 bytes plus 5 low packets = 28608 B, 2.289 µs;
        // 20 µs is 8.7 slots: distance 8, SL 2, the first lane.
        assert!((p.slot_us - 28608.0 * 8.0 / 100e3).abs() < 1e-9);
        assert_eq!((inf.distance, inf.sl, inf.vl), (Some(8), 2, 0));
        assert_eq!(inf.positions.len(), 8);
        assert!(inf.positions.windows(2).all(|w| w[1] - w[0] == 8));
        // 10 of 100 Gb/s is 1632 of 16320 units.
        assert_eq!(inf.weight, 1632);
        let tr = &p.classes[1];
        // DB: distance 64, but 6528 units need 26 entries → 32 entries.
        assert_eq!((tr.distance, tr.sl, tr.vl), (Some(64), 5, 1));
        assert_eq!((tr.positions.len(), tr.weight), (32, 6528));
        assert_eq!(p.free_entries, 64 - 8 - 32);
        assert_eq!(p.high_weight().0, 1632 + 6528);
        // Bounds from the real spacing: 8 × 2.289 µs; the DB lane has an
        // entry every 2 positions although it asked for no bound.
        assert!((inf.delay_bound_us.unwrap() - 8.0 * p.slot_us).abs() < 1e-9);
        assert!((tr.delay_bound_us.unwrap() - 2.0 * p.slot_us).abs() < 1e-9);
        assert_eq!(max_gap(&[3], 8), 8);
        assert_eq!(max_gap(&[0, 1, 6], 8), 5);
    }

    #[test]
    fn other_classes_share_the_low_table_and_unmatched_traffic_is_best_effort() {
        let p = example();
        let names: Vec<&str> = p.classes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "inference",
                "training",
                "interactive",
                "backup",
                "best-effort"
            ]
        );
        let be = &p.classes[4];
        assert!(be.implicit);
        // PBE 4×255, CH 1×1, BE 1×10, interleaved.
        let low: Vec<(u8, u8)> = p.vlarb_low.iter().map(|e| (e.vl, e.weight)).collect();
        assert_eq!(
            low,
            [(2, 255), (3, 1), (4, 10), (2, 255), (2, 255), (2, 255)]
        );
        assert_eq!(p.default_sl, be.sl);
        // SLs 2 and 5 (distances), 6, 7, 8 (low classes); the rest to BE's VL 4.
        assert_eq!(p.sl2vl, [4, 4, 0, 4, 4, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4]);
    }

    #[test]
    fn opensm_files_carry_the_plan() {
        let p = example();
        let conf = p.opensm_conf();
        assert!(conf.contains("\nqos TRUE\nqos_max_vls 8\nqos_high_limit 1\n"));
        let high = conf
            .lines()
            .find(|l| l.starts_with("qos_vlarb_high "))
            .unwrap();
        assert_eq!(high.split(',').count(), 64);
        assert!(conf.contains("\nqos_vlarb_low 2:255,3:1,4:10,2:255,2:255,2:255\n"));
        assert!(conf.contains("\nqos_sl2vl 4,4,0,4,4,1,2,3,4,4,4,4,4,4,4,4\n"));
        let pol = p.qos_policy();
        assert!(pol.contains("port-guid: 0x0002c903000e0b72, 0x0002c903000e0b73"));
        assert!(pol.contains("        source: inference-ports\n        qos-level-name: inference"));
        assert!(pol.contains("service-id: 0x0000000000010000-0x000000000001ffff"));
        assert!(pol.contains("pkey: 0x8002"));
        assert!(pol.contains(
            "name: DEFAULT\n        use: unmatched traffic as class best-effort\n        sl: 8"
        ));
    }

    #[test]
    fn mistakes_are_reported_by_class() {
        let bad = |classes: &str| {
            let text = format!("[port]\nrate_gbps = 100\n{classes}");
            plan(&PlanConfig::from_toml(&text).unwrap()).unwrap_err()
        };
        let e = bad("[[class]]\nname = \"a\"\nkind = \"dbts\"\nbandwidth_gbps = 1\n");
        assert!(e.to_string().contains("delay_us"), "{e}");
        let e = bad("[[class]]\nname = \"a\"\nkind = \"be\"\nbandwidth_gbps = 1\n");
        assert!(e.to_string().contains("guarantees nothing"), "{e}");
        let e = bad("[[class]]\nname = \"a b\"\nkind = \"be\"\n");
        assert!(matches!(e, PlanError::Class { .. }), "{e}");
        let e = bad("[[class]]\nname = \"a\"\nkind = \"db\"\nbandwidth_gbps = 60\n[[class]]\nname = \"b\"\nkind = \"db\"\nbandwidth_gbps = 50\n");
        assert!(matches!(e, PlanError::Refused { .. }), "{e}");
        assert!(e.to_string().contains("still fits"), "{e}");
        let e =
            bad("[[class]]\nname = \"a\"\nkind = \"dbts\"\nbandwidth_gbps = 1\ndelay_us = 0.1\n");
        assert!(e.to_string().contains("below"), "{e}");
        let e = bad("[[class]]\nname = \"a\"\nkind = \"be\"\nport_guids = [\"0xzz\"]\n");
        assert!(e.to_string().contains("GUID"), "{e}");
        assert!(PlanConfig::from_toml("[port]\nrate_gbps = 1\nspeed = 3\n").is_err());
        let text = "[port]\nrate_gbps = 100\nmax_vls = 2\n[[class]]\nname = \"a\"\nkind = \"pbe\"\n[[class]]\nname = \"b\"\nkind = \"ch\"\n";
        let e = plan(&PlanConfig::from_toml(text).unwrap()).unwrap_err();
        assert!(
            matches!(e, PlanError::TooManyLanes { needed: 3, max: 2 }),
            "{e}"
        );
    }

    #[test]
    fn the_derived_limit_is_the_smallest_that_carries_the_reservations() {
        assert_eq!(derived_high_limit(0.0, 2048), 0);
        assert_eq!(derived_high_limit(1.0, 2048), 255);
        assert_eq!(derived_high_limit(0.9, 2048), 5);
        for (f, mtu) in [(0.3, 2048), (0.8, 4096), (0.95, 2048), (0.99, 4096)] {
            let q = derived_high_limit(f, mtu) as f64;
            let share = |q: f64| q * 4096.0 / (q * 4096.0 + mtu as f64);
            assert!(share(q) >= f - 1e-12, "{f} {mtu}: {q}");
            assert!(q == 1.0 || share(q - 1.0) < f - 1e-12, "{f} {mtu}: {q}");
        }
    }
}
