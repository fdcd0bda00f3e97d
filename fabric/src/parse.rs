//! Reading and writing topologies: a plain links file, or what
//! `ibnetdiscover` prints.
//!
//! Links file: one link per line, `SWITCH.PORT PEER.PORT` between switches or
//! `SWITCH.PORT HOST` to a single-ported host; `#` starts a comment; a dash
//! between the two ends is allowed (`1.1 - 2.1`, `1.1–2.1`), so the spec's
//! notation can be pasted.
//!
//! `ibnetdiscover`: blocks of `vendid=`/`devid=`/`switchguid=` lines, then a
//! `Switch <ports> "S-<guid>" # "<desc>" base port 0 lid <lid> lmc <lmc>` line
//! and one `[port] "<S|H|R>-<guid>"[peer port](guid) # "<desc>" lid <lid> ...`
//! line per connected port; CA blocks (`Ca <ports> "H-<guid>"`) list their
//! ports as `[port](portguid) "S-<guid>"[peer port] # lid <lid> lmc <lmc> ...`.
//! Node numbers are the LIDs printed there.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::topology::{NodeId, NodeKind, Port, Topology, TopologyBuilder, TopologyError};

/// The two input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `SWITCH.PORT PEER[.PORT]` per line.
    Links,
    /// The output of `ibnetdiscover`.
    Ibnetdiscover,
}

/// A topology file that cannot be read, with the line at fault (1-based; 0
/// when the problem is the file as a whole).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{kind}", if *.line > 0 { format!("line {}: ", .line) } else { String::new() })]
pub struct ParseError {
    /// The 1-based line, 0 for the whole file.
    pub line: usize,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// What is wrong with a topology file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// A line that is not in the expected shape.
    #[error("{0}")]
    Syntax(String),
    /// A line that is well formed but contradicts the graph so far.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// Nothing but comments.
    #[error("no links found")]
    Empty,
}

fn err(line: usize, msg: impl Into<String>) -> ParseError {
    ParseError {
        line,
        kind: ParseErrorKind::Syntax(msg.into()),
    }
}

fn topo_err(line: usize, e: TopologyError) -> ParseError {
    ParseError {
        line,
        kind: ParseErrorKind::Topology(e),
    }
}

/// Guesses the format from the first meaningful line.
pub fn detect(text: &str) -> Format {
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let ibnd = [
            "vendid=",
            "devid=",
            "sysimgguid=",
            "switchguid=",
            "caguid=",
            "rtguid=",
            "Switch",
            "Ca\t",
            "Ca ",
            "Rt\t",
            "Rt ",
            "[",
        ];
        return if ibnd.iter().any(|p| t.starts_with(p)) {
            Format::Ibnetdiscover
        } else {
            Format::Links
        };
    }
    Format::Links
}

/// Parses either format, detecting which. `default_ports` is the radix given to
/// switches whose port count the file does not state (links files); 0 means
/// the highest port number any switch uses in the file.
pub fn parse(text: &str, default_ports: Port) -> Result<Topology, ParseError> {
    match detect(text) {
        Format::Links => parse_links(text, default_ports),
        Format::Ibnetdiscover => parse_ibnetdiscover(text),
    }
}

/// An end of a link in a links file: `N.P` or a bare host `N`.
fn parse_end(line: usize, tok: &str) -> Result<(NodeId, Option<Port>), ParseError> {
    let (node, port) = match tok.split_once('.') {
        Some((n, p)) => (n, Some(p)),
        None => (tok, None),
    };
    let n: u32 = node
        .parse()
        .map_err(|_| err(line, format!("`{tok}` is not NODE.PORT or a host number")))?;
    let id = TopologyBuilder::node_id(n).map_err(|e| topo_err(line, e))?;
    let port = match port {
        None => None,
        Some(p) => {
            let raw: u32 = p
                .parse()
                .map_err(|_| err(line, format!("`{tok}`: port `{p}` is not a number")))?;
            Some(TopologyBuilder::port(id, raw).map_err(|e| topo_err(line, e))?)
        }
    };
    Ok((id, port))
}

