//! Larger cases of the benchmark's families, to measure how the search
//! holds up with size: a Matmul of any tiling, written exactly the way the
//! benchmark writes its own (so `matmul(8, 8, 8)` is `Matmul_Case0`), and
//! any case replicated side by side as independent copies.
//!
//! Owns case generation only; the output is the benchmark's JSON, read
//! back through `Kernel::load` like any other case.

use crate::{Error, Result};
use serde::Serialize;
use serde_json::Value;

/// One node as the benchmark's JSON spells it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "PascalCase")]
struct GenNode {
    id: usize,
    op: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pipe: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cycles: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    buf_id: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(rename = "Type", skip_serializing_if = "Option::is_none")]
    ty: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bufs: Option<Vec<usize>>,
}

/// A case in the benchmark's JSON layout, `Nodes` before `Edges` (as the
/// benchmark writes them, and as format detection looks for them).
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    #[serde(rename = "Nodes")]
    pub nodes: Vec<Value>,
    #[serde(rename = "Edges")]
    pub edges: Vec<(u64, u64)>,
}

impl Case {
    /// As a JSON value (keys sorted: for comparing, not for writing).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A case under construction: nodes in the benchmark's order, edges by
/// source in the order they were made, and each buffer's type and size.
#[derive(Default)]
struct Builder {
    nodes: Vec<GenNode>,
    edges: Vec<(usize, usize)>,
    /// Per buffer: (type, size, its ALLOC node, its users in order).
    bufs: Vec<(&'static str, u64, usize, Vec<usize>)>,
    /// Where the FREEs start (known up front from the tiling): buffer
    /// `b`'s FREE is node `first_free + b`.
    first_free: usize,
}

impl Builder {
    fn alloc(&mut self, ty: &'static str, size: u64) -> usize {
        let buf = self.bufs.len();
        let id = self.nodes.len();
        self.nodes.push(GenNode {
            id,
            op: "ALLOC",
            pipe: None,
            cycles: None,
            buf_id: Some(buf),
            size: Some(size),
            ty: Some(ty),
            bufs: None,
        });
        self.bufs.push((ty, size, id, Vec::new()));
        buf
    }
    fn op(&mut self, op: &'static str, pipe: &'static str, cycles: u64, bufs: &[usize]) -> usize {
        let id = self.nodes.len();
        self.nodes.push(GenNode {
            id,
            op,
            pipe: Some(pipe),
            cycles: Some(cycles),
            buf_id: None,
            size: None,
            ty: None,
            bufs: Some(bufs.to_vec()),
        });
        for &b in bufs {
            self.bufs[b].3.push(id);
        }
        id
    }
    /// An edge from `from` to the FREE of `buf`.
    fn edge_to_free(&mut self, from: usize, buf: usize) {
        self.edges.push((from, self.first_free + buf));
    }
    /// One FREE per buffer, in buffer order, after everything else (as the
    /// benchmark lays them out); every user of a buffer precedes its FREE.
    fn finish(mut self) -> Result<Case> {
        let first_free = self.nodes.len();
        if first_free != self.first_free {
            return Err(Error::Unsupported(format!(
                "internal: {first_free} op nodes where {} were planned",
                self.first_free
            )));
        }
        for (b, (ty, size, alloc, users)) in self.bufs.iter().enumerate() {
            let free = first_free + b;
            self.nodes.push(GenNode {
                id: free,
                op: "FREE",
                pipe: None,
                cycles: None,
                buf_id: Some(b),
                size: Some(*size),
                ty: Some(ty),
                bufs: None,
            });
            if let Some(&first) = users.first() {
                self.edges.push((*alloc, first));
            }
            self.edges.push((*alloc, free));
        }
        self.edges.sort_by_key(|&(from, _)| from);
        let nodes = self
            .nodes
            .iter()
            .map(serde_json::to_value)
            .collect::<serde_json::Result<Vec<Value>>>()
            .map_err(|e| Error::Unsupported(format!("internal: {e}")))?;
        let edges = self
            .edges
            .iter()
            .map(|&(a, b)| (a as u64, b as u64))
            .collect();
        Ok(Case { nodes, edges })
    }
}

/// The benchmark's Matmul family: an `m` x `n` grid of output tiles, each
/// accumulating `k` products of an A tile (row `m`, step `k`) and a B tile
/// (step `k`, column `n`) through L0A/L0B into its L0C tile, then copied
/// out. A and B tiles are loaded into L1 once, on first use, and reused by
/// every tile of their row or column; tiles are visited row by row.
/// Nodes: `7mnk + 3(mk + kn + mn)`; `matmul(16, 16, 16)` has 30,976.
pub fn matmul(m: usize, n: usize, k: usize) -> Result<Case> {
    if m == 0 || n == 0 || k == 0 {
        return Err(Error::Config(format!(
            "a Matmul needs at least one tile each way (got {m} x {n} x {k})"
        )));
    }
    let mut b = Builder {
        // Every node but the FREEs: 5 per product, 2 per A, B and C tile.
        first_free: 5 * m * n * k + 2 * (m * k + k * n + m * n),
        ..Builder::default()
    };
    let mut a_tiles: Vec<Option<(usize, usize)>> = vec![None; m * k];
    let mut b_tiles: Vec<Option<(usize, usize)>> = vec![None; k * n];
    for mi in 0..m {
        for ni in 0..n {
            let c = b.alloc("L0C", 256);
            let mut prev_mm: Option<(usize, usize, usize)> = None;
            for ki in 0..k {
                // New L1 tiles are allocated first, then both copied in.
                let a_new = a_tiles[mi * k + ki].is_none();
                let b_new = b_tiles[ki * n + ni].is_none();
                let a_buf = if a_new {
                    Some(b.alloc("L1", 128))
                } else {
                    None
                };
                let b_buf = if b_new {
                    Some(b.alloc("L1", 128))
                } else {
                    None
                };
                if let Some(buf) = a_buf {
                    a_tiles[mi * k + ki] = Some((buf, b.op("COPY_IN", "MTE2", 325, &[buf])));
                }
                if let Some(buf) = b_buf {
                    b_tiles[ki * n + ni] = Some((buf, b.op("COPY_IN", "MTE2", 325, &[buf])));
                }
                let (a_l1, a_in) = a_tiles[mi * k + ki].ok_or_else(unreachable)?;
                let (b_l1, b_in) = b_tiles[ki * n + ni].ok_or_else(unreachable)?;
                let l0a = b.alloc("L0A", 128);
                let l0b = b.alloc("L0B", 128);
                let mv_a = b.op("MOVE", "MTE1", 31, &[l0a, a_l1]);
                let mv_b = b.op("MOVE", "MTE1", 31, &[l0b, b_l1]);
                let mm = b.op("MATMUL", "CUBE", 128, &[c, l0b, l0a]);
                b.edges.extend([(a_in, mv_a), (b_in, mv_b)]);
                b.edges.push((mv_a, mm));
                b.edge_to_free(mv_a, a_l1);
                b.edges.push((mv_b, mm));
                b.edge_to_free(mv_b, b_l1);
                // A product's edges: the next in the chain, then the frees
                // of its L0 operands (the benchmark's order).
                if let Some((p, p_l0b, p_l0a)) = prev_mm {
                    b.edges.push((p, mm));
                    b.edge_to_free(p, p_l0b);
                    b.edge_to_free(p, p_l0a);
                }
                prev_mm = Some((mm, l0b, l0a));
            }
            let out = b.op("COPY_OUT", "FIXP", 263, &[c]);
            if let Some((p, p_l0b, p_l0a)) = prev_mm {
                b.edges.push((p, out));
                b.edge_to_free(p, p_l0b);
                b.edge_to_free(p, p_l0a);
            }
            b.edge_to_free(out, c);
        }
    }
    b.finish()
}

fn unreachable() -> Error {
    Error::Unsupported("internal: a tile was used before it was loaded".into())
}

/// `copies` independent copies of `case` (the benchmark's JSON) side by
/// side: node and buffer ids of copy `i` offset by `i` times the case's
/// counts, copies laid out one after another.
pub fn replicate(case: &Value, copies: usize) -> Result<Case> {
    let bad = |what: &str| Error::Unsupported(format!("not a benchmark case: {what}"));
    let nodes = case["Nodes"]
        .as_array()
        .ok_or_else(|| bad("no Nodes array"))?;
    let edges = case["Edges"]
        .as_array()
        .ok_or_else(|| bad("no Edges array"))?;
    if copies == 0 {
        return Err(Error::Config("replicate needs at least one copy".into()));
    }
    let id_of = |v: &Value, what: &str| v.as_u64().ok_or_else(|| bad(what));
    let mut nbufs = 0u64;
    for n in nodes {
        if let Some(b) = n.get("BufId") {
            nbufs = nbufs.max(id_of(b, "BufId")? + 1);
        }
    }
    let nnodes = nodes.len() as u64;
    let mut out_nodes = Vec::with_capacity(nodes.len() * copies);
    let mut out_edges = Vec::with_capacity(edges.len() * copies);
    for c in 0..copies as u64 {
        for n in nodes {
            let mut n = n.clone();
            let id = id_of(&n["Id"], "Id")?;
            n["Id"] = (id + c * nnodes).into();
            if let Some(b) = n.get("BufId") {
                n["BufId"] = (id_of(b, "BufId")? + c * nbufs).into();
            }
            if let Some(bs) = n.get("Bufs").and_then(Value::as_array) {
                let shifted: Result<Vec<u64>> = bs
                    .iter()
                    .map(|b| Ok(id_of(b, "Bufs")? + c * nbufs))
                    .collect();
                n["Bufs"] = shifted?.into();
            }
            out_nodes.push(n);
        }
        for e in edges {
            let pair = e
                .as_array()
                .filter(|p| p.len() == 2)
                .ok_or_else(|| bad("edge"))?;
            out_edges.push((
                id_of(&pair[0], "edge")? + c * nnodes,
                id_of(&pair[1], "edge")? + c * nnodes,
            ));
        }
    }
    Ok(Case {
        nodes: out_nodes,
        edges: out_edges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_node_count_follows_the_formula() {
        for (m, n, k) in [(1, 1, 1), (2, 3, 4), (8, 8, 4)] {
            let nodes = matmul(m, n, k).unwrap().nodes.len();
            assert_eq!(nodes, 7 * m * n * k + 3 * (m * k + k * n + m * n));
        }
        assert!(matmul(0, 1, 1).is_err());
    }

    #[test]
    fn replicate_offsets_ids() {
        let v = matmul(1, 1, 1).unwrap().to_value();
        let r = replicate(&v, 3).unwrap().to_value();
        let n = v["Nodes"].as_array().unwrap().len();
        assert_eq!(r["Nodes"].as_array().unwrap().len(), 3 * n);
        assert_eq!(r["Nodes"][n]["Id"], n);
        // matmul(1, 1, 1) has five buffers (C, A, B, L0A, L0B).
        assert_eq!(r["Nodes"][n]["BufId"], 5);
    }
}
