//! Running the solver on one window's program: the integer program within
//! a time limit (its solution and whether it is proven), or its LP
//! relaxation.

use super::model::{Model, SolvedTensor, SCALE};
use good_lp::{
    default_solver, Solution, SolutionStatus, SolverModel, WithInitialSolution, WithTimeLimit,
};

/// What solving one window's program gave.
pub(super) struct Solved {
    /// Traffic of the solution found (bytes), and whether it is proven.
    pub(super) value: f64,
    pub(super) proven: bool,
    /// Per modelled tensor: key steps with residency, and whether written.
    pub(super) residency: Vec<SolvedTensor>,
}

/// Solves `m` as an integer program within `seconds`.
pub(super) fn solve_integer(m: Model, seconds: f64) -> Option<Solved> {
    let Model {
        vars,
        objective,
        constant,
        constraints,
        start,
        residency,
        ..
    } = m;
    let mut model = vars
        .minimise(objective.clone())
        .using(default_solver)
        .with_time_limit(seconds.max(0.01))
        .with_initial_solution(start);
    for c in constraints {
        model = model.with(c);
    }
    let sol = model.solve().ok()?;
    let proven = matches!(sol.status(), SolutionStatus::Optimal);
    let value = (sol.eval(&objective) + constant) / SCALE;
    let residency = residency
        .into_iter()
        .map(|(t, keys, r, w)| {
            let on = keys
                .iter()
                .zip(&r)
                .map(|(&s, &v)| (s, sol.value(v) > 0.5))
                .collect();
            (t, on, w.is_some_and(|w| sol.value(w) > 0.5))
        })
        .collect();
    Some(Solved {
        value,
        proven,
        residency,
    })
}

/// The LP relaxation's optimum of `m` (bytes).
pub(super) fn solve_relaxed(m: Model) -> Option<f64> {
    let mut model = m.vars.minimise(m.objective.clone()).using(default_solver);
    for c in m.constraints {
        model = model.with(c);
    }
    let sol = model.solve().ok()?;
    Some((sol.eval(&m.objective) + m.constant) / SCALE)
}

/// Rounds a solver's value down to whole bytes, with room for
/// floating-point error, so a bound stays a bound.
pub(super) fn floor_bytes(v: f64) -> u64 {
    (v - v.abs() * 1e-9).floor().max(0.0) as u64
}
