//! Parquet output of a merge (`--out FILE.parquet`): the same columns as the CSV, typed from
//! the manifest (int64, double, boolean, UTF-8 string; every column but `row` nullable, an
//! empty CSV cell being null), Snappy-compressed, 65,536 rows per row group. Deterministic:
//! no timestamps, a fixed `created_by`.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use crate::outputs::Kind;
use crate::{csv, SweepError};

/// Rows per row group.
pub const ROW_GROUP: usize = 65_536;

fn pq(path: &Path, e: impl std::fmt::Display) -> SweepError {
    SweepError(format!("{}: cannot write Parquet: {e}", path.display()))
}

/// One column's values of a row group, with definition levels (0 = null).
enum Col {
    Int(Vec<i64>),
    Float(Vec<f64>),
    Bool(Vec<bool>),
    Str(Vec<ByteArray>),
}

/// Writes `lines` (CSV records of `columns`, in order) to `path` as Parquet; stops at the
/// first line that is an error.
pub fn write(
    path: &Path,
    columns: &[String],
    kinds: &[Kind],
    lines: impl Iterator<Item = Result<String, SweepError>>,
) -> Result<(), SweepError> {
    assert_eq!(columns.len(), kinds.len());
    let fields: Vec<Arc<Type>> = columns
        .iter()
        .zip(kinds)
        .enumerate()
        .map(|(i, (name, kind))| {
            let (phys, logical) = match kind {
                Kind::Int => (Physical::INT64, None),
                Kind::Float => (Physical::DOUBLE, None),
                Kind::Bool => (Physical::BOOLEAN, None),
                Kind::Str => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            };
            let rep = if i == 0 {
                Repetition::REQUIRED
            } else {
                Repetition::OPTIONAL
            };
            Type::primitive_type_builder(name, phys)
                .with_repetition(rep)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
                .map_err(|e| pq(path, e))
        })
        .collect::<Result<_, _>>()?;
    let schema = Arc::new(
        Type::group_type_builder("sweep")
            .with_fields(fields)
            .build()
            .map_err(|e| pq(path, e))?,
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("myriad-sweep {}", env!("CARGO_PKG_VERSION")))
            .build(),
    );
    let file = File::create(path).map_err(|e| pq(path, e))?;
    let mut w = SerializedFileWriter::new(file, schema, props).map_err(|e| pq(path, e))?;

    let mut lines = lines.enumerate().peekable();
    while lines.peek().is_some() {
        let mut cols: Vec<Col> = kinds
            .iter()
            .map(|k| match k {
                Kind::Int => Col::Int(Vec::new()),
                Kind::Float => Col::Float(Vec::new()),
                Kind::Bool => Col::Bool(Vec::new()),
                Kind::Str => Col::Str(Vec::new()),
            })
            .collect();
        let mut defs: Vec<Vec<i16>> = vec![Vec::new(); kinds.len()];
        for (n, line) in lines.by_ref().take(ROW_GROUP) {
            let line = line?;
            let f = csv::parse(&line)
                .filter(|f| f.len() == columns.len())
                .ok_or_else(|| {
                    pq(
                        path,
                        format!("row line {} does not have {} fields", n + 1, columns.len()),
                    )
                })?;
            for (c, text) in f.iter().enumerate() {
                if text.is_empty() {
                    if c == 0 {
                        return Err(pq(path, format!("row line {}: no row id", n + 1)));
                    }
                    defs[c].push(0);
                    continue;
                }
                let bad = || {
                    pq(
                        path,
                        format!(
                            "row line {}: column `{}`: `{text}` is not {:?}",
                            n + 1,
                            columns[c],
                            kinds[c]
                        ),
                    )
                };
                match &mut cols[c] {
                    Col::Int(v) => v.push(text.parse().map_err(|_| bad())?),
                    Col::Float(v) => v.push(text.parse().map_err(|_| bad())?),
                    Col::Bool(v) => v.push(text.parse().map_err(|_| bad())?),
                    Col::Str(v) => v.push(ByteArray::from(text.as_str())),
                }
                defs[c].push(1);
            }
        }
        let mut rg = w.next_row_group().map_err(|e| pq(path, e))?;
        let mut c = 0;
        while let Some(mut cw) = rg.next_column().map_err(|e| pq(path, e))? {
            let d = if c == 0 { None } else { Some(&defs[c][..]) };
            let r = match &cols[c] {
                Col::Int(v) => cw.typed::<Int64Type>().write_batch(v, d, None),
                Col::Float(v) => cw.typed::<DoubleType>().write_batch(v, d, None),
                Col::Bool(v) => cw.typed::<BoolType>().write_batch(v, d, None),
                Col::Str(v) => cw.typed::<ByteArrayType>().write_batch(v, d, None),
            };
            r.map_err(|e| pq(path, e))?;
            cw.close().map_err(|e| pq(path, e))?;
            c += 1;
        }
        rg.close().map_err(|e| pq(path, e))?;
    }
    w.close().map_err(|e| pq(path, e))?;
    Ok(())
}
