//! InfiniBand routing and reconfiguration (seed 001); see ../shared/spec/fabric.md.
//!
//! What the subnet manager does after a topology change, after Bermúdez's
//! thesis (Castilla-La Mancha, 2004), as a planning tool: up*/down* orientation
//! from a root switch ([`updown`]), the fully explicit (FERa) and partially
//! implicit (PIRa) forwarding tables and the routes they give ([`routing`]), a
//! deadlock-free order for installing new tables ([`update`]), the management
//! packets a partial discovery needs next to a full one ([`discovery`]), and
//! the irregular networks the thesis measured on ([`generate`]).
//!
//! Reading a topology file is the caller's job; [`parse`] turns its text into
//! a [`Topology`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod discovery;
pub mod generate;
pub mod parse;
pub mod routing;
pub mod topology;
pub mod update;
pub mod updown;

pub use parse::{parse, ParseError};
pub use routing::{Fera, Pira, Route, Tables};
pub use topology::{NodeId, NodeKind, Port, Topology, TopologyError};
pub use updown::{CutNode, Dir, UpDown};

/// Any failure of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A topology file that cannot be read.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A topology or a node choice that cannot be routed.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// Tables that do not deliver (a bug if it ever shows).
    #[error(transparent)]
    Route(#[from] routing::RouteError),
    /// A change the model does not cover.
    #[error("{0}")]
    Unsupported(String),
}
