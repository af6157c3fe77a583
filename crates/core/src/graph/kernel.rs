//! The kernel DAG as the benchmark gives it (JSON `{"Nodes", "Edges"}` or
//! the `<case>_Nodes.csv` / `<case>_Edges.csv` pair), checked and indexed.

use crate::{Error, Result};
use compact_str::CompactString;
use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufType {
    L1,
    Ub,
    L0a,
    L0b,
    L0c,
}

impl BufType {
    pub const ALL: [BufType; 5] = [
        BufType::L1,
        BufType::Ub,
        BufType::L0a,
        BufType::L0b,
        BufType::L0c,
    ];
    pub fn parse(s: &str) -> Option<BufType> {
        Some(match s.trim() {
            "L1" => BufType::L1,
            "UB" => BufType::Ub,
            "L0A" => BufType::L0a,
            "L0B" => BufType::L0b,
            "L0C" => BufType::L0c,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            BufType::L1 => "L1",
            BufType::Ub => "UB",
            BufType::L0a => "L0A",
            BufType::L0b => "L0B",
            BufType::L0c => "L0C",
        }
    }
    /// The benchmark's capacities.
    pub fn capacity(self) -> u64 {
        match self {
            BufType::L1 => 4096,
            BufType::Ub => 1024,
            BufType::L0a | BufType::L0b => 256,
            BufType::L0c => 512,
        }
    }
    /// L0 buffers hold one buffer at a time and are never spilled.
    pub fn is_l0(self) -> bool {
        matches!(self, BufType::L0a | BufType::L0b | BufType::L0c)
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pipe {
    Mte1,
    Mte2,
    Mte3,
    Fixp,
    Cube,
    Vector,
}

impl Pipe {
    pub const ALL: [Pipe; 6] = [
        Pipe::Mte1,
        Pipe::Mte2,
        Pipe::Mte3,
        Pipe::Fixp,
        Pipe::Cube,
        Pipe::Vector,
    ];
    pub fn parse(s: &str) -> Option<Pipe> {
        Some(match s.trim() {
            "MTE1" => Pipe::Mte1,
            "MTE2" => Pipe::Mte2,
            "MTE3" => Pipe::Mte3,
            "FIXP" => Pipe::Fixp,
            "CUBE" => Pipe::Cube,
            "VECTOR" => Pipe::Vector,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Pipe::Mte1 => "MTE1",
            Pipe::Mte2 => "MTE2",
            Pipe::Mte3 => "MTE3",
            Pipe::Fixp => "FIXP",
            Pipe::Cube => "CUBE",
            Pipe::Vector => "VECTOR",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    Alloc {
        buf: u32,
        size: u64,
        ty: BufType,
    },
    Free {
        buf: u32,
        size: u64,
        ty: BufType,
    },
    Op {
        pipe: Pipe,
        cycles: u64,
        bufs: Vec<u32>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: usize,
    pub op: String,
    pub kind: NodeKind,
}

/// Per-buffer facts gathered once.
#[derive(Debug, Clone, PartialEq)]
pub struct Buffer {
    pub id: u32,
    pub size: u64,
    pub ty: BufType,
    pub alloc: usize,
    pub free: usize,
    /// Op nodes that name it in `Bufs`, by id.
    pub users: Vec<usize>,
    /// Filled by a COPY_IN (DDR still holds it: spilling it out is free).
    pub copy_in: bool,
}

/// A checked kernel DAG: nodes by id (ids are 0..n), adjacency, buffers.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub name: String,
    pub nodes: Vec<Node>,
    pub succ: Vec<Vec<usize>>,
    pub pred: Vec<Vec<usize>>,
    pub buffers: Vec<Buffer>,
    /// Buffer index by buf id.
    pub buf_index: std::collections::HashMap<u32, usize>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawNode {
    id: i64,
    op: String,
    #[serde(default)]
    buf_id: Option<i64>,
    #[serde(default)]
    size: Option<i64>,
    #[serde(default, rename = "Type")]
    ty: Option<String>,
    #[serde(default)]
    pipe: Option<String>,
    #[serde(default)]
    cycles: Option<i64>,
    #[serde(default)]
    bufs: Option<Vec<i64>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawCase {
    nodes: Vec<RawNode>,
    edges: Vec<(i64, i64)>,
}

fn bad(path: &Path, detail: String) -> Error {
    Error::parse(path, "NPU kernel DAG", detail)
}

impl Kernel {
    /// Loads `CASE.json`, or `CASE_Nodes.csv` (with `CASE_Edges.csv` beside it).
    pub fn load(path: &Path) -> Result<Kernel> {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().trim_end_matches("_Nodes").to_string())
            .unwrap_or_default();
        let is_csv = path
            .extension()
            .map(|e| e.eq_ignore_ascii_case("csv"))
            .unwrap_or(false);
        let raw = if is_csv {
            let edges_path = path.with_file_name(format!("{name}_Edges.csv"));
            crate::input::check_size(path)?;
            let nodes = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            let edges =
                std::fs::read_to_string(&edges_path).map_err(|e| Error::io(&edges_path, e))?;
            RawCase {
                nodes: parse_nodes_csv(path, &nodes)?,
                edges: parse_edges_csv(&edges_path, &edges)?,
            }
        } else {
            let bytes = crate::input::read(path)?;
            serde_json::from_slice(&bytes).map_err(|e| bad(path, e.to_string()))?
        };
        Kernel::build(path, name, raw)
    }

    fn build(path: &Path, name: String, raw: RawCase) -> Result<Kernel> {
        let n = raw.nodes.len();
        let mut slots: Vec<Option<Node>> = vec![None; n];
        for r in raw.nodes {
            let id = usize::try_from(r.id)
                .ok()
                .filter(|&i| i < n)
                .ok_or_else(|| bad(path, format!("node id {} is not in 0..{n}", r.id)))?;
            if slots[id].is_some() {
                return Err(bad(path, format!("node id {id} appears twice")));
            }
            let need = |v: Option<i64>, what: &str| -> Result<i64> {
                v.ok_or_else(|| bad(path, format!("node {id} ({}) has no {what}", r.op)))
            };
            let kind = match r.op.as_str() {
                "ALLOC" | "FREE" => {
                    let buf = u32::try_from(need(r.buf_id, "BufId")?)
                        .map_err(|_| bad(path, format!("node {id}: BufId out of range")))?;
                    let size = u64::try_from(need(r.size, "Size")?)
                        .map_err(|_| bad(path, format!("node {id}: negative Size")))?;
                    let ty = r.ty.as_deref().and_then(BufType::parse).ok_or_else(|| {
                        bad(
                            path,
                            format!("node {id}: Type {:?} is not L1, UB, L0A, L0B or L0C", r.ty),
                        )
                    })?;
                    if size == 0 {
                        // An empty buffer has no address range to place or
                        // check: the allocator and the checker disagreed on it.
                        return Err(bad(
                            path,
                            format!("node {id}: buffer {buf} has Size 0 (a buffer holds at least one byte)"),
                        ));
                    }
                    if size > ty.capacity() {
                        return Err(bad(
                            path,
                            format!(
                                "node {id}: buffer {buf} of {size} is larger than {} ({})",
                                ty.as_str(),
                                ty.capacity()
                            ),
                        ));
                    }
                    if r.op == "ALLOC" {
                        NodeKind::Alloc { buf, size, ty }
                    } else {
                        NodeKind::Free { buf, size, ty }
                    }
                }
                _ => {
                    let pipe = r.pipe.as_deref().and_then(Pipe::parse).ok_or_else(|| {
                        bad(
                            path,
                            format!("node {id} ({}): Pipe {:?} unknown", r.op, r.pipe),
                        )
                    })?;
                    let cycles = u64::try_from(need(r.cycles, "Cycles")?)
                        .map_err(|_| bad(path, format!("node {id}: negative Cycles")))?;
                    let bufs = r
                        .bufs
                        .unwrap_or_default()
                        .into_iter()
                        .map(|b| {
                            u32::try_from(b).map_err(|_| {
                                bad(path, format!("node {id}: buffer id {b} out of range"))
                            })
                        })
                        .collect::<Result<Vec<u32>>>()?;
                    NodeKind::Op { pipe, cycles, bufs }
                }
            };
            slots[id] = Some(Node { id, op: r.op, kind });
        }
        let nodes: Vec<Node> = slots
            .into_iter()
            .enumerate()
            .map(|(i, s)| s.ok_or_else(|| bad(path, format!("node id {i} is missing"))))
            .collect::<Result<_>>()?;
        let mut succ = vec![Vec::new(); n];
        let mut pred = vec![Vec::new(); n];
        for (a, b) in raw.edges {
            let ok = |x: i64| usize::try_from(x).ok().filter(|&x| x < n);
            let (Some(a), Some(b)) = (ok(a), ok(b)) else {
                return Err(bad(
                    path,
                    format!("edge [{a}, {b}] names a node that does not exist"),
                ));
            };
            succ[a].push(b);
            pred[b].push(a);
        }
        let mut buf_index = std::collections::HashMap::new();
        let mut buffers: Vec<Buffer> = Vec::new();
        for nd in &nodes {
            if let NodeKind::Alloc { buf, size, ty } = nd.kind {
                if buf_index.insert(buf, buffers.len()).is_some() {
                    return Err(bad(path, format!("buffer {buf} is allocated twice")));
                }
                buffers.push(Buffer {
                    id: buf,
                    size,
                    ty,
                    alloc: nd.id,
                    free: usize::MAX,
                    users: Vec::new(),
                    copy_in: false,
                });
            }
        }
        for nd in &nodes {
            match &nd.kind {
                NodeKind::Free { buf, .. } => {
                    let &i = buf_index.get(buf).ok_or_else(|| {
                        bad(
                            path,
                            format!(
                                "FREE node {} of buffer {buf}, which is never allocated",
                                nd.id
                            ),
                        )
                    })?;
                    if buffers[i].free != usize::MAX {
                        return Err(bad(path, format!("buffer {buf} is freed twice")));
                    }
                    buffers[i].free = nd.id;
                }
                NodeKind::Op { bufs, .. } => {
                    for b in bufs {
                        let &i = buf_index.get(b).ok_or_else(|| {
                            bad(
                                path,
                                format!(
                                    "node {} ({}) uses buffer {b}, which is never allocated",
                                    nd.id, nd.op
                                ),
                            )
                        })?;
                        buffers[i].users.push(nd.id);
                        if nd.op == "COPY_IN" {
                            buffers[i].copy_in = true;
                        }
                    }
                }
                NodeKind::Alloc { .. } => {}
            }
        }
        if let Some(b) = buffers.iter().find(|b| b.free == usize::MAX) {
            return Err(bad(path, format!("buffer {} is never freed", b.id)));
        }
        let k = Kernel {
            name,
            nodes,
            succ,
            pred,
            buffers,
            buf_index,
        };
        let Some(order) = k.topological_order() else {
            return Err(bad(path, "the edges contain a cycle".into()));
        };
        k.check_cycles_sum().map_err(|m| bad(path, m))?;
        k.check_lifetimes(&order).map_err(|m| bad(path, m))?;
        Ok(k)
    }

    /// Every schedule's time fits: the cycles of all ops together stay
    /// under 2^62 (a case of 383 ops of 2^62 cycles each summed to a
    /// wrapped total).
    fn check_cycles_sum(&self) -> std::result::Result<(), String> {
        let mut total: u64 = 0;
        for nd in &self.nodes {
            if let NodeKind::Op { cycles, .. } = nd.kind {
                total = total
                    .checked_add(cycles)
                    .filter(|&t| t < crate::limits::MAX_NS)
                    .ok_or_else(|| {
                        format!(
                            "node {} ({}): Cycles {cycles} takes the case's total past 2^62 cycles",
                            nd.id, nd.op
                        )
                    })?;
            }
        }
        Ok(())
    }

    /// Every use of a buffer follows its ALLOC and precedes its FREE in
    /// the edges, so no valid schedule can run a use while the buffer does
    /// not exist (a case missing such an edge made the searches fail late
    /// or never). One forward walk from each ALLOC and one backward walk
    /// from each FREE, cut off at the furthest node they must reach in a
    /// topological order: each walk stays inside the buffer's lifetime.
    fn check_lifetimes(&self, order: &[usize]) -> std::result::Result<(), String> {
        let n = self.nodes.len();
        let mut pos = vec![0usize; n];
        for (i, &v) in order.iter().enumerate() {
            pos[v] = i;
        }
        let mut mark = vec![usize::MAX; n];
        let mut stack = Vec::new();
        for (bi, b) in self.buffers.iter().enumerate() {
            // ALLOC reaches every user and the FREE.
            let far = b
                .users
                .iter()
                .chain([&b.free])
                .map(|&u| pos[u])
                .max()
                .unwrap_or(0);
            walk(
                b.alloc,
                &self.succ,
                |v| pos[v] <= far,
                &mut mark,
                2 * bi,
                &mut stack,
            );
            if let Some(&u) = b
                .users
                .iter()
                .chain([&b.free])
                .find(|&&u| mark[u] != 2 * bi)
            {
                return Err(format!(
                    "node {u} ({}) uses buffer {} but no path of edges leads to it from the buffer's ALLOC (node {}): a schedule could run it before the buffer exists",
                    self.nodes[u].op, b.id, b.alloc
                ));
            }
            // Every user reaches the FREE.
            let near = b.users.iter().map(|&u| pos[u]).min().unwrap_or(pos[b.free]);
            walk(
                b.free,
                &self.pred,
                |v| pos[v] >= near,
                &mut mark,
                2 * bi + 1,
                &mut stack,
            );
            if let Some(&u) = b.users.iter().find(|&&u| mark[u] != 2 * bi + 1) {
                return Err(format!(
                    "node {u} ({}) uses buffer {} but no path of edges leads from it to the buffer's FREE (node {}): a schedule could free the buffer first",
                    self.nodes[u].op, b.id, b.free
                ));
            }
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn buffer(&self, buf: u32) -> Option<&Buffer> {
        self.buf_index.get(&buf).map(|&i| &self.buffers[i])
    }

    /// Any topological order (Kahn, smallest id first), or `None` on a cycle.
    pub fn topological_order(&self) -> Option<Vec<usize>> {
        let indegree: Vec<usize> = self.pred.iter().map(Vec::len).collect();
        super::topo::list_schedule(&self.succ, indegree, &mut super::topo::Earliest).ok()
    }
}

/// Marks with `stamp` every node reachable from `from` along `next`
/// through nodes that `keep` admits.
fn walk(
    from: usize,
    next: &[Vec<usize>],
    keep: impl Fn(usize) -> bool,
    mark: &mut [usize],
    stamp: usize,
    stack: &mut Vec<usize>,
) {
    stack.clear();
    stack.push(from);
    mark[from] = stamp;
    while let Some(v) = stack.pop() {
        for &w in &next[v] {
            if mark[w] != stamp && keep(w) {
                mark[w] = stamp;
                stack.push(w);
            }
        }
    }
}

fn parse_nodes_csv(path: &Path, text: &str) -> Result<Vec<RawNode>> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<String> = lines
        .next()
        .ok_or_else(|| bad(path, "empty nodes CSV".into()))?
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .collect();
    let col = |name: &str| header.iter().position(|h| h == name);
    let id_col = col("Id")
        .or_else(|| col("NodeId"))
        .ok_or_else(|| bad(path, "no Id column".into()))?;
    let (op, buf, size, ty, pipe, cycles, bufs) = (
        col("Op").ok_or_else(|| bad(path, "no Op column".into()))?,
        col("BufId"),
        col("Size"),
        col("Type"),
        col("Pipe"),
        col("Cycles"),
        col("Bufs"),
    );
    let mut out = Vec::new();
    for (ln, line) in lines.enumerate() {
        // Bufs may be a quoted list with commas: split respecting quotes.
        let mut cells: Vec<String> = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        for c in line.chars() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted => cells.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        cells.push(cur);
        let get = |i: Option<usize>| {
            i.and_then(|i| cells.get(i))
                .map(|s| s.trim())
                .filter(|s| !s.is_empty() && *s != "nan" && *s != "NaN")
        };
        let num = |i: Option<usize>| -> Result<Option<i64>> {
            match get(i) {
                None => Ok(None),
                Some(s) => s
                    .parse::<f64>()
                    .map(|v| Some(v as i64))
                    .map_err(|_| bad(path, format!("line {}: {s:?} is not a number", ln + 2))),
            }
        };
        let bufs_v = match get(bufs) {
            None => None,
            Some(s) => Some(
                s.trim_matches(|c| c == '[' || c == ']')
                    .split([',', ' ', ';'])
                    .filter(|x| !x.trim().is_empty())
                    .map(|x| {
                        x.trim()
                            .parse::<i64>()
                            .map_err(|_| bad(path, format!("line {}: buffer id {x:?}", ln + 2)))
                    })
                    .collect::<Result<Vec<i64>>>()?,
            ),
        };
        out.push(RawNode {
            id: num(Some(id_col))?.ok_or_else(|| bad(path, format!("line {}: no Id", ln + 2)))?,
            op: get(Some(op)).unwrap_or_default().to_string(),
            buf_id: num(buf)?,
            size: num(size)?,
            ty: get(ty).map(String::from),
            pipe: get(pipe).map(String::from),
            cycles: num(cycles)?,
            bufs: bufs_v,
        });
    }
    Ok(out)
}

fn parse_edges_csv(path: &Path, text: &str) -> Result<Vec<(i64, i64)>> {
    let mut out = Vec::new();
    for (ln, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let mut it = line.split(',').map(|s| s.trim().parse::<i64>());
        match (it.next(), it.next()) {
            (Some(Ok(a)), Some(Ok(b))) => out.push((a, b)),
            _ => {
                return Err(bad(
                    path,
                    format!("line {}: expected StartNodeId,EndNodeId", ln + 1),
                ))
            }
        }
    }
    Ok(out)
}

impl Kernel {
    /// The kernel DAG as a graph the simulator runs: each buffer a tensor
    /// named `TYPE/ID` (so a hardware profile's pools take them by name
    /// pattern, as the `npu-benchmark` preset does: `L1/*`, `UB/*`, ...),
    /// each op node an op on its pipe (`unit`), in the file's order. A
    /// COPY_IN writes its buffer (a load from DDR is not spill); a MOVE
    /// reads its source and writes its destination; any other op writes
    /// its first buffer and reads the rest, and an op whose first buffer
    /// already holds a value (a MATMUL accumulating into L0C) reads and
    /// updates it in place; a COPY_OUT reads. Cycles stand in for FLOPs,
    /// so at the preset's 1 GFLOP/s an op takes its cycle count in ns when
    /// compute-bound. The benchmark's own rules (L0 one buffer at a time,
    /// the L1+UB peak, spill numbering) are `npu`'s, not the simulator's.
    pub fn to_graph(&self) -> Result<super::Graph> {
        use super::builder::{GraphBuilder, OpSpec, TensorSpec};
        let order = self.topological_order().ok_or_else(|| {
            Error::Unsupported(format!("{}: the kernel DAG has a cycle", self.name))
        })?;
        let name_of = |b: u32| -> Option<String> {
            self.buffer(b)
                .map(|buf| format!("{}/{}", buf.ty.as_str(), buf.id))
        };
        let mut g = GraphBuilder::new(self.name.clone());
        for buf in &self.buffers {
            g.tensor(TensorSpec {
                name: compact_str::format_compact!("{}/{}", buf.ty.as_str(), buf.id),
                bytes: buf.size,
                kind: None,
                shape: None,
                dtype: None,
            });
        }
        let mut written = vec![false; self.buffers.len()];
        for &i in &order {
            let node = &self.nodes[i];
            let NodeKind::Op { cycles, bufs, .. } = &node.kind else {
                continue;
            };
            let names: Vec<CompactString> = bufs
                .iter()
                .filter_map(|&b| name_of(b).map(CompactString::from))
                .collect();
            let idx: Vec<usize> = bufs
                .iter()
                .filter_map(|b| self.buf_index.get(b).copied())
                .collect();
            let (inputs, outputs) = match node.op.as_str() {
                "COPY_IN" => {
                    idx.iter().for_each(|&b| written[b] = true);
                    (Vec::new(), names)
                }
                "COPY_OUT" => (names, Vec::new()),
                _ => match idx.first() {
                    Some(&f) if !written[f] => {
                        written[f] = true;
                        (names[1..].to_vec(), names[..1].to_vec())
                    }
                    // Updated in place: read (it holds a value), not
                    // produced again.
                    _ => (names, Vec::new()),
                },
            };
            g.op(OpSpec {
                name: compact_str::format_compact!("{}#{}", node.op, node.id),
                op_type: node.op.clone().into(),
                inputs,
                outputs,
                flops: Some(*cycles as f64),
            });
        }
        let mut graph = g.build()?;
        // The builder keeps a valid declared order; units follow the ops.
        for i in 0..graph.ops.len() {
            graph.ops.update(i, |op| {
                let declared = op
                    .name
                    .rsplit('#')
                    .next()
                    .and_then(|id| id.parse::<usize>().ok());
                if let Some(NodeKind::Op { pipe, .. }) = declared.map(|id| &self.nodes[id].kind) {
                    op.unit = Some(pipe.as_str().to_string());
                }
            });
        }
        Ok(graph)
    }
}
