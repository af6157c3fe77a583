//! Banded traversals of tiled kernels: when the groups form a grid (each
//! group shares one family of L1 tiles with its row and another with its
//! column, as a Matmul's output tiles share A rows and B columns), walk the
//! grid in bands of a few rows, snaking along the columns. A band of `h`
//! rows keeps its `h` row families resident while each column family is
//! used `h` times in a row, so reloads fall roughly as `1/h` until the band
//! no longer fits; which mix of band heights fits best is measured with the
//! proxy, not guessed.
//!
//! Found by structure, not by kernel name: a case that is not a grid gets
//! no banded orders. (On Matmul_Case0 a band mix reaches the best extra
//! traffic the local search found; on the 16x16x16 tiling it goes below
//! the best published figure, where the local search starves.)

use super::solve::Proxy;
use std::collections::{BTreeMap, VecDeque};

/// Where each group sits in a grid: `rows[r]` and `cols[c]` in file order
/// of their first group, `cell[g] = (r, c)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub rows: usize,
    pub cols: usize,
    pub cell: Vec<(usize, usize)>,
}

/// The grid the groups form through the buffers they share (`access[g]`:
/// the non-L0 buffers group `g` touches), if they form one: the families
/// of groups sharing a buffer split into two colours (families of one
/// colour disjoint), each group in exactly one family of each, and every
/// (row, column) pair holding exactly one group.
pub fn grid(access: &[Vec<usize>], nbufs: usize) -> Option<Grid> {
    let ng = access.len();
    if ng < 4 {
        return None;
    }
    // Groups per buffer, then the distinct families (sets of 2+ groups).
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); nbufs];
    for (g, bufs) in access.iter().enumerate() {
        for &b in bufs {
            if users[b].last() != Some(&g) {
                users[b].push(g);
            }
        }
    }
    let mut family_of: BTreeMap<Vec<usize>, usize> = BTreeMap::new();
    let mut fams_of_group: Vec<Vec<usize>> = vec![Vec::new(); ng];
    for u in users.into_iter().filter(|u| u.len() >= 2) {
        let next = family_of.len();
        let f = *family_of.entry(u.clone()).or_insert(next);
        for g in u {
            if !fams_of_group[g].contains(&f) {
                fams_of_group[g].push(f);
            }
        }
    }
    if fams_of_group.iter().any(|f| f.len() != 2) {
        return None;
    }
    // Two families meeting in a group get different colours.
    let nf = family_of.len();
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); nf];
    for f in &fams_of_group {
        adj[f[0]].push(f[1]);
        adj[f[1]].push(f[0]);
    }
    let mut colour = vec![u8::MAX; nf];
    for s in 0..nf {
        if colour[s] != u8::MAX {
            continue;
        }
        colour[s] = 0;
        let mut q = VecDeque::from([s]);
        while let Some(f) = q.pop_front() {
            for &h in &adj[f] {
                if colour[h] == u8::MAX {
                    colour[h] = 1 - colour[f];
                    q.push_back(h);
                } else if colour[h] == colour[f] {
                    return None;
                }
            }
        }
    }
    // Rows: the colour of group 0's first family; numbered by first group.
    let row_colour = colour[fams_of_group[0][0]];
    let mut row_index: BTreeMap<usize, usize> = BTreeMap::new();
    let mut col_index: BTreeMap<usize, usize> = BTreeMap::new();
    let mut cell = Vec::with_capacity(ng);
    for fams in &fams_of_group {
        let (r, c) = if colour[fams[0]] == row_colour {
            (fams[0], fams[1])
        } else {
            (fams[1], fams[0])
        };
        let nr = row_index.len();
        let r = *row_index.entry(r).or_insert(nr);
        let nc = col_index.len();
        let c = *col_index.entry(c).or_insert(nc);
        cell.push((r, c));
    }
    let (rows, cols) = (row_index.len(), col_index.len());
    let mut seen = vec![false; rows * cols];
    for &(r, c) in &cell {
        if std::mem::replace(&mut seen[r * cols + c], true) {
            return None;
        }
    }
    (rows * cols == ng).then_some(Grid { rows, cols, cell })
}

