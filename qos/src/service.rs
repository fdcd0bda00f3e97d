//! What one connection asks for: a traffic class with, for the guaranteed
//! classes, a bandwidth and (DBTS) a delay bound. Written as
//! `class=dbts,bandwidth=2GB/s,latency=200us` in a client's `RCUD_QOS` and
//! in a server's tenant configuration.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::admission::{Refusal, Request, TableConfig};
use crate::class::TrafficClass;

/// A connection's service class.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServiceRequest {
    /// The traffic class.
    pub class: TrafficClass,
    /// Mean bandwidth in bytes per second (DBTS and DB only).
    pub bytes_per_second: Option<f64>,
    /// Delay bound (DBTS only).
    pub latency: Option<Duration>,
}

/// A service class that cannot be read or makes no sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// A `key=value` item is malformed or its key unknown.
    #[error("{0:?} is not one of class=, bandwidth=, latency=")]
    BadItem(String),
    /// The class name is unknown.
    #[error(transparent)]
    Class(#[from] crate::class::UnknownClass),
    /// A bandwidth such as `2GB/s`, `800MB/s` or `10Gb/s` was expected.
    #[error("{0:?} is not a bandwidth (e.g. 2GB/s, 800MB/s, 10Gb/s)")]
    BadBandwidth(String),
    /// A duration such as `200us`, `1ms` or `2s` was expected.
    #[error("{0:?} is not a latency (e.g. 200us, 1ms)")]
    BadLatency(String),
    /// No `class=` item.
    #[error("no class= given")]
    NoClass,
    /// A guaranteed class without its bandwidth, or a delay bound on a
    /// class that has none.
    #[error("{0}")]
    Inconsistent(String),
}

impl ServiceRequest {
    /// Best effort: what a connection gets when nobody asks for anything.
    pub const BEST_EFFORT: ServiceRequest = ServiceRequest {
        class: TrafficClass::Be,
        bytes_per_second: None,
        latency: None,
    };

    /// The admission request of a guaranteed class on `config`'s link;
    /// `None` for the classes that share the low-priority table.
    pub fn admission(&self, config: &TableConfig) -> Option<Result<Request, Refusal>> {
        let bandwidth = self.bytes_per_second?;
        match (self.class, self.latency) {
            (TrafficClass::Dbts, Some(delay)) => {
                Some(Request::with_delay(bandwidth, delay, config))
            }
            (TrafficClass::Db, _) => Some(Ok(Request::bandwidth_only(bandwidth, config))),
            _ => None,
        }
    }

    /// Whether this request asks for no more than `ceiling`: a class at
    /// most as privileged, no more bandwidth and no tighter delay bound.
    pub fn within(&self, ceiling: &ServiceRequest) -> bool {
        // TrafficClass orders from the most privileged (DBTS) down.
        if self.class < ceiling.class {
            return false;
        }
        if self.class != ceiling.class {
            return true;
        }
        let bandwidth_ok = match (self.bytes_per_second, ceiling.bytes_per_second) {
            (Some(a), Some(b)) => a <= b,
            (None, _) => true,
            (Some(_), None) => false,
        };
        let latency_ok = match (self.latency, ceiling.latency) {
            (Some(a), Some(b)) => a >= b,
            (None, _) => true,
            (Some(_), None) => false,
        };
        bandwidth_ok && latency_ok
    }
}

impl FromStr for ServiceRequest {
    type Err = ServiceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut class = None;
        let mut bytes_per_second = None;
        let mut latency = None;
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| ServiceError::BadItem(item.to_owned()))?;
            match key.trim().to_ascii_lowercase().as_str() {
                "class" => class = Some(value.trim().parse::<TrafficClass>()?),
                "bandwidth" => bytes_per_second = Some(parse_bandwidth(value.trim())?),
                "latency" | "delay" => latency = Some(parse_latency(value.trim())?),
                _ => return Err(ServiceError::BadItem(item.to_owned())),
            }
        }
        let class = class.ok_or(ServiceError::NoClass)?;
        match class {
            TrafficClass::Dbts if bytes_per_second.is_none() || latency.is_none() => {
                return Err(ServiceError::Inconsistent(
                    "class dbts needs a bandwidth= and a latency=".into(),
                ))
            }
            TrafficClass::Db if bytes_per_second.is_none() => {
                return Err(ServiceError::Inconsistent(
                    "class db needs a bandwidth=".into(),
                ))
            }
            TrafficClass::Db if latency.is_some() => {
                return Err(ServiceError::Inconsistent(
                    "class db has no delay bound: use dbts for a latency=".into(),
                ))
            }
            TrafficClass::Pbe | TrafficClass::Be | TrafficClass::Ch
                if bytes_per_second.is_some() || latency.is_some() =>
            {
                return Err(ServiceError::Inconsistent(format!(
                    "class {class} has no guarantee: use db or dbts for a bandwidth= or latency="
                )))
            }
            _ => {}
        }
        Ok(ServiceRequest {
            class,
            bytes_per_second,
            latency,
        })
    }
}

