//! Traffic classes (seed 002, section 4.2) and where each is arbitrated.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The five classes of traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrafficClass {
    /// Dedicated bandwidth, time sensitive: a bandwidth and a delay bound.
    Dbts,
    /// Dedicated bandwidth: a bandwidth, no delay bound.
    Db,
    /// Preferential best effort: no guarantee, better treated than BE.
    Pbe,
    /// Best effort.
    Be,
    /// Challenged: deliberately degraded (backups and the like).
    Ch,
}

impl TrafficClass {
    /// Whether the class is admitted into the high-priority table (with a
    /// guarantee); the others share the low-priority table.
    pub fn guaranteed(self) -> bool {
        matches!(self, TrafficClass::Dbts | TrafficClass::Db)
    }

    /// Default low-table share of a non-guaranteed class: `(entries, weight)`.
    /// The proportions are those seed 002 used (section 5.1.1): PBE four
    /// entries of 255, BE one of 10, CH one of 1.
    pub fn low_table_default(self) -> Option<(u32, u8)> {
        match self {
            TrafficClass::Pbe => Some((4, 255)),
            TrafficClass::Be => Some((1, 10)),
            TrafficClass::Ch => Some((1, 1)),
            TrafficClass::Dbts | TrafficClass::Db => None,
        }
    }
}

impl fmt::Display for TrafficClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrafficClass::Dbts => "dbts",
            TrafficClass::Db => "db",
            TrafficClass::Pbe => "pbe",
            TrafficClass::Be => "be",
            TrafficClass::Ch => "ch",
        })
    }
}

/// A class name that is not one of the five.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown traffic class {0:?}: use dbts, db, pbe, be or ch")]
pub struct UnknownClass(pub String);

impl FromStr for TrafficClass {
    type Err = UnknownClass;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "dbts" => Ok(TrafficClass::Dbts),
            "db" => Ok(TrafficClass::Db),
            "pbe" => Ok(TrafficClass::Pbe),
            "be" => Ok(TrafficClass::Be),
            "ch" => Ok(TrafficClass::Ch),
            _ => Err(UnknownClass(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guaranteed_classes_go_high_and_the_others_have_low_shares() {
        for c in [
            TrafficClass::Dbts,
            TrafficClass::Db,
            TrafficClass::Pbe,
            TrafficClass::Be,
            TrafficClass::Ch,
        ] {
            assert_eq!(c.to_string().parse::<TrafficClass>().unwrap(), c);
            assert_eq!(c.guaranteed(), c.low_table_default().is_none());
        }
        assert_eq!(TrafficClass::Pbe.low_table_default(), Some((4, 255)));
        assert!("gold".parse::<TrafficClass>().is_err());
    }
}
