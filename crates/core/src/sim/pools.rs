//! Which on-chip pool each tensor lives in. Pool 0 is `sram` (the
//! profile's `memory`); a profile's `[[pools]]` add more, each taking the
//! tensors whose kind it lists or whose name matches one of its patterns
//! (first pool that matches wins). One pool unless the profile declares
//! more, so single-pool runs are exactly what they always were.

use crate::cost::{AllocatorFit, HardwareProfile, TensorClass};
use crate::graph::{Graph, TensorKind};
use wildmatch::WildMatch;

/// One pool's address space as the simulator sets it up.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolDef {
    pub name: String,
    pub capacity: u64,
    pub alignment: u64,
    pub fit: AllocatorFit,
}

/// The pools of a run and each tensor's pool (an index into `defs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Pools {
    pub defs: Vec<PoolDef>,
    pub of: Vec<usize>,
}

fn class(k: TensorKind) -> TensorClass {
    match k {
        TensorKind::Input => TensorClass::Input,
        TensorKind::Activation => TensorClass::Activation,
        TensorKind::Weight => TensorClass::Weight,
        TensorKind::Output => TensorClass::Output,
    }
}

impl Pools {
    /// The pools `hw` declares, and where each tensor of `g` goes.
    pub fn assign(g: &Graph, hw: &HardwareProfile) -> Pools {
        let mut defs = vec![PoolDef {
            name: hw.main_pool().to_string(),
            capacity: hw.memory.capacity.0,
            alignment: hw.memory.alignment,
            fit: hw.memory.allocator,
        }];
        defs.extend(hw.pools.iter().map(|p| PoolDef {
            name: p.name.clone(),
            capacity: p.capacity.0,
            alignment: p.alignment.unwrap_or(hw.memory.alignment),
            fit: p.allocator.unwrap_or(hw.memory.allocator),
        }));
        let patterns: Vec<Vec<WildMatch>> = hw
            .pools
            .iter()
            .map(|p| p.names.iter().map(|n| WildMatch::new(n)).collect())
            .collect();
        let of = g
            .tensors
            .iter()
            .map(|t| {
                hw.pools
                    .iter()
                    .zip(&patterns)
                    .position(|(p, pats)| {
                        p.kinds.contains(&class(t.kind)) || pats.iter().any(|m| m.matches(t.name))
                    })
                    .map_or(0, |i| i + 1)
            })
            .collect();
        Pools { defs, of }
    }

    pub fn is_single(&self) -> bool {
        self.defs.len() == 1
    }

    /// Tensors per pool, as a mask (for per-pool bounds).
    pub fn members(&self, pool: usize) -> Vec<bool> {
        self.of.iter().map(|&p| p == pool).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::PoolSpec;
    use crate::units::Size;

    #[test]
    fn kinds_and_patterns_pick_the_pool_first_match_wins() {
        use crate::graph::builder::{GraphBuilder, OpSpec, TensorSpec};
        let mut b = GraphBuilder::new("g");
        for (name, kind) in [
            ("x", None),
            ("conv.w", Some(TensorKind::Weight)),
            ("y", None),
            ("kv_cache.out", None),
        ] {
            b.tensor(TensorSpec {
                name: name.into(),
                bytes: 100,
                kind,
                shape: None,
                dtype: None,
            });
        }
        for (name, ins, outs) in [
            ("conv", vec!["x", "conv.w"], vec!["y"]),
            ("mm", vec!["y"], vec!["kv_cache.out"]),
        ] {
            b.op(OpSpec {
                name: name.into(),
                op_type: "Add".into(),
                inputs: ins.into_iter().map(Into::into).collect(),
                outputs: outs.into_iter().map(Into::into).collect(),
                flops: Some(1.0),
            });
        }
        let g = b.build().unwrap();
        let mut hw = HardwareProfile::preset("seed-npu").unwrap();
        assert!(Pools::assign(&g, &hw).is_single());
        hw.pools = vec![
            PoolSpec {
                name: "wbuf".into(),
                capacity: Size(1024),
                alignment: None,
                allocator: None,
                kinds: vec![TensorClass::Weight],
                names: vec![],
            },
            PoolSpec {
                name: "kv".into(),
                capacity: Size(4096),
                alignment: Some(64),
                allocator: None,
                kinds: vec![],
                names: vec!["kv_*".into(), "conv.?".into()],
            },
        ];
        let p = Pools::assign(&g, &hw);
        let pool_of = |name: &str| {
            let t = g.tensors.iter().position(|t| t.name == name).unwrap();
            p.defs[p.of[t]].name.clone()
        };
        assert_eq!(pool_of("x"), "sram");
        // conv.w is a weight (first pool) before its name matches the second.
        assert_eq!(pool_of("conv.w"), "wbuf");
        assert_eq!(pool_of("kv_cache.out"), "kv");
        assert_eq!(p.defs[2].alignment, 64);
        assert_eq!(p.defs[1].alignment, hw.memory.alignment);
    }
}