impl fmt::Display for ServiceRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "class={}", self.class)?;
        if let Some(b) = self.bytes_per_second {
            write!(f, ",bandwidth={}", format_bandwidth(b))?;
        }
        if let Some(l) = self.latency {
            write!(f, ",latency={}us", l.as_micros())?;
        }
        Ok(())
    }
}

/// `2GB/s`, `800MB/s`, `10Gb/s`, `512KB/s`, or plain bytes per second.
pub fn parse_bandwidth(s: &str) -> Result<f64, ServiceError> {
    let bad = || ServiceError::BadBandwidth(s.to_owned());
    let body = s.strip_suffix("/s").unwrap_or(s);
    let split = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, unit) = body.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad())?;
    let scale = match unit.trim() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "Kb" | "kb" => 1e3 / 8.0,
        "Mb" => 1e6 / 8.0,
        "Gb" => 1e9 / 8.0,
        _ => return Err(bad()),
    };
    let bytes = value * scale;
    if bytes.is_finite() && bytes > 0.0 {
        Ok(bytes)
    } else {
        Err(bad())
    }
}

/// `200us`, `1.5ms`, `2s`, `500ns`.
pub fn parse_latency(s: &str) -> Result<Duration, ServiceError> {
    let bad = || ServiceError::BadLatency(s.to_owned());
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (number, unit) = s.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit.trim() {
        "ns" => value * 1e-9,
        "us" | "µs" => value * 1e-6,
        "ms" => value * 1e-3,
        "s" => value,
        _ => return Err(bad()),
    };
    if seconds.is_finite() && seconds > 0.0 {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(bad())
    }
}

fn format_bandwidth(b: f64) -> String {
    if b >= 1e9 {
        format!("{}GB/s", b / 1e9)
    } else if b >= 1e6 {
        format!("{}MB/s", b / 1e6)
    } else {
        format!("{b}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_example_reads_and_prints_back() {
        let r: ServiceRequest = "class=dbts,bandwidth=2GB/s,latency=200us".parse().unwrap();
        assert_eq!(r.class, TrafficClass::Dbts);
        assert_eq!(r.bytes_per_second, Some(2e9));
        assert_eq!(r.latency, Some(Duration::from_micros(200)));
        assert_eq!(r.to_string(), "class=dbts,bandwidth=2GB/s,latency=200us");
        assert_eq!(r.to_string().parse::<ServiceRequest>().unwrap(), r);
    }

    #[test]
    fn units_and_mistakes() {
        assert_eq!(parse_bandwidth("10Gb/s").unwrap(), 1.25e9);
        assert_eq!(parse_bandwidth("800MB/s").unwrap(), 8e8);
        assert!(parse_bandwidth("fast").is_err());
        assert!(parse_bandwidth("0GB/s").is_err());
        assert_eq!(parse_latency("1.5ms").unwrap(), Duration::from_micros(1500));
        assert!(parse_latency("soon").is_err());
        assert!(matches!(
            "class=db".parse::<ServiceRequest>(),
            Err(ServiceError::Inconsistent(_))
        ));
        assert!(matches!(
            "class=be,bandwidth=1GB/s".parse::<ServiceRequest>(),
            Err(ServiceError::Inconsistent(_))
        ));
        assert!(matches!(
            "class=gold".parse::<ServiceRequest>(),
            Err(ServiceError::Class(_))
        ));
        assert!(matches!(
            "speed=9".parse::<ServiceRequest>(),
            Err(ServiceError::BadItem(_))
        ));
        assert_eq!(
            "class=BE".parse::<ServiceRequest>().unwrap(),
            ServiceRequest::BEST_EFFORT
        );
    }

    #[test]
    fn a_request_within_a_ceiling() {
        let ceiling: ServiceRequest = "class=db,bandwidth=2GB/s".parse().unwrap();
        let less: ServiceRequest = "class=db,bandwidth=1GB/s".parse().unwrap();
        let more: ServiceRequest = "class=db,bandwidth=3GB/s".parse().unwrap();
        let dbts: ServiceRequest = "class=dbts,bandwidth=1GB/s,latency=1ms".parse().unwrap();
        assert!(less.within(&ceiling));
        assert!(!more.within(&ceiling));
        assert!(!dbts.within(&ceiling), "a more privileged class");
        assert!(ServiceRequest::BEST_EFFORT.within(&ceiling));
        let tight: ServiceRequest = "class=dbts,bandwidth=1GB/s,latency=100us".parse().unwrap();
        assert!(!tight.within(&dbts));
        assert!(dbts.within(&tight), "a looser delay bound");
    }
}
