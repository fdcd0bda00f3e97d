//! The server's configuration file: `rcud-server --config server.toml`.
//!
//! Every visible command-line flag is a key, spelt with `_` or `-`
//! (`emu_memory = "16GiB"` is `--emu-memory 16GiB`); a table groups flags by
//! their first word (`[qos] link = "100Gb/s"` is `--qos-link 100Gb/s`,
//! `[metrics] listen = "ADDR"` is `--metrics ADDR`). `[tenants.NAME]` tables
//! are the tenant file's (see [`crate::tenants`]), which this file then is.
//!
//! The file becomes arguments placed before the command line's, and the
//! command line wins where both name a flag. Each value is checked by the
//! flag's own parser, so a bad value is refused at start with its line and
//! the same reason the flag would give; an unknown key is refused with its
//! line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::error::ErrorKind;
use clap::{Arg, ArgAction, Command};
use thiserror::Error;
use toml::de::{DeTable, DeValue};

/// The table whose keys are tenants.
const TENANTS: &str = "tenants";

/// A configuration file, turned into arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The file.
    pub path: PathBuf,
    /// The arguments it stands for, to go before the command line's.
    pub args: Vec<OsString>,
    /// Whether it has `[tenants.NAME]` tables (it is then the tenant file).
    pub has_tenants: bool,
}

/// A configuration file that cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// Unreadable.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not TOML.
    #[error("{path}: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The TOML parser's message (with line and column).
        message: String,
    },
    /// A key that is no flag, or a value its flag refuses.
    #[error("{path}:{line}: {message}")]
    Key {
        /// The file.
        path: PathBuf,
        /// The line of the key or value, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl Config {
    /// Reads `path` against the flags of `command`.
    pub fn load(path: &Path, command: &Command) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
        Self::parse(&text, path, command)
    }

    /// Parses the text of a configuration file (`path` names it in errors).
    pub fn parse(text: &str, path: &Path, command: &Command) -> Result<Self, ConfigError> {
        let root = DeTable::parse(text).map_err(|e| ConfigError::Syntax {
            path: path.into(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let mut config = Self {
            path: path.into(),
            args: Vec::new(),
            has_tenants: false,
        };
        let at = |offset: usize, message: String| ConfigError::Key {
            path: path.into(),
            line: line_of(text, offset),
            message,
        };
        for (key, value) in root.get_ref() {
            let name = key.get_ref().as_ref();
            match value.get_ref() {
                // Checked in full by the tenant file's own parser.
                DeValue::Table(_) if name == TENANTS => config.has_tenants = true,
                DeValue::Table(table) => {
                    for (sub, value) in table {
                        let sub_name = sub.get_ref().as_ref();
                        let flag = match (name, sub_name) {
                            ("metrics", "listen") => "metrics".to_string(),
                            _ => format!("{name}-{sub_name}"),
                        };
                        let arg = find_arg(command, &flag).ok_or_else(|| {
                            at(
                                sub.span().start,
                                format!("unknown key `{sub_name}` in [{name}]"),
                            )
                        })?;
                        config.push(command, arg, value.get_ref(), value.span().start, &at)?;
                    }
                }
                _ => {
                    let arg = find_arg(command, name)
                        .ok_or_else(|| at(key.span().start, format!("unknown key `{name}`")))?;
                    config.push(command, arg, value.get_ref(), value.span().start, &at)?;
                }
            }
        }
        Ok(config)
    }

    /// Adds the arguments for `arg = value`, once its parser accepts it.
    fn push(
        &mut self,
        command: &Command,
        arg: &Arg,
        value: &DeValue<'_>,
        offset: usize,
        at: &impl Fn(usize, String) -> ConfigError,
    ) -> Result<(), ConfigError> {
        let flag = format!("--{}", arg.get_long().unwrap_or_default());
        if matches!(arg.get_action(), ArgAction::SetTrue) {
            return match value {
                DeValue::Boolean(true) => {
                    self.args.push(flag.into());
                    Ok(())
                }
                DeValue::Boolean(false) => Ok(()),
                _ => Err(at(offset, format!("{flag} is a switch: true or false"))),
            };
        }
        let text = match value {
            DeValue::String(s) => s.to_string(),
            DeValue::Integer(i) if i.radix() == 10 => i.as_str().replace('_', ""),
            DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix())
                .map(|n| n.to_string())
                .map_err(|e| at(offset, format!("{flag}: {e}")))?,
            DeValue::Float(f) => f.as_str().replace('_', ""),
            DeValue::Boolean(b) => b.to_string(),
            DeValue::Datetime(_) | DeValue::Array(_) | DeValue::Table(_) => {
                return Err(at(offset, format!("{flag} takes a single value")))
            }
        };
        check_value(command, &flag, &text).map_err(|e| at(offset, e))?;
        self.args.push(flag.into());
        self.args.push(text.into());
        Ok(())
    }
}

/// Runs `flag value` through the command's own parser; only a refused
/// value counts here (the command line as a whole is checked later, with
/// the flags that go together).
fn check_value(command: &Command, flag: &str, value: &str) -> Result<(), String> {
    let mut check = command
        .clone()
        .no_binary_name(true)
        .args_override_self(true);
    // A value may look like a flag (`-1`): `--flag=value` keeps it a value.
    let arg = OsString::from(format!("{flag}={value}"));
    match check.try_get_matches_from_mut([arg]) {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::InvalidValue | ErrorKind::ValueValidation | ErrorKind::InvalidUtf8
            ) =>
        {
            Err(clap_reason(&e))
        }
        Err(_) => Ok(()),
    }
}

