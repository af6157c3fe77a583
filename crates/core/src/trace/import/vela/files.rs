//! Reading a Vela output directory: the summary CSV (one row of Vela's own
//! figures), the per-layer CSV (one row per operator of Vela's internal
//! graph), the debug database (`--enable-debug-db`: per op its memories,
//! time index and bytes per memory; per tensor its memory, live range,
//! address and size; which ops feed which) and, when present, `stdout.txt`
//! (`--verbose-allocation`: the allocation tables, checked against the
//! database). Nothing here interprets the figures; `build` does.

use crate::{Error, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const FORMAT: &str = "Vela output";

/// One table as header -> column index and rows of cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    columns: HashMap<String, usize>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn parse(text: &str, path: &Path) -> Result<Table> {
        let mut rd = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .from_reader(text.as_bytes());
        let columns = rd
            .headers()
            .map_err(|e| Error::parse(path, FORMAT, format!("CSV header: {e}")))?
            .iter()
            .enumerate()
            .map(|(i, h)| (h.trim().to_string(), i))
            .collect();
        let mut rows = Vec::new();
        for (i, rec) in rd.records().enumerate() {
            let rec =
                rec.map_err(|e| Error::parse(path, FORMAT, format!("CSV row {}: {e}", i + 2)))?;
            rows.push(rec.iter().map(|c| c.trim().to_string()).collect());
        }
        Ok(Table { columns, rows })
    }

    pub fn has(&self, col: &str) -> bool {
        self.columns.contains_key(col)
    }

    /// The cell of `row` in column `col` ("" when absent).
    pub fn get<'a>(&self, row: &'a [String], col: &str) -> &'a str {
        self.columns
            .get(col)
            .and_then(|&i| row.get(i))
            .map(String::as_str)
            .unwrap_or("")
    }

    /// A number from a cell: decimal, float or `0x` hex; empty is 0.
    pub fn num(&self, row: &[String], col: &str) -> f64 {
        number(self.get(row, col))
    }
}

/// A cell as a number (empty or unreadable = 0; Vela leaves cells empty
/// where a memory is not used).
pub fn number(s: &str) -> f64 {
    let s = s.trim().trim_matches('"');
    if let Some(h) = s.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).map(|v| v as f64).unwrap_or(0.0);
    }
    s.parse().unwrap_or(0.0)
}

/// The files of one Vela run.
#[derive(Debug, Clone)]
pub struct VelaFiles {
    pub dir: PathBuf,
    /// Column -> value of the summary CSV's one row.
    pub summary: HashMap<String, String>,
    pub summary_path: PathBuf,
    pub per_layer: Table,
    pub per_layer_path: PathBuf,
    /// The debug database's tables by name.
    pub debug: HashMap<String, Table>,
    pub debug_path: PathBuf,
    /// `stdout.txt`'s allocation tables, when the file is there.
    pub allocation: Option<Vec<AllocationRow>>,
    /// `command.txt` (the Vela command line), when the file is there.
    pub command: Option<String>,
}

/// One row of a `--verbose-allocation` table.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocationRow {
    /// `Dram`, `Sram`, ...
    pub memory: String,
    /// `FeatureMap`, `Staging`, ...
    pub usage: String,
    pub start: i64,
    pub end: i64,
    pub size: u64,
    pub name: String,
}

impl VelaFiles {
    /// Reads `dir`; a missing file is one error naming it and the Vela
    /// option that writes it.
    pub fn read(dir: &Path) -> Result<VelaFiles> {
        let entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .flatten()
            .map(|e| e.path())
            .collect();
        let find = |pred: &dyn Fn(&str) -> bool, what: &str| -> Result<PathBuf> {
            let mut found: Vec<&PathBuf> = entries
                .iter()
                .filter(|p| p.file_name().is_some_and(|n| pred(&n.to_string_lossy())))
                .collect();
            found.sort();
            found
                .first()
                .map(|p| (*p).clone())
                .ok_or_else(|| Error::parse(dir, FORMAT, format!("no {what} in the directory")))
        };
        let summary_path = find(
            &|n| n.contains("_summary_") && n.ends_with(".csv"),
            "*_summary_*.csv (Vela's summary)",
        )?;
        let per_layer_path = find(
            &|n| n.ends_with("_per-layer.csv"),
            "*_per-layer.csv (Vela writes it beside the summary)",
        )?;
        let debug_path = find(
            &|n| n.ends_with("_debug.xml"),
            "*_debug.xml (run vela with --enable-debug-db)",
        )?;
        let text = |p: &Path| -> Result<String> {
            let b = crate::input::read(p)?;
            String::from_utf8(b).map_err(|_| Error::parse(p, FORMAT, "not UTF-8 text"))
        };
        let summary_table = Table::parse(&text(&summary_path)?, &summary_path)?;
        let row = summary_table
            .rows
            .first()
            .ok_or_else(|| Error::parse(&summary_path, FORMAT, "the summary has no row"))?;
        let summary: HashMap<String, String> = summary_table
            .columns
            .iter()
            .map(|(k, &i)| (k.clone(), row.get(i).cloned().unwrap_or_default()))
            .collect();
        let per_layer = Table::parse(&text(&per_layer_path)?, &per_layer_path)?;
        let debug = debug_tables(&text(&debug_path)?, &debug_path)?;
        for need in ["perf", "perf_debug", "perf_debug_conn", "tensors"] {
            if !debug.contains_key(need) {
                return Err(Error::parse(
                    &debug_path,
                    FORMAT,
                    format!("the debug database has no `{need}` table"),
                ));
            }
        }
        let stdout = dir.join("stdout.txt");
        let allocation = if stdout.exists() {
            Some(allocation_tables(&text(&stdout)?))
        } else {
            None
        };
        let command = std::fs::read_to_string(dir.join("command.txt")).ok();
        Ok(VelaFiles {
            command,
            dir: dir.to_path_buf(),
            summary,
            summary_path,
            per_layer,
            per_layer_path,
            debug,
            debug_path,
            allocation,
        })
    }

