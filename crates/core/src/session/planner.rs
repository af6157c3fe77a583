//! The session's plans and bounds: one solve per (graph, capacity,
//! budget), remembered for the job and kept in the result cache, so the
//! planned run, a suggestion's planned candidate and a what-if point on the
//! same graph and capacity follow one plan instead of each solving again.

use super::cache::{Cache, Key, KeyBuilder};
use crate::cancel::Cancel;
use crate::graph::Graph;
use crate::sim::optimum::{optimal_traffic_with, Optimum, OptimumLimits, PoolSize};
use crate::sim::plan::Residency;
use crate::sim::Planner;
use crate::Result;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// An optimum as the cache keeps it: the plan, which the optimum's own
/// JSON leaves out, beside it.
#[derive(Serialize, Deserialize)]
struct Stored {
    optimum: Optimum,
    plan: Option<Residency>,
}

/// The cache key of the exact program of `prepared` in `pool` under
/// `limits`.
pub(super) fn optimum_key(prepared: &Graph, pool: PoolSize, limits: OptimumLimits) -> Key {
    KeyBuilder::new("optimum")
        .graph(prepared)
        .part("pool", &(pool.capacity, pool.alignment))
        .part(
            "limits",
            &(
                limits.time_limit_s,
                limits.window_variables,
                limits.plan,
                limits.cover_cuts,
            ),
        )
        .finish()
}

/// What identifies a plan whatever budget solved it: the graph and pool.
fn plan_key(prepared: &Graph, pool: PoolSize) -> Key {
    KeyBuilder::new("plan-id")
        .graph(prepared)
        .part("pool", &(pool.capacity, pool.alignment))
        .finish()
}

/// The exact program of `prepared` in `pool`: from the cache, else solved
/// (cancellable, `progress(done, windows)`) and stored.
pub(super) fn optimum(
    cache: Option<&Cache>,
    prepared: &Graph,
    pool: PoolSize,
    limits: OptimumLimits,
    cancel: &Cancel,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Optimum> {
    let key = optimum_key(prepared, pool, limits);
    if let Some(s) = cache.and_then(|c| c.get::<Stored>(&key)) {
        let mut o = s.optimum;
        o.plan = s.plan.map(Arc::new);
        o.cached = true;
        return Ok(o);
    }
    let o = optimal_traffic_with(prepared, pool, limits, cancel, progress)?;
    if let Some(c) = cache {
        c.put(
            &key,
            &Stored {
                optimum: o.clone(),
                plan: o.plan.as_deref().cloned(),
            },
        );
    }
    Ok(o)
}

/// The session's [`Planner`]: plans already solved in this job first (the
/// bound's), then the cache, then a solve within `time_limit_s`.
pub(super) struct SessionPlanner<'a> {
    pub(super) cache: Option<&'a Cache>,
    pub(super) time_limit_s: f64,
    known: Mutex<HashMap<Key, Option<Arc<Residency>>>>,
    /// The run's own graph and pool are solved as the bound solves them
    /// (its budget, shared in the cache), wherever their plan is first
    /// asked for: a suggestion's "switch to planned" then matches the
    /// planned run whether or not the bound ran first.
    baseline: Option<(Key, OptimumLimits)>,
}

impl<'a> SessionPlanner<'a> {
    pub(super) fn new(cache: Option<&'a Cache>, time_limit_s: f64) -> SessionPlanner<'a> {
        SessionPlanner {
            cache,
            time_limit_s,
            known: Mutex::new(HashMap::new()),
            baseline: None,
        }
    }

    /// Plans of `prepared` in `pool` are solved under `limits`.
    pub(super) fn with_baseline(
        mut self,
        prepared: &Graph,
        pool: PoolSize,
        limits: OptimumLimits,
    ) -> SessionPlanner<'a> {
        // With the bound off, the plan still gets the default budget.
        let limits = OptimumLimits {
            time_limit_s: if limits.time_limit_s > 0.0 {
                limits.time_limit_s
            } else {
                crate::sim::optimum::DEFAULT_TIME_LIMIT_S
            },
            ..limits
        };
        self.baseline = Some((plan_key(prepared, pool), limits));
        self
    }

    /// Remembers the plan solved for `prepared` in `pool`.
    pub(super) fn know(&self, prepared: &Graph, pool: PoolSize, plan: Option<Arc<Residency>>) {
        if let Ok(mut k) = self.known.lock() {
            k.insert(plan_key(prepared, pool), plan);
        }
    }
}

impl Planner for SessionPlanner<'_> {
    fn plan(
        &self,
        prepared: &Graph,
        pool: PoolSize,
        cancel: &Cancel,
    ) -> Result<Option<Arc<Residency>>> {
        let id = plan_key(prepared, pool);
        if let Some(p) = self.known.lock().ok().and_then(|k| k.get(&id).cloned()) {
            return Ok(p);
        }
        let limits = match &self.baseline {
            Some((k, l)) if *k == id => *l,
            _ => OptimumLimits {
                time_limit_s: self.time_limit_s,
                ..Default::default()
            },
        };
        let plan = optimum(self.cache, prepared, pool, limits, cancel, &|_, _| {})?.plan;
        self.know(prepared, pool, plan.clone());
        Ok(plan)
    }
}