/// Parses a links file.
pub fn parse_links(text: &str, default_ports: Port) -> Result<Topology, ParseError> {
    // Kinds first (a host is a bare number anywhere), then links, so that the
    // order of lines does not matter.
    let mut ends = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split('#').next().unwrap_or("");
        let body = body.replace(['–', '—'], " ").replace(" - ", " ");
        let toks: Vec<&str> = body.split_whitespace().filter(|t| *t != "-").collect();
        let toks: Vec<&str> = if toks.len() == 1 && toks[0].contains('-') {
            toks[0].splitn(2, '-').collect()
        } else {
            toks
        };
        match toks.len() {
            0 => continue,
            2 => {}
            n => {
                return Err(err(
                    line,
                    format!(
                        "expected `SWITCH.PORT PEER.PORT` or `SWITCH.PORT HOST`, found {n} fields"
                    ),
                ))
            }
        }
        let a = parse_end(line, toks[0])?;
        let b = parse_end(line, toks[1])?;
        if a.1.is_none() && b.1.is_none() {
            return Err(err(
                line,
                "a link needs at least one switch end (`SWITCH.PORT`)",
            ));
        }
        ends.push((line, a, b));
    }
    if ends.is_empty() {
        return Err(ParseError {
            line: 0,
            kind: ParseErrorKind::Empty,
        });
    }
    let mut b = TopologyBuilder::new();
    for &(line, x, y) in &ends {
        for (id, port) in [x, y] {
            let kind = if port.is_some() {
                NodeKind::Switch
            } else {
                NodeKind::Host
            };
            b.add_node(id, kind, 0).map_err(|e| topo_err(line, e))?;
        }
    }
    for &(line, (a, pa), (c, pc)) in &ends {
        b.link(a, pa.unwrap_or(1), c, pc.unwrap_or(1))
            .map_err(|e| topo_err(line, e))?;
    }
    let radix = if default_ports == 0 {
        ends.iter()
            .flat_map(|(_, a, b)| [a.1, b.1])
            .flatten()
            .max()
            .unwrap_or(1)
    } else {
        default_ports
    };
    b.build(radix).map_err(|e| topo_err(0, e))
}

/// A node as `ibnetdiscover` names it: `"S-0002c90300000001"`.
fn quoted_name(line: usize, s: &str) -> Result<(char, u64, &str), ParseError> {
    let s = s.trim_start();
    let rest = s
        .strip_prefix('"')
        .ok_or_else(|| err(line, "expected a quoted node name like \"S-<guid>\""))?;
    let end = rest
        .find('"')
        .ok_or_else(|| err(line, "unterminated node name"))?;
    let name = &rest[..end];
    let (kind, guid) = name
        .split_once('-')
        .ok_or_else(|| err(line, format!("node name `{name}` is not <S|H|R>-<guid>")))?;
    let kind = match kind {
        "S" => 'S',
        "H" => 'H',
        "R" => 'R',
        _ => {
            return Err(err(
                line,
                format!("node name `{name}`: unknown type `{kind}`"),
            ))
        }
    };
    let guid = u64::from_str_radix(guid, 16).map_err(|_| {
        err(
            line,
            format!("node name `{name}`: `{guid}` is not a hex GUID"),
        )
    })?;
    Ok((kind, guid, &rest[end + 1..]))
}

/// `[12]` or `[12][ext 3]` at the start of `s`: the port and the rest.
fn bracket_port(line: usize, s: &str) -> Result<(u32, &str), ParseError> {
    let s = s.trim_start();
    let rest = s
        .strip_prefix('[')
        .ok_or_else(|| err(line, "expected `[port]`"))?;
    let end = rest
        .find(']')
        .ok_or_else(|| err(line, "unterminated `[port]`"))?;
    let port: u32 = rest[..end]
        .trim()
        .parse()
        .map_err(|_| err(line, format!("`[{}]` is not a port number", &rest[..end])))?;
    let mut rest = &rest[end + 1..];
    if let Some(r) = rest.strip_prefix("[ext") {
        rest = r.split_once(']').map(|(_, r)| r).unwrap_or("");
    }
    Ok((port, rest))
}

