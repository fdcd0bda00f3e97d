//! Thread placement for `--pin`: on a machine with few CPUs, where the
//! scheduler puts the two ends of a ping-pong decides its round trip more than
//! the code does, so rcud and the raw baseline are placed the same way.

use std::str::FromStr;

/// CPUs for the measuring (client) thread and for the server side: the
/// embedded server's threads and the raw peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) client: usize,
    pub(crate) server: usize,
}

impl FromStr for Placement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}`: expected CLIENT,SERVER CPU numbers, e.g. 0,1");
        let (c, v) = s.split_once(',').ok_or_else(bad)?;
        Ok(Self {
            client: c.trim().parse().map_err(|_| bad())?,
            server: v.trim().parse().map_err(|_| bad())?,
        })
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{},{}", self.client, self.server)
    }
}

/// Pins the calling thread to `cpu`; threads it starts afterwards inherit it.
pub(crate) fn pin_current(cpu: usize) -> Result<(), String> {
    if core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        Ok(())
    } else {
        Err(format!(
            "cannot pin a thread to CPU {cpu} (this process may use CPUs {:?})",
            core_affinity::get_core_ids()
                .unwrap_or_default()
                .iter()
                .map(|c| c.id)
                .collect::<Vec<_>>()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_parse() {
        assert_eq!(
            "0,1".parse(),
            Ok(Placement {
                client: 0,
                server: 1
            })
        );
        assert_eq!(
            "3, 3".parse::<Placement>().map(|p| p.to_string()),
            Ok("3,3".into())
        );
        assert!("0".parse::<Placement>().is_err());
        assert!("a,1".parse::<Placement>().is_err());
    }
}