/// Ways to cut `total` rows into bands of heights `h` and `h + 1` (every
/// arrangement), at most `limit` of them.
fn band_mixes(total: usize, h: usize, limit: usize, out: &mut Vec<Vec<usize>>) {
    fn go(left: usize, h: usize, cur: &mut Vec<usize>, limit: usize, out: &mut Vec<Vec<usize>>) {
        if out.len() >= limit {
            return;
        }
        if left == 0 {
            out.push(cur.clone());
            return;
        }
        for part in [h, h + 1] {
            if part <= left {
                cur.push(part);
                go(left - part, h, cur, limit, out);
                cur.pop();
            }
        }
    }
    let start = out.len();
    go(total, h, &mut Vec::new(), start + limit, out);
}

/// The group order of bands `heights` over `grid` (rows as bands, or
/// columns when `transpose`): band by band, the columns in alternating
/// direction, and within a column the band's rows, alternating direction
/// when `zigzag` so consecutive groups share a tile family.
fn banded(grid: &Grid, heights: &[usize], transpose: bool, zigzag: bool) -> Vec<usize> {
    let (rows, cols) = if transpose {
        (grid.cols, grid.rows)
    } else {
        (grid.rows, grid.cols)
    };
    let mut at = vec![usize::MAX; rows * cols];
    for (g, &(r, c)) in grid.cell.iter().enumerate() {
        let (r, c) = if transpose { (c, r) } else { (r, c) };
        at[r * cols + c] = g;
    }
    let mut order = Vec::with_capacity(rows * cols);
    let mut first = 0;
    for (band, &h) in heights.iter().enumerate() {
        for j in 0..cols {
            let c = if band % 2 == 0 { j } else { cols - 1 - j };
            for i in 0..h {
                let r = if zigzag && j % 2 == 1 {
                    first + h - 1 - i
                } else {
                    first + i
                };
                order.push(at[r * cols + c]);
            }
        }
        first += h;
    }
    order
}

/// Up to `keep` banded orders of the groups, lowest proxy traffic first
/// (none unless the groups form a grid of at least two rows and columns).
/// Band heights up to 8, every mix of two neighbouring heights up to a few
/// hundred per height, both orientations, with and without zigzag.
pub fn band_orders(proxy: &mut Proxy, nbufs: usize, keep: usize) -> Vec<(Vec<usize>, u64)> {
    let Some(g) = grid(proxy.access(), nbufs) else {
        return Vec::new();
    };
    if g.rows < 2 || g.cols < 2 {
        return Vec::new();
    }
    let mut scored: Vec<(Vec<usize>, u64)> = Vec::new();
    for transpose in [false, true] {
        let total = if transpose { g.cols } else { g.rows };
        let mut mixes = Vec::new();
        for h in 1..=8.min(total) {
            band_mixes(total, h, 256, &mut mixes);
        }
        mixes.sort();
        mixes.dedup();
        for heights in &mixes {
            for zigzag in [true, false] {
                let order = banded(&g, heights, transpose, zigzag);
                let t = proxy.traffic(&order);
                scored.push((order, t));
            }
        }
    }
    scored.sort_by_key(|(_, t)| *t);
    scored.dedup_by(|a, b| a.0 == b.0);
    scored.truncate(keep);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3 x 4 grid: group (r, c) touches row tile r and column tile c.
    fn matmul_like(rows: usize, cols: usize) -> Vec<Vec<usize>> {
        (0..rows)
            .flat_map(|r| (0..cols).map(move |c| vec![r, rows + c]))
            .collect()
    }

    #[test]
    fn a_grid_is_found_and_a_chain_is_not() {
        let g = grid(&matmul_like(3, 4), 7).unwrap();
        assert_eq!((g.rows, g.cols), (3, 4));
        assert_eq!(g.cell[5], (1, 1));
        // A chain: group i shares buffer i with group i + 1 only.
        let chain: Vec<Vec<usize>> = (0..6).map(|i| vec![i, i + 1]).collect();
        assert!(grid(&chain, 7).is_none());
    }

    #[test]
    fn bands_visit_every_group_once() {
        let g = grid(&matmul_like(5, 4), 9).unwrap();
        let o = banded(&g, &[2, 3], false, true);
        let mut s = o.clone();
        s.sort();
        assert_eq!(s, (0..20).collect::<Vec<_>>());
        // Band one walks column 0 down rows 0, 1, then column 1 up.
        assert_eq!(&o[..4], &[0, 4, 5, 1]);
        let mut mixes = Vec::new();
        band_mixes(5, 2, 100, &mut mixes);
        assert_eq!(mixes, vec![vec![2, 3], vec![3, 2]]);
    }
}