/// `(hex)` at the start of `s`, if present.
fn paren_guid(line: usize, s: &str) -> Result<(Option<u64>, &str), ParseError> {
    let t = s.trim_start();
    match t.strip_prefix('(') {
        None => Ok((None, s)),
        Some(r) => {
            let end = r
                .find(')')
                .ok_or_else(|| err(line, "unterminated `(guid)`"))?;
            let g = u64::from_str_radix(r[..end].trim(), 16)
                .map_err(|_| err(line, format!("`({})` is not a hex GUID", &r[..end])))?;
            Ok((Some(g), &r[end + 1..]))
        }
    }
}

/// The number after the last `lid ` in a comment.
fn last_lid(line: usize, comment: &str) -> Result<u32, ParseError> {
    let at = comment
        .rfind("lid ")
        .ok_or_else(|| err(line, "no `lid N` in the comment"))?;
    let num = comment[at + 4..].split_whitespace().next().unwrap_or("");
    num.parse()
        .map_err(|_| err(line, format!("`lid {num}` is not a number")))
}

/// The comment after `#` and the description quoted at its start.
fn comment_desc(s: &str) -> (Option<String>, &str) {
    let Some((_, c)) = s.split_once('#') else {
        return (None, "");
    };
    let c = c.trim_start();
    match c.strip_prefix('"').and_then(|r| r.split_once('"')) {
        Some((d, rest)) => (Some(d.to_string()), rest),
        None => (None, c),
    }
}

/// A port line as read: local port, peer kind, peer GUID, peer port, and the
/// peer's LID as the comment gives it.
struct PortClaim {
    line: usize,
    port: u32,
    peer_kind: char,
    peer_guid: u64,
    peer_port: u32,
    peer_lid: u32,
}

struct Block {
    line: usize,
    kind: char,
    guid: u64,
    num_ports: u32,
    lid: Option<u32>,
    description: Option<String>,
    // For CA blocks: port -> (port LID) from `# lid N lmc M`.
    port_lids: BTreeMap<u32, u32>,
    claims: Vec<PortClaim>,
}

/// Parses `ibnetdiscover` output.
pub fn parse_ibnetdiscover(text: &str) -> Result<Topology, ParseError> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut open = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() {
            open = false;
            continue;
        }
        if t.starts_with('#') {
            continue;
        }
        if [
            "vendid=",
            "devid=",
            "sysimgguid=",
            "switchguid=",
            "caguid=",
            "rtguid=",
            "Chassis",
            "Hostname:",
        ]
        .iter()
        .any(|p| t.starts_with(p))
        {
            continue;
        }
        let head = t.split_whitespace().next().unwrap_or("");
        if matches!(head, "Switch" | "Ca" | "Rt") {
            let rest = t[head.len()..].trim_start();
            let (n, rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let num_ports: u32 = n
                .parse()
                .map_err(|_| err(line, format!("`{head} {n}`: port count is not a number")))?;
            let (kind, guid, rest) = quoted_name(line, rest)?;
            let (description, comment) = comment_desc(rest);
            let lid = if head == "Switch" {
                Some(
                    last_lid(line, comment)
                        .map_err(|_| err(line, "switch line without `port 0 lid N`"))?,
                )
            } else {
                None
            };
            if (head == "Switch") != (kind == 'S') {
                return Err(err(
                    line,
                    format!("`{head}` line names a node of type {kind}"),
                ));
            }
            blocks.push(Block {
                line,
                kind,
                guid,
                num_ports,
                lid,
                description,
                port_lids: BTreeMap::new(),
                claims: Vec::new(),
            });
            open = true;
            continue;
        }
        if t.starts_with('[') {
            let block = match (open, blocks.last_mut()) {
                (true, Some(b)) => b,
                _ => return Err(err(line, "port line outside a Switch/Ca block")),
            };
            let (port, rest) = bracket_port(line, t)?;
            let (_own_guid, rest) = paren_guid(line, rest)?;
            let (peer_kind, peer_guid, rest) = quoted_name(line, rest)?;
            let (peer_port, rest) = bracket_port(line, rest)?;
            let (_peer_port_guid, rest) = paren_guid(line, rest)?;
            let comment = rest.split_once('#').map(|(_, c)| c).unwrap_or("");
            let peer_lid = last_lid(line, comment)?;
            if block.kind != 'S' {
                // `# lid N lmc M "desc" lid R ...`: N is this CA port's LID.
                let own = comment.trim_start();
                let lid = own
                    .strip_prefix("lid ")
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| err(line, "CA port line without its own `# lid N`"))?;
                block.port_lids.insert(port, lid);
            }
            block.claims.push(PortClaim {
                line,
                port,
                peer_kind,
                peer_guid,
                peer_port,
                peer_lid,
            });
            continue;
        }
        return Err(err(line, format!("unexpected line `{}`", short(t))));
    }
    build_from_blocks(&blocks)
}

