//! Client configuration from the environment.
//!
//! `RCUD_SERVERS=host:port[#gpu][,host:port[#gpu]...]` lists the remote GPUs in
//! device-ordinal order. An entry without `#gpu` stands for every GPU of that
//! server.

use thiserror::Error;

/// One entry of `RCUD_SERVERS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    /// `host:port`.
    pub addr: String,
    /// One GPU of the server, or all of them.
    pub gpu: Option<u32>,
}

/// A malformed `RCUD_SERVERS`.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("invalid RCUD_SERVERS entry `{entry}`: {why}")]
pub struct ConfigError {
    entry: String,
    why: &'static str,
}

/// Parses a `RCUD_SERVERS` value.
pub fn parse_servers(value: &str) -> Result<Vec<ServerEntry>, ConfigError> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|entry| {
            let err = |why| ConfigError {
                entry: entry.to_string(),
                why,
            };
            let (addr, gpu) = match entry.split_once('#') {
                Some((addr, gpu)) => (
                    addr,
                    Some(
                        gpu.parse::<u32>()
                            .map_err(|_| err("GPU index is not a number"))?,
                    ),
                ),
                None => (entry, None),
            };
            let (host, port) = addr.rsplit_once(':').ok_or(err("expected host:port"))?;
            if host.is_empty() || port.parse::<u16>().is_err() {
                return Err(err("expected host:port"));
            }
            Ok(ServerEntry {
                addr: addr.to_string(),
                gpu,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_with_and_without_gpu_indices() {
        let v = parse_servers("h1:7100#0, h1:7100#1,[::1]:7000").unwrap();
        assert_eq!(
            v,
            vec![
                ServerEntry {
                    addr: "h1:7100".into(),
                    gpu: Some(0)
                },
                ServerEntry {
                    addr: "h1:7100".into(),
                    gpu: Some(1)
                },
                ServerEntry {
                    addr: "[::1]:7000".into(),
                    gpu: None
                },
            ]
        );
        assert!(parse_servers("nohost").is_err());
        assert!(parse_servers("h:99999").is_err());
        assert!(parse_servers("h:1#x").is_err());
        assert_eq!(parse_servers("").unwrap(), vec![]);
    }
}
