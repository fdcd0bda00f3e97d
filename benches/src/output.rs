//! Printing results: aligned tables for people, Markdown for documents, JSON
//! and CSV (one record per row, the JSON field names as header) for scripts.

use serde::Serialize;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    Table,
    Markdown,
    Json,
    Csv,
}

/// Rows already formatted for a person.
pub(crate) struct Table {
    pub(crate) headers: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(headers: &[&str]) -> Self {
        Self {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// First column left-aligned, the figures right-aligned.
    fn aligned(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|c| {
                std::iter::once(&self.headers)
                    .chain(&self.rows)
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (c, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                if c == 0 {
                    out.push_str(&format!("{cell:<w$}"));
                } else {
                    out.push_str(&format!("  {cell:>w$}"));
                }
            }
            out.trim_end().to_string()
        };
        let mut out = line(&self.headers) + "\n";
        for r in &self.rows {
            out += &(line(r) + "\n");
        }
        out
    }

    fn markdown(&self) -> String {
        let mut out = format!("| {} |\n", self.headers.join(" | "));
        out += &format!("|{}\n", "---|".repeat(self.headers.len()));
        for r in &self.rows {
            out += &format!("| {} |\n", r.join(" | "));
        }
        out
    }
}

/// Prints `rows` in `format`; `table` builds the human-readable form.
pub(crate) fn emit<T: Serialize>(
    format: Format,
    rows: &[T],
    table: impl FnOnce() -> Table,
) -> Result<(), Box<dyn std::error::Error>> {
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(rows)?),
        Format::Csv => {
            let mut w = csv::Writer::from_writer(std::io::stdout().lock());
            for r in rows {
                w.serialize(r)?;
            }
            w.flush()?;
        }
        Format::Table => print!("{}", table().aligned()),
        Format::Markdown => print!("{}", table().markdown()),
    }
    Ok(())
}

/// A figure with `digits` decimals, or `-` when there is none.
pub(crate) fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

/// A ratio as a percentage, or `-`.
pub(crate) fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:.0} %", v * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_and_markdown_has_a_rule() {
        let mut t = Table::new(&["size", "GB/s"]);
        t.push(vec!["1 KiB".into(), "0.5".into()]);
        t.push(vec!["64 MiB".into(), "12.25".into()]);
        assert_eq!(t.aligned(), "size     GB/s\n1 KiB     0.5\n64 MiB  12.25\n");
        assert_eq!(
            t.markdown(),
            "| size | GB/s |\n|---|---|\n| 1 KiB | 0.5 |\n| 64 MiB | 12.25 |\n"
        );
        assert_eq!(num(None, 2), "-");
        assert_eq!(pct(Some(0.875)), "88 %");
    }
}