fn short(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}

fn build_from_blocks(blocks: &[Block]) -> Result<Topology, ParseError> {
    // GUID -> switch LID, and (CA GUID, port) -> host LID, from every source.
    let mut switch_lid: BTreeMap<u64, (u32, usize)> = BTreeMap::new();
    for b in blocks.iter().filter(|b| b.kind == 'S') {
        let lid = b.lid.expect("switch blocks carry a LID");
        if switch_lid.insert(b.guid, (lid, b.line)).is_some() {
            return Err(err(
                b.line,
                format!("switch {:016x} described twice", b.guid),
            ));
        }
    }
    let mut host_lid: BTreeMap<(u64, u32), (u32, usize)> = BTreeMap::new();
    for b in blocks.iter().filter(|b| b.kind != 'S') {
        for (&p, &lid) in &b.port_lids {
            host_lid.insert((b.guid, p), (lid, b.line));
        }
    }
    for b in blocks.iter().filter(|b| b.kind == 'S') {
        for c in b.claims.iter().filter(|c| c.peer_kind != 'S') {
            host_lid
                .entry((c.peer_guid, c.peer_port))
                .or_insert((c.peer_lid, c.line));
        }
    }
    let mut tb = TopologyBuilder::new();
    let mut used: BTreeMap<u32, usize> = BTreeMap::new();
    let mut claim_id = |lid: u32, line: usize| -> Result<NodeId, ParseError> {
        let id = TopologyBuilder::node_id(lid).map_err(|e| {
            if lid == 0 {
                err(line, "LID 0: the subnet has no LIDs yet (run ibnetdiscover after the SM has configured it)")
            } else {
                topo_err(line, e)
            }
        })?;
        if let Some(first) = used.insert(lid, line) {
            return Err(err(
                line,
                format!("LID {lid} is used twice (also line {first})"),
            ));
        }
        Ok(id)
    };
    let mut switch_id: BTreeMap<u64, NodeId> = BTreeMap::new();
    for b in blocks.iter().filter(|b| b.kind == 'S') {
        let id = claim_id(b.lid.unwrap_or(0), b.line)?;
        let ports = TopologyBuilder::port(id, b.num_ports).map_err(|e| topo_err(b.line, e))?;
        tb.add_node(id, NodeKind::Switch, ports)
            .map_err(|e| topo_err(b.line, e))?;
        tb.describe(id, Some(b.guid), b.description.clone());
        switch_id.insert(b.guid, id);
    }
    let mut host_id: BTreeMap<(u64, u32), NodeId> = BTreeMap::new();
    for (&(guid, port), &(lid, line)) in &host_lid {
        let id = claim_id(lid, line)?;
        tb.add_node(id, NodeKind::Host, 0)
            .map_err(|e| topo_err(line, e))?;
        let desc = blocks
            .iter()
            .find(|b| b.guid == guid && b.kind != 'S')
            .and_then(|b| b.description.clone());
        tb.describe(id, Some(guid), desc);
        host_id.insert((guid, port), id);
    }
    // Links: every claim, checked against what the other end says.
    for b in blocks {
        for c in &b.claims {
            let me = if b.kind == 'S' {
                switch_id[&b.guid]
            } else {
                host_id[&(b.guid, c.port)]
            };
            let peer = if c.peer_kind == 'S' {
                *switch_id.get(&c.peer_guid).ok_or_else(|| {
                    err(
                        c.line,
                        format!("switch {:016x} has no Switch block", c.peer_guid),
                    )
                })?
            } else {
                host_id[&(c.peer_guid, c.peer_port)]
            };
            let me_port = TopologyBuilder::port(me, c.port).map_err(|e| topo_err(c.line, e))?;
            let pp = TopologyBuilder::port(peer, c.peer_port).map_err(|e| topo_err(c.line, e))?;
            match tb.link_at(me, me_port) {
                Some(l) if l.peer == peer && l.peer_port == pp => continue,
                Some(l) => {
                    return Err(err(
                        c.line,
                        format!(
                        "node {me} port {me_port} leads to {peer}.{pp} here but to {}.{} elsewhere",
                        l.peer, l.peer_port
                    ),
                    ))
                }
                None => tb
                    .link(me, me_port, peer, pp)
                    .map_err(|e| topo_err(c.line, e))?,
            }
        }
    }
    if blocks.is_empty() {
        return Err(ParseError {
            line: 0,
            kind: ParseErrorKind::Empty,
        });
    }
    tb.build(0).map_err(|e| topo_err(0, e))
}