    /// A summary figure as a number (0 when absent).
    pub fn figure(&self, key: &str) -> f64 {
        self.summary.get(key).map(|s| number(s)).unwrap_or(0.0)
    }

    pub fn text(&self, key: &str) -> &str {
        self.summary.get(key).map(String::as_str).unwrap_or("")
    }

    pub fn table(&self, name: &str) -> &Table {
        // `read` checked the tables builds use are present.
        static EMPTY: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
        self.debug
            .get(name)
            .unwrap_or_else(|| EMPTY.get_or_init(Table::default))
    }
}

/// The `<table name="X"><![CDATA[ csv ]]></table>` blocks of Vela's debug
/// database (its whole structure: a flat list of CSV tables).
fn debug_tables(xml: &str, path: &Path) -> Result<HashMap<String, Table>> {
    let mut out = HashMap::new();
    let mut rest = xml;
    while let Some(at) = rest.find("<table name=\"") {
        rest = &rest[at + 13..];
        let name_end = rest
            .find('"')
            .ok_or_else(|| Error::parse(path, FORMAT, "unterminated table name"))?;
        let name = rest[..name_end].to_string();
        let open = rest
            .find("<![CDATA[")
            .ok_or_else(|| Error::parse(path, FORMAT, format!("table {name}: no CDATA")))?;
        let body = &rest[open + 9..];
        let close = body
            .find("]]>")
            .ok_or_else(|| Error::parse(path, FORMAT, format!("table {name}: unterminated")))?;
        let table = Table::parse(body[..close].trim_start_matches(['\r', '\n']), path)?;
        out.insert(name, table);
        rest = &body[close..];
    }
    if out.is_empty() {
        return Err(Error::parse(
            path,
            FORMAT,
            "no tables in the debug database",
        ));
    }
    Ok(out)
}

/// The `Allocation, memory M, usage mask: U` tables of `stdout.txt`.
fn allocation_tables(text: &str) -> Vec<AllocationRow> {
    let mut rows = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Allocation, memory ") {
            let mut it = rest.split(", usage mask: ");
            let memory = it.next().unwrap_or("").trim().to_string();
            let usage = it.next().unwrap_or("").trim().to_string();
            current = Some((memory, usage));
            continue;
        }
        if line.starts_with('#') || line.starts_with("Allocation Peak") {
            current = None;
            continue;
        }
        let Some((memory, usage)) = &current else {
            continue;
        };
        // start - end: addr - addr: size: usage: format : name
        let parts: Vec<&str> = line.splitn(6, ':').collect();
        if parts.len() < 6 {
            continue;
        }
        let range: Vec<&str> = parts[0].split('-').map(str::trim).collect();
        let (Some(Ok(start)), Some(Ok(end))) = (
            range.first().map(|s| s.parse::<i64>()),
            range.get(1).map(|s| s.parse::<i64>()),
        ) else {
            continue;
        };
        rows.push(AllocationRow {
            memory: memory.clone(),
            usage: usage.clone(),
            start,
            end,
            size: number(parts[2]) as u64,
            name: parts[5].trim().to_string(),
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_tables_and_allocation_rows_parse() {
        let xml = "<debug><table name=\"t\">\n<![CDATA[\n\"id\",\"name\"\n1,\"a;b\"\n]]>\n</table></debug>";
        let t = debug_tables(xml, Path::new("x")).unwrap();
        let tab = &t["t"];
        assert_eq!(tab.get(&tab.rows[0], "name"), "a;b");
        assert_eq!(tab.num(&tab.rows[0], "id"), 1.0);
        let text = "Allocation, memory Dram, usage mask: FeatureMap\nStart Time - End Time  : Start Addr -   End Addr: Tensor Size: Memory Usage: Format         : Name\n         0 -          1:    0x62000 -    0x86c00:      150528:       551936: NHWC           : in:0\nAllocation Peak Tensor Size: 1 bytes\n";
        let rows = allocation_tables(text);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].start, rows[0].end, rows[0].size), (0, 1, 150528));
        assert_eq!(rows[0].name, "in:0");
        assert_eq!(rows[0].usage, "FeatureMap");
        assert_eq!(number("0x62000"), 401408.0);
    }
}
