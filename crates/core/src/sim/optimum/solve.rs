//! Running the solver on one window's program: the integer program within
//! a time limit (its solution and whether it is proven), or its LP
//! relaxation.
//!
//! The pure-Rust solver microlp runs in slices of [`SLICE`]: it keeps a
//! timed-out search and resumes it, so between slices the solve checks its
//! [`Cancel`] token, and a cancelled solve stops within one slice instead
//! of running out its whole budget (the explorer's live loop cancels stale
//! solves when the user edits the config).

use super::model::{Model, SolvedTensor, SCALE};
use crate::cancel::Cancel;
use microlp::{ComparisonOp, OptimizationDirection, Problem, ResumeOptions, SolveOptions};
use std::time::{Duration, Instant};

/// How long the solver runs between checks of its cancel token.
pub(super) const SLICE: Duration = Duration::from_millis(40);

/// What solving one window's program gave.
pub(super) struct Solved {
    /// Traffic of the solution found (bytes), and whether it is proven.
    pub(super) value: f64,
    pub(super) proven: bool,
    /// Per modelled tensor: key steps with residency, and whether written.
    pub(super) residency: Vec<SolvedTensor>,
}

/// Solves `m` as an integer program within `seconds`, started from its
/// greedy solution; `None` when cancelled or when no solution was found.
pub(super) fn solve_integer(m: Model, seconds: f64, cancel: &Cancel) -> Option<Solved> {
    let (problem, vars) = problem_of(&m);
    let warm = m.start.iter().map(|&(v, x)| (vars[v], x)).collect();
    let (x, proven) = run(&problem, seconds.max(0.01), Some(warm), cancel)?;
    let value = m.value(&x) / SCALE;
    let residency = m
        .residency
        .into_iter()
        .map(|(t, keys, r, w)| {
            let on = keys
                .iter()
                .zip(&r)
                .map(|(&s, &v)| (s, x[v] > 0.5))
                .collect();
            (t, on, w.is_some_and(|w| x[w] > 0.5))
        })
        .collect();
    Some(Solved {
        value,
        proven,
        residency,
    })
}

/// The LP relaxation's optimum of `m` (bytes), within `seconds`; `None`
/// when cancelled or out of time (a relaxation stopped early bounds
/// nothing).
pub(super) fn solve_relaxed(m: Model, seconds: f64, cancel: &Cancel) -> Option<f64> {
    let (problem, _) = problem_of(&m);
    let (x, proven) = run(&problem, seconds.max(0.01), None, cancel)?;
    proven.then(|| m.value(&x) / SCALE)
}

/// The program as microlp's problem, and its handle of each variable.
fn problem_of(m: &Model) -> (Problem, Vec<microlp::Variable>) {
    let mut p = Problem::new(OptimizationDirection::Minimize);
    let vars: Vec<microlp::Variable> = m
        .objective
        .iter()
        .map(|&c| {
            if m.integer {
                p.add_binary_var(c)
            } else {
                p.add_var(c, (0.0, 1.0))
            }
        })
        .collect();
    for row in &m.rows {
        let terms: Vec<(microlp::Variable, f64)> =
            row.terms.iter().map(|&(v, c)| (vars[v], c)).collect();
        let op = if row.at_least {
            ComparisonOp::Ge
        } else {
            ComparisonOp::Le
        };
        p.add_constraint(terms.as_slice(), op, row.rhs);
    }
    (p, vars)
}

/// Runs `problem` in slices until it is solved, `seconds` have passed or
/// `cancel` fires: the variables' values and whether they are proven
/// optimal. `None` without a solution, or cancelled.
fn run(
    problem: &Problem,
    seconds: f64,
    warm: Option<Vec<(microlp::Variable, f64)>>,
    cancel: &Cancel,
) -> Option<(Vec<f64>, bool)> {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);

    let slice = |now: Instant| Some(SLICE.min(deadline.saturating_duration_since(now)));
    let mut opts = SolveOptions::default();
    opts.time_limit = slice(Instant::now());
    opts.warm_start = warm;
    let mut outcome = problem.solve_with(opts).ok()?;
    loop {
        if cancel.is_cancelled() {
            return None;
        }
        let now = Instant::now();
        let more = matches!(
            outcome.termination_reason(),
            microlp::TerminationReason::TimeLimit
        );
        if outcome.is_optimal() || now >= deadline || !more {
            break;
        }
        let mut resume = ResumeOptions::default();
        resume.time_limit = slice(now);
        outcome = outcome.resume_with(resume).ok()?;
    }
    let proven = outcome.is_optimal();
    let solution = outcome.into_solution().ok()?;
    Some((solution.iter().map(|(_, x)| x).collect(), proven))
}

/// Rounds a solver's value down to whole bytes, with room for
/// floating-point error, so a bound stays a bound.
pub(super) fn floor_bytes(v: f64) -> u64 {
    (v - v.abs() * 1e-9).floor().max(0.0) as u64
}