/// Writes a topology as a links file (hosts as bare numbers).
pub fn write_links(t: &Topology) -> String {
    let mut s = String::new();
    for (a, pa, b, pb) in t.links() {
        let (a, pa, b, pb) = match t.node(a).map(|n| n.kind) {
            Some(NodeKind::Host) => (b, pb, a, pa),
            _ => (a, pa, b, pb),
        };
        match t.node(b).map(|n| n.kind) {
            Some(NodeKind::Host) => writeln!(s, "{a}.{pa} {b}"),
            _ => writeln!(s, "{a}.{pa} {b}.{pb}"),
        }
        .expect("writing to a String");
    }
    s
}

/// A made-up GUID for nodes that have none (generated topologies).
fn guid_of(t: &Topology, id: NodeId) -> u64 {
    let n = t.node(id).expect("node of this topology");
    n.guid.unwrap_or(match n.kind {
        NodeKind::Switch => 0x0002_c903_0000_0000 | u64::from(id),
        NodeKind::Host => 0x0002_c903_0100_0000 | u64::from(id),
    })
}

/// Writes a topology the way `ibnetdiscover` prints one (each host port as a
/// one-port CA), so the reader can be tested on what it must accept.
pub fn write_ibnetdiscover(t: &Topology) -> String {
    let mut s = String::from("#\n# Topology file: written by rcud fabric\n#\n");
    let desc = |id: NodeId| -> String {
        let n = t.node(id).expect("node of this topology");
        n.description
            .clone()
            .unwrap_or_else(|| format!("{} {id}", n.kind))
    };
    for n in t.nodes() {
        let g = guid_of(t, n.id);
        match n.kind {
            NodeKind::Switch => {
                let _ = write!(
                    s,
                    "\nvendid=0x2c9\ndevid=0xc738\nsysimgguid={g:#x}\nswitchguid={g:#x}({g:x})\n\
                     Switch\t{} \"S-{g:016x}\"\t\t# \"{}\" base port 0 lid {} lmc 0\n",
                    n.num_ports,
                    desc(n.id),
                    n.id
                );
                for l in &n.links {
                    let p = t.node(l.peer).expect("peer of this topology");
                    let pg = guid_of(t, l.peer);
                    match p.kind {
                        NodeKind::Switch => {
                            let _ = writeln!(
                                s,
                                "[{}]\t\"S-{pg:016x}\"[{}]\t\t# \"{}\" lid {} 4xHDR",
                                l.port,
                                l.peer_port,
                                desc(l.peer),
                                l.peer
                            );
                        }
                        NodeKind::Host => {
                            let _ = writeln!(
                                s,
                                "[{}]\t\"H-{pg:016x}\"[{}]({:x}) \t\t# \"{}\" lid {} 4xHDR",
                                l.port,
                                l.peer_port,
                                pg + 1,
                                desc(l.peer),
                                l.peer
                            );
                        }
                    }
                }
            }
            NodeKind::Host => {
                let _ = write!(
                    s,
                    "\nvendid=0x2c9\ndevid=0x101b\nsysimgguid={g:#x}\ncaguid={g:#x}\nCa\t{} \"H-{g:016x}\"\t\t# \"{}\"\n",
                    n.num_ports,
                    desc(n.id)
                );
                for l in &n.links {
                    let pg = guid_of(t, l.peer);
                    let _ = writeln!(
                        s,
                        "[{}]({:x}) \t\"S-{pg:016x}\"[{}]\t\t# lid {} lmc 0 \"{}\" lid {} 4xHDR",
                        l.port,
                        g + 1,
                        l.peer_port,
                        n.id,
                        desc(l.peer),
                        l.peer
                    );
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_file_with_comments_dashes_and_hosts() {
        let t = parse(
            "# two switches\n1.1 2.1  # trunk\n1.2 – 3\n2.2-4\n\n2.3 - 5.1\n",
            4,
        )
        .unwrap();
        assert_eq!(t.len(), 5);
        assert_eq!(t.node(3).unwrap().kind, NodeKind::Host);
        assert_eq!(t.node(4).unwrap().kind, NodeKind::Host);
        assert_eq!(t.node(5).unwrap().kind, NodeKind::Switch);
        assert_eq!(t.node(1).unwrap().link(2).unwrap().peer, 3);
    }

    #[test]
    fn links_errors_carry_line_numbers() {
        let cases = [
            (
                "1.1 2.1\n1.1 3.1\n",
                2,
                "port 1 of node 1 is connected twice",
            ),
            ("1.1 2.1\nfoo\n", 2, "found 1 fields"),
            ("1.x 2.1\n", 1, "port `x` is not a number"),
            ("1.0 2.1\n", 1, "not a physical port"),
            ("1.1 2.1\n3 4\n", 2, "at least one switch end"),
            ("1.1 2\n3.1 2.2\n", 2, "both as a switch and as a host"),
            ("1.1 2\n3.1 2\n", 2, "host 2 has more than one link"),
            ("1.1 70000.1\n", 1, "not a unicast LID"),
            ("1.1 2.1 3.1\n", 1, "found 3 fields"),
        ];
        for (text, line, msg) in cases {
            let e = parse(text, 4).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(msg), "{text:?}: {e}");
            assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
        }
        assert_eq!(
            parse("# nothing\n", 4).unwrap_err().kind,
            ParseErrorKind::Empty
        );
    }

    const SMALL: &str = r#"#
# Topology file: generated on Mon Jan  1 00:00:00 2024
#
# Initiated from node 0002c90300000101 port 0002c90300000102

vendid=0x2c9
devid=0xc738
sysimgguid=0x2c90300000001
switchguid=0x2c90300000001(2c90300000001)
Switch	36 "S-0002c90300000001"		# "edge-1" enhanced port 0 lid 1 lmc 0
[1]	"S-0002c90300000002"[3]		# "edge-2" lid 2 4xHDR
[7]	"H-0002c90300000101"[1](2c90300000102) 		# "gpu7 mlx5_0" lid 9 4xHDR

vendid=0x2c9
devid=0xc738
switchguid=0x2c90300000002(2c90300000002)
Switch	36 "S-0002c90300000002"		# "edge-2" enhanced port 0 lid 2 lmc 0
[3]	"S-0002c90300000001"[1]		# "edge-1" lid 1 4xHDR
[5][ext 5]	"H-0002c90300000101"[2](2c90300000103) 		# "gpu7 mlx5_0" lid 10 4xHDR

vendid=0x2c9
devid=0x101b
caguid=0x2c90300000101
Ca	2 "H-0002c90300000101"		# "gpu7 mlx5_0"
[1](2c90300000102) 	"S-0002c90300000001"[7]		# lid 9 lmc 0 "edge-1" lid 1 4xHDR
[2](2c90300000103) 	"S-0002c90300000002"[5]		# lid 10 lmc 0 "edge-2" lid 2 4xHDR
"#;

    #[test]
    fn ibnetdiscover_dual_port_ca_becomes_two_hosts() {
        assert_eq!(detect(SMALL), Format::Ibnetdiscover);
        let t = parse(SMALL, 4).unwrap();
        assert_eq!(t.len(), 4);
        let s1 = t.node(1).unwrap();
        assert_eq!(s1.num_ports, 36);
        assert_eq!(s1.description.as_deref(), Some("edge-1"));
        assert_eq!(s1.link(1).unwrap().peer, 2);
        assert_eq!(s1.link(1).unwrap().peer_port, 3);
        assert_eq!(s1.link(7).unwrap().peer, 9);
        assert_eq!(t.node(10).unwrap().kind, NodeKind::Host);
        assert_eq!(t.node(10).unwrap().link(2).unwrap().peer, 2);
        assert_eq!(t.node(2).unwrap().link(5).unwrap().peer_port, 2);
    }

    #[test]
    fn ibnetdiscover_errors_carry_line_numbers() {
        let bad_lid = SMALL.replace("lid 2 4xHDR", "lid two 4xHDR");
        let e = parse(&bad_lid, 4).unwrap_err();
        assert_eq!(e.line, 11, "{e}");
        let clash = SMALL.replace("\"S-0002c90300000001\"[7]", "\"S-0002c90300000001\"[8]");
        let e = parse(&clash, 4).unwrap_err();
        assert!(
            e.to_string().contains("elsewhere") || e.to_string().contains("connected twice"),
            "{e}"
        );
        let stray = format!("[1]\t\"S-0002c90300000002\"[3]\t\t# \"x\" lid 2 4xHDR\n{SMALL}");
        assert_eq!(parse(&stray, 4).unwrap_err().line, 1);
        let garbage = SMALL.replace(
            "vendid=0x2c9\ndevid=0x101b",
            "vendid=0x2c9\nbogus line here",
        );
        let e = parse(&garbage, 4).unwrap_err();
        assert!(
            e.to_string().contains("unexpected line `bogus line here`"),
            "{e}"
        );
        let zero = SMALL.replace("port 0 lid 1 lmc", "port 0 lid 0 lmc");
        assert!(parse(&zero, 4)
            .unwrap_err()
            .to_string()
            .contains("no LIDs yet"));
    }

    #[test]
    fn both_writers_read_back() {
        let t = parse(SMALL, 4).unwrap();
        let again = parse(&write_ibnetdiscover(&t), 4).unwrap();
        assert_eq!(again.links(), t.links());
        // A links file has single-ported hosts: their port becomes 1.
        let links = parse(&write_links(&t), 36).unwrap();
        let host_port_1 = |t: &Topology| -> Vec<_> {
            let one = |n: NodeId, p: Port| if t.node(n).unwrap().is_switch() { p } else { 1 };
            t.links()
                .into_iter()
                .map(|(a, pa, b, pb)| (a, one(a, pa), b, one(b, pb)))
                .collect()
        };
        assert_eq!(host_port_1(&links), host_port_1(&t));
    }
}
