//! What a trace can support. A runtime profile holds what its runtime
//! recorded and nothing more: ONNX Runtime's profile has allocations but no
//! frees, offsets or pool limit; PyTorch's has allocations and frees but
//! nested calls and no limit; a probe's JSONL stream has whatever the
//! runtime reported. Figures derived from something a trace lacks (a
//! "capacity" that is only the high-water mark of never-freed memory, a
//! peak of allocations never freed) would be invented, so every view and
//! report asks [`Capabilities::of`] first and says what is missing instead.
//!
//! Imports only the trace model.

use super::{EventKind, Importer, Producer, Source, Trace};
use serde::Serialize;

/// What a trace records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// Tensors are freed (or a model gave their lifetimes): live bytes and
    /// their peak are known.
    pub frees: bool,
    /// Events say where in the pool a tensor sits: the memory map.
    pub offsets: bool,
    /// The pool's capacity is a declared limit, not a high-water mark:
    /// capacity lines, capacity-vs-lifetime classification, bounds.
    pub capacity: bool,
    /// Ops have start and end times.
    pub op_times: bool,
    /// Ops nest inside ops (see [`super::nesting`]).
    pub nested: bool,
    /// Evictions, reloads or streams are recorded (a simulator always
    /// records them, even when there are none).
    pub spill_events: bool,
}

/// One thing a trace lacks, with what it keeps from view and how to get it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    pub what: &'static str,
    /// The figures left out for it.
    pub hides: &'static str,
    /// How to get it.
    pub how: String,
}

impl Capabilities {
    /// Everything: a simulator run (or an NPU case) knows all of it.
    pub const ALL: Capabilities = Capabilities {
        frees: true,
        offsets: true,
        capacity: true,
        op_times: true,
        nested: false,
        spill_events: true,
    };

    /// Read from the columns alone (no row is built: every open asks this
    /// of millions of ops and events).
    pub fn of(tr: &Trace) -> Capabilities {
        let simulated =
            tr.source == Source::Simulator || matches!(tr.meta.producer, Producer::NpuCase(_));
        let nested = tr.ops.has_parents() || tr.ops.has_self_times();
        if simulated {
            return Capabilities {
                nested,
                ..Self::ALL
            };
        }
        let has = |k: EventKind| tr.events.kinds().contains(&k);
        let capacity = match &tr.meta.producer {
            Producer::Instrumented(i) => i.capacity_declared,
            // Another tool's or a hand-written trace: its pools are what it
            // declared.
            Producer::Unknown { .. } => tr.pools.iter().any(|p| p.capacity_bytes > 0),
            _ => true,
        };
        let probe = matches!(
            &tr.meta.producer,
            Producer::Instrumented(i) if i.importer == Importer::Jsonl
        );
        Capabilities {
            // A probe stream reports frees as they happen: an allocation
            // not freed yet is live.
            frees: probe || has(EventKind::Free),
            offsets: tr.events.has_offsets(),
            capacity,
            op_times: (tr.ops.start_col().iter())
                .zip(tr.ops.end_col())
                .any(|(s, e)| e > s),
            nested,
            spill_events: probe
                || [
                    EventKind::Evict,
                    EventKind::Reload,
                    EventKind::StreamIn,
                    EventKind::StreamOut,
                ]
                .into_iter()
                .any(has),
        }
    }

    /// Whether capacity figures (capacity lines, classification, bounds)
    /// mean anything.
    pub fn capacity_figures(&self) -> bool {
        self.capacity && self.frees
    }

    /// What is missing, for `tr` (hints name its importer's way to get it).
    pub fn missing(&self, tr: &Trace) -> Vec<Missing> {
        let importer = match &tr.meta.producer {
            Producer::Instrumented(i) => Some(i.importer),
            _ => None,
        };
        let mut v = Vec::new();
        if !self.frees {
            v.push(Missing {
                what: "frees",
                hides: "live bytes, their peak and tensor lifetimes",
                how: match importer {
                    Some(Importer::Ort) => {
                        "ONNX Runtime records none; link the model for lifetimes from its graph: --model MODEL.onnx".into()
                    }
                    Some(Importer::Jsonl) => "report them from the runtime (spill_probe_free)".into(),
                    Some(Importer::Etdump) => "the program's plan has them: view RUN.etdp --model MODEL.pte".into(),
                    _ => "the runtime recorded none".into(),
                },
            });
        }
        if !self.capacity {
            v.push(Missing {
                what: "declared capacity",
                hides: "capacity lines and the capacity-vs-lifetime split",
                how: match importer {
                    Some(Importer::Jsonl) => {
                        "declare the pool (spill_probe_pool(name, capacity, alignment))".into()
                    }
                    Some(Importer::Etdump) => {
                        "the program's plan has it: view RUN.etdp --model MODEL.pte".into()
                    }
                    _ => "profilers record no limit; simulate the model with --capacity".into(),
                },
            });
        }
        if !self.offsets {
            v.push(Missing {
                what: "offsets",
                hides: "the memory map",
                how: match importer {
                    Some(Importer::Jsonl) => "pass offsets to spill_probe_alloc".into(),
                    _ => "the runtime recorded none".into(),
                },
            });
        }
        if !self.spill_events {
            v.push(Missing {
                what: "spill events",
                hides: "spill figures (ops are ranked by time and memory instead)",
                how: match importer {
                    Some(Importer::Etdump) => "an ETDump has none; ExecuTorch's plan timed by it: view RUN.etdp --model MODEL.pte; the program simulated with its op times: view MODEL.pte --calibrate RUN.etdp".into(),
                    _ => "this runtime reports none; simulate the model with its op times: view MODEL.onnx --calibrate PROFILE".into(),
                },
            });
        }
        v
    }

    /// One line saying what is missing, or `None` when nothing is.
    pub fn note(&self, tr: &Trace) -> Option<String> {
        let m = self.missing(tr);
        if m.is_empty() {
            return None;
        }
        let whats: Vec<&str> = m.iter().map(|x| x.what).collect();
        Some(format!(
            "this trace has no {}: {} not shown ({})",
            join_and(&whats),
            join_and(&m.iter().map(|x| x.hides).collect::<Vec<_>>()),
            m[0].how
        ))
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(v: &[&str]) -> String {
    match v {
        [] => String::new(),
        [a] => a.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
