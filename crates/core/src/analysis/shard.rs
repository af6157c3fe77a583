//! Sweeps split across machines: `whatif --shard K/N` computes the K-th of
//! N contiguous slices of the configuration grid (in the grid's own order),
//! and [`merge`] puts the slices back together into exactly the rows, in
//! exactly the order, the unsharded sweep prints. Each shard records a
//! fingerprint of its grid (model, hardware, config, every point) so that
//! slices of different sweeps are refused instead of silently mixed.

use super::runs::RunsReport;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// Which slice: `index` of `count`, 1-based as written (`--shard 2/3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Shard, String> {
        let bad = || format!("--shard {s:?}: write K/N with 1 <= K <= N (e.g. 2/3)");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// The points of a `total`-point grid this shard computes: contiguous,
    /// the first `total % count` shards one point longer.
    pub fn range(self, total: usize) -> std::ops::Range<usize> {
        let (base, extra) = (total / self.count, total % self.count);
        let k = self.index - 1;
        let start = k * base + k.min(extra);
        start..start + base + usize::from(k < extra)
    }
}

/// What a shard's JSON records about the sweep it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub index: usize,
    pub count: usize,
    /// Points in the whole grid.
    pub points: usize,
    /// FNV-1a of the grid's description (model, hardware, config, points).
    pub grid: String,
}

/// A stable fingerprint of `parts` (FNV-1a 64, hex): the same sweep gives
/// the same text on every machine and build.
pub fn fingerprint(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// The shards (any order) as the one report the unsharded sweep prints.
/// `names` label the inputs in errors.
pub fn merge(shards: Vec<(String, RunsReport)>) -> Result<RunsReport> {
    let refuse = |m: String| Error::Config(format!("merge: {m}"));
    let mut with: Vec<(ShardInfo, String, RunsReport)> = Vec::with_capacity(shards.len());
    for (name, r) in shards {
        let info = r.shard.clone().ok_or_else(|| {
            refuse(format!(
                "{name} is not a shard (run whatif with --shard K/N --format json)"
            ))
        })?;
        with.push((info, name, r));
    }
    let Some((first, first_name, _)) = with.first().map(|(i, n, r)| (i.clone(), n.clone(), r))
    else {
        return Err(refuse("no shards given".into()));
    };
    for (info, name, r) in &with {
        if info.grid != first.grid || info.count != first.count || info.points != first.points {
            return Err(refuse(format!(
                "{name} is a shard of a different sweep than {first_name} (grid {} of {} points in {} shards vs {} of {} in {})",
                info.grid, info.points, info.count, first.grid, first.points, first.count
            )));
        }
        let want = Shard {
            index: info.index,
            count: info.count,
        }
        .range(info.points)
        .len();
        if r.runs.len() != want {
            return Err(refuse(format!(
                "{name}: shard {}/{} has {} rows, expected {want}",
                info.index,
                info.count,
                r.runs.len()
            )));
        }
    }
    with.sort_by_key(|(i, _, _)| i.index);
    if let Some(w) = with.windows(2).find(|w| w[0].0.index == w[1].0.index) {
        return Err(refuse(format!(
            "{}: shard {}/{} given twice (also {})",
            w[1].1, w[1].0.index, w[1].0.count, w[0].1
        )));
    }
    for (k, (info, name, _)) in with.iter().enumerate() {
        if info.index != k + 1 {
            let missing = (1..=first.count).find(|i| !with.iter().any(|(x, _, _)| x.index == *i));
            return Err(refuse(match missing {
                Some(m) => format!("shard {m}/{} is missing", first.count),
                None => format!("{name}: shard {}/{} given twice", info.index, info.count),
            }));
        }
    }
    if with.len() != first.count {
        return Err(refuse(format!(
            "{} of {} shards given; shard {}/{} is missing",
            with.len(),
            first.count,
            with.len() + 1,
            first.count
        )));
    }
    let model = with[0].2.model.clone();
    let runs = with.into_iter().flat_map(|(_, _, r)| r.runs).collect();
    Ok(RunsReport {
        model,
        runs,
        optimum: None,
        shard: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_the_grid_once_in_order() {
        for total in 0..40 {
            for count in 1..9 {
                let mut next = 0;
                for index in 1..=count {
                    let r = Shard { index, count }.range(total);
                    assert_eq!(r.start, next);
                    assert!(r.len() <= total / count + 1);
                    next = r.end;
                }
                assert_eq!(next, total);
            }
        }
        assert!("0/3".parse::<Shard>().is_err());
        assert!("4/3".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
        assert_eq!("2/3".parse::<Shard>(), Ok(Shard { index: 2, count: 3 }));
        assert_ne!(fingerprint(&["a", "bc"]), fingerprint(&["ab", "c"]));
    }
}