/// The visible flag a key names (`emu_memory`, `emu-memory`).
fn find_arg<'c>(command: &'c Command, key: &str) -> Option<&'c Arg> {
    let long = key.replace('_', "-");
    command
        .get_arguments()
        .filter(|a| !a.is_hide_set() && a.get_long() != Some("config"))
        .find(|a| a.get_long() == Some(long.as_str()))
}

/// Clap's reason, without its `error:` prefix and usage lines.
fn clap_reason(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or_default();
    first.trim_start_matches("error: ").trim().to_string()
}

/// The line (from 1) of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The position of the value of `--config` in a command line, and the path.
pub fn config_path(args: &[OsString]) -> Option<PathBuf> {
    let mut iter = args.iter().skip(1);
    while let Some(arg) = iter.next() {
        if arg == "--" {
            return None;
        }
        if arg == "--config" {
            return iter.next().map(PathBuf::from);
        }
        if let Some(path) = arg.to_str().and_then(|a| a.strip_prefix("--config=")) {
            return Some(PathBuf::from(path));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{value_parser, Arg};

    fn command() -> Command {
        Command::new("t")
            .arg(Arg::new("listen").long("listen").default_value("0.0.0.0:1"))
            .arg(
                Arg::new("max_clients")
                    .long("max-clients")
                    .value_parser(value_parser!(u32).range(1..)),
            )
            .arg(
                Arg::new("emu_memory")
                    .long("emu-memory")
                    .value_parser(value_parser!(bytesize::ByteSize)),
            )
            .arg(Arg::new("qos_link").long("qos-link"))
            .arg(Arg::new("metrics").long("metrics"))
            .arg(
                Arg::new("insecure_open")
                    .long("insecure-open")
                    .action(ArgAction::SetTrue),
            )
            .arg(Arg::new("secret").long("agent-fd").hide(true))
    }

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("s.toml"), &command()).map_err(|e| e.to_string())
    }

    #[test]
    fn keys_become_flags() {
        let c = parse(
            "max_clients = 8\nemu-memory = \"2GiB\"\ninsecure_open = true\n\
             [qos]\nlink = \"10Gb/s\"\n[metrics]\nlisten = \"127.0.0.1:9\"\n\
             [tenants.a]\nsecret = \"x\"\n",
        )
        .unwrap();
        let args: Vec<_> = c.args.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            args,
            [
                "--emu-memory",
                "2GiB",
                "--insecure-open",
                "--max-clients",
                "8",
                "--metrics",
                "127.0.0.1:9",
                "--qos-link",
                "10Gb/s"
            ]
        );
        assert!(c.has_tenants);
    }

    #[test]
    fn unknown_keys_are_refused_with_their_line() {
        let e = parse("max_clients = 8\n\nmax_clinets = 9\n").unwrap_err();
        assert_eq!(e, "s.toml:3: unknown key `max_clinets`");
        let e = parse("[qos]\nlink = \"1Gb/s\"\nmtuu = 1\n").unwrap_err();
        assert_eq!(e, "s.toml:3: unknown key `mtuu` in [qos]");
        // Hidden flags are the listener's business, not the operator's.
        assert!(parse("agent_fd = 3").unwrap_err().contains("unknown key"));
    }

    #[test]
    fn bad_values_are_refused_with_line_and_the_flags_reason() {
        let e = parse("listen = \"a:1\"\nmax_clients = 0\n").unwrap_err();
        assert!(
            e.starts_with("s.toml:2: invalid value '0' for '--max-clients"),
            "{e}"
        );
        assert!(e.contains("not in 1.."), "{e}");
        let e = parse("emu_memory = \"lots\"").unwrap_err();
        assert!(e.starts_with("s.toml:1: invalid value 'lots'"), "{e}");
        let e = parse("insecure_open = \"yes\"").unwrap_err();
        assert_eq!(e, "s.toml:1: --insecure-open is a switch: true or false");
        let e = parse("max_clients = [1]").unwrap_err();
        assert_eq!(e, "s.toml:1: --max-clients takes a single value");
        assert!(parse("max_clients = ").unwrap_err().contains("line 1"));
    }

    #[test]
    fn the_config_path_is_found_on_the_command_line() {
        let argv = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            config_path(&argv(&["s", "--listen", "x", "--config", "c.toml"])),
            Some(PathBuf::from("c.toml"))
        );
        assert_eq!(
            config_path(&argv(&["s", "--config=c.toml"])),
            Some(PathBuf::from("c.toml"))
        );
        assert_eq!(config_path(&argv(&["s", "--listen", "x"])), None);
    }
}
