//! Parameter sweeps over `myriad/1` scenarios (`myriad sweep`).
//!
//! A `myriad-sweep/1` spec names a base scenario, the fields to vary and the outputs to
//! record. The grid is the cartesian product of the varied lists (zipped groups move
//! together), in a fixed order: paths as the spec writes them, the first outermost, values
//! in list order; a row's id is its index. `--shard K/N` evaluates the rows with
//! `id % N == K - 1` into `shard-K-of-N.csv`, resuming what the file already holds;
//! [`shard::merge`] joins the shard files ordered by row, into CSV or Parquet. See
//! `docs/sweeps.md`.
//!
//! Invariants:
//! - Same spec, same bytes: rows are written in row order whatever the thread count, floats
//!   in Rust's shortest round-trip form, no timestamps; a resumed or merged file equals a
//!   single `1/1` run byte for byte.
//! - A row that cannot be evaluated is a row with `error` set (`field.path: message`), never
//!   a failed sweep; a bad spec (unknown field path, unknown output) fails before any row.
//! - Unlike the other library crates this one does file IO: it is the batch runner that
//!   reads the spec and writes shard files ([`Sweep::load`], [`shard::run`],
//!   [`shard::merge`]). Parsing ([`Sweep::parse`]) and row evaluation ([`Evaluator`]) are
//!   pure.

pub mod csv;
pub mod eval;
pub mod outputs;
pub mod parquet;
pub mod shard;
pub mod spec;

pub use eval::{Evaluator, Row};
pub use outputs::{Cell, Kind, Output};
pub use shard::{merge, run, Manifest, MergeSummary, Shard, Summary};
pub use spec::{Sweep, FORMAT};

/// A sweep error: a message naming the file and field path, or the file and what failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SweepError(pub String);
