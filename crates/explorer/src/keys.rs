//! Keys are data: one table of actions with their default keys drives input
//! handling, the footer hints and the `?` overlay.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Everything a key can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Quit,
    NextView,
    PrevView,
    GotoView(usize),
    PanLeft,
    PanRight,
    ZoomIn,
    ZoomOut,
    ZoomFit,
    NextSpill,
    PrevSpill,
    Up,
    Down,
    PageUp,
    PageDown,
    Select,
    SortCycle,
    SortInvert,
    Search,
    Help,
    Close,
    Pause,
    /// Memory map cursor: earlier / later, lower / higher offset.
    CursorLeft,
    CursorRight,
    CursorUp,
    CursorDown,
    /// Compare: each trace on its own axis, or one shared axis.
    ToggleAxis,
    /// Suggest: write the selected change into the watched config.
    Apply,
    /// Suggest: restore the config as it was before the last apply.
    Undo,
    /// Nested ops: show the calls one level deeper / one level up.
    Deeper,
    Shallower,
    /// Memory map: show the next on-chip pool.
    NextPool,
    /// Two traces: views 1-5 show the other one (A or B).
    SwitchSide,
    /// Compare: the list keys move the op table or the tensor table.
    SwitchTable,
    /// Overview, a model that fits: re-run it where it would spill.
    TryCapacity,
    /// Hotspots: one row per op name (the calls of a name summed), or per op.
    GroupByName,
}

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    /// Only when the explorer follows files (live refresh).
    Live,
    /// Time-axis views: timeline, tensor, memory map, compare.
    TimeAxis,
    /// Views with a selectable list.
    List,
    Hotspots,
    /// The memory map's cursor.
    Memory,
    Compare,
    /// The memory map of a trace with several pools.
    Pools,
    /// Suggestions applied to a watched schedule config.
    Suggest,
    /// Traces whose ops nest (PyTorch): the level of calls shown.
    Nested,
    /// Two traces open, in a view that shows one of them (1-5).
    Sides,
    /// Compare, when some tensor's round trips changed (a second table).
    CompareTensors,
    /// The Overview of a re-simulated model that fits (or one being tried
    /// at a smaller capacity).
    Fits,
    /// Hotspots of a trace where some op name is called more than once.
    Names,
}

/// One row of the key table.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub action: Action,
    pub keys: &'static [(KeyCode, KeyModifiers)],
    /// Key text for hints, with an ASCII spelling.
    pub key_label: &'static str,
    pub hint: &'static str,
    pub help: &'static str,
    pub scope: Scope,
    /// Shown in the footer (not every binding fits at 80 columns).
    pub footer: bool,
}

const N: KeyModifiers = KeyModifiers::NONE;
const S: KeyModifiers = KeyModifiers::SHIFT;

/// The key table: the single source of truth.
pub const BINDINGS: &[Binding] = &[
    Binding {
        action: Action::Quit,
        keys: &[(KeyCode::Char('q'), N)],
        key_label: "q",
        hint: "quit",
        help: "Quit",
        scope: Scope::Global,
        footer: true,
    },
    Binding {
        action: Action::NextView,
        keys: &[(KeyCode::Tab, N)],
        key_label: "Tab",
        hint: "view",
        help: "Next view",
        scope: Scope::Global,
        footer: true,
    },
    Binding {
        action: Action::PrevView,
        keys: &[(KeyCode::BackTab, S), (KeyCode::BackTab, N)],
        key_label: "S-Tab",
        hint: "prev",
        help: "Previous view",
        scope: Scope::Global,
        footer: false,
    },
    Binding {
        action: Action::GotoView(0),
        keys: &[(KeyCode::Char('1'), N)],
        key_label: "1-7",
        hint: "jump",
        help: "Jump to a view by its number",
        scope: Scope::Global,
        footer: false,
    },
    Binding {
        action: Action::GotoView(1),
        keys: &[(KeyCode::Char('2'), N)],
        key_label: "2",
        hint: "",
        help: "",
        scope: Scope::Global,
        footer: false,
    },
    Binding {
        action: Action::GotoView(2),
        keys: &[(KeyCode::Char('3'), N)],
        key_label: "3",
        hint: "",
        help: "",
        scope: Scope::Global,
        footer: false,
    },
    Binding {
        action: Action::GotoView(3),
        keys: &[(KeyCode::Char('4'), N)],
        key_label: "4",
        hint: "",
        help: "",
        scope: Scope::Global,
        footer: false,
    },
    Binding {
        action: Action::GotoView(4),
        keys: &[(KeyCode::Char('5'), N)],
        key_label: "5",
        hint: "",
        help: "",
        scope: Scope::Global,
        footer: false,
    },
    Binding {
        action: Action::GotoView(5),
        keys: &[(KeyCode::Char('6'), N)],
        key_label: "6",
        hint: "",
        help: "",
        scope: Scope::Global,
        footer: false,
    },
    Binding {
        action: Action::GotoView(6),
        keys: &[(KeyCode::Char('7'), N)],
        key_label: "7",
        hint: "",
        help: "",
        scope: Scope::Global,
        footer: false,
    },
    Binding {
        action: Action::Search,
        keys: &[(KeyCode::Char('/'), N)],
        key_label: "/",
        hint: "search",
        help: "Fuzzy search ops and tensors; Enter jumps",
        scope: Scope::Global,
        footer: true,
    },
    Binding {
        action: Action::Help,
        keys: &[(KeyCode::Char('?'), N), (KeyCode::Char('?'), S)],
        key_label: "?",
        hint: "help",
        help: "This help",
        scope: Scope::Global,
        footer: true,
    },
    Binding {
        action: Action::Close,
        keys: &[(KeyCode::Esc, N)],
        key_label: "Esc",
        hint: "close",
        help: "Close an overlay or the banner",
        scope: Scope::Global,
        footer: false,
    },
    Binding {
        action: Action::Pause,
        keys: &[(KeyCode::Char('p'), N)],
        key_label: "p",
        hint: "pause",
        help: "Pause/resume live refresh (a badge shows new data)",
        scope: Scope::Live,
        footer: false,
    },
    Binding {
        action: Action::CursorLeft,
        keys: &[(KeyCode::Left, N)],
        key_label: "arrows",
        hint: "cursor",
        help: "Move the cursor in time (Left/Right) and offset (Up/Down)",
        scope: Scope::Memory,
        footer: true,
    },
    Binding {
        action: Action::CursorRight,
        keys: &[(KeyCode::Right, N)],
        key_label: "Right",
        hint: "",
        help: "",
        scope: Scope::Memory,
        footer: false,
    },
    Binding {
        action: Action::CursorUp,
        keys: &[(KeyCode::Up, N)],
        key_label: "Up",
        hint: "",
        help: "",
        scope: Scope::Memory,
        footer: false,
    },
    Binding {
        action: Action::CursorDown,
        keys: &[(KeyCode::Down, N)],
        key_label: "Down",
        hint: "",
        help: "",
        scope: Scope::Memory,
        footer: false,
    },
    Binding {
        action: Action::PanLeft,
        keys: &[(KeyCode::Left, N), (KeyCode::Char('h'), N)],
        key_label: "h/l",
        hint: "pan",
        help: "Pan left / right (also Left/Right)",
        scope: Scope::TimeAxis,
        footer: true,
    },
    Binding {
        action: Action::PanRight,
        keys: &[(KeyCode::Right, N), (KeyCode::Char('l'), N)],
        key_label: "l/Right",
        hint: "",
        help: "",
        scope: Scope::TimeAxis,
        footer: false,
    },
    Binding {
        action: Action::ZoomIn,
        keys: &[
            (KeyCode::Char('+'), N),
            (KeyCode::Char('+'), S),
            (KeyCode::Char('='), N),
        ],
        key_label: "+/-",
        hint: "zoom",
        help: "Zoom in (- zooms out)",
        scope: Scope::TimeAxis,
        footer: true,
    },
    Binding {
        action: Action::ZoomOut,
        keys: &[(KeyCode::Char('-'), N)],
        key_label: "-",
        hint: "",
        help: "",
        scope: Scope::TimeAxis,
        footer: false,
    },
    Binding {
        action: Action::ZoomFit,
        keys: &[(KeyCode::Char('0'), N)],
        key_label: "0",
        hint: "fit",
        help: "Fit the whole run",
        scope: Scope::TimeAxis,
        footer: true,
    },
    Binding {
        action: Action::NextSpill,
        keys: &[(KeyCode::Char('.'), N)],
        key_label: "./,",
        hint: "spill",
        help: "Next spill event (, previous)",
        scope: Scope::TimeAxis,
        footer: true,
    },
    Binding {
        action: Action::PrevSpill,
        keys: &[(KeyCode::Char(','), N)],
        key_label: ",",
        hint: "",
        help: "",
        scope: Scope::TimeAxis,
        footer: false,
    },
    Binding {
        action: Action::Up,
        keys: &[(KeyCode::Up, N), (KeyCode::Char('k'), N)],
        key_label: "k/Up",
        hint: "",
        help: "",
        scope: Scope::List,
        footer: false,
    },
    Binding {
        action: Action::Down,
        keys: &[(KeyCode::Down, N), (KeyCode::Char('j'), N)],
        key_label: "j/k",
        hint: "select",
        help: "Move the selection down / up (also Down/Up)",
        scope: Scope::List,
        footer: true,
    },
    Binding {
        action: Action::PageUp,
        keys: &[(KeyCode::PageUp, N)],
        key_label: "PgUp",
        hint: "",
        help: "",
        scope: Scope::List,
        footer: false,
    },
    Binding {
        action: Action::PageDown,
        keys: &[(KeyCode::PageDown, N)],
        key_label: "PgUp/Dn",
        hint: "",
        help: "Move the selection a page",
        scope: Scope::List,
        footer: false,
    },
    Binding {
        action: Action::Select,
        keys: &[(KeyCode::Enter, N)],
        key_label: "Enter",
        hint: "open",
        help:
            "Open the selection (an op in the timeline, a tensor's round trip, an event's tensor)",
        scope: Scope::List,
        footer: true,
    },
    Binding {
        action: Action::ToggleAxis,
        keys: &[(KeyCode::Char('n'), N)],
        key_label: "n",
        hint: "axis",
        help: "Each trace on its own axis (normalised) or one shared axis",
        scope: Scope::Compare,
        footer: true,
    },
    Binding {
        action: Action::Apply,
        keys: &[(KeyCode::Char('a'), N)],
        key_label: "a/u",
        hint: "apply/undo",
        help: "Write the selected change into the watched schedule config (u restores it)",
        scope: Scope::Suggest,
        footer: true,
    },
    Binding {
        action: Action::Undo,
        keys: &[(KeyCode::Char('u'), N)],
        key_label: "u",
        hint: "",
        help: "",
        scope: Scope::Suggest,
        footer: false,
    },
    Binding {
        action: Action::SortCycle,
        keys: &[(KeyCode::Char('s'), N)],
        key_label: "s/i",
        hint: "sort",
        help: "Cycle the sort column (i inverts)",
        scope: Scope::Hotspots,
        footer: true,
    },
    Binding {
        action: Action::GroupByName,
        keys: &[(KeyCode::Char('g'), N)],
        key_label: "g",
        hint: "by name",
        help: "One row per op name, its calls summed (again: one row per op)",
        scope: Scope::Names,
        footer: true,
    },
    Binding {
        action: Action::SortInvert,
        keys: &[(KeyCode::Char('i'), N)],
        key_label: "i",
        hint: "",
        help: "",
        scope: Scope::Hotspots,
        footer: false,
    },
    Binding {
        action: Action::Deeper,
        keys: &[(KeyCode::Char('>'), N), (KeyCode::Char('>'), S)],
        key_label: "</>",
        hint: "call depth",
        help: "Nested ops: show the calls one level deeper (> ) or one level up (<)",
        scope: Scope::Nested,
        footer: true,
    },
    Binding {
        action: Action::Shallower,
        keys: &[(KeyCode::Char('<'), N), (KeyCode::Char('<'), S)],
        key_label: "<",
        hint: "",
        help: "",
        scope: Scope::Nested,
        footer: false,
    },
    Binding {
        action: Action::NextPool,
        keys: &[(KeyCode::Char('o'), N)],
        key_label: "o",
        hint: "pool",
        help: "Memory map: show the next on-chip pool (L1, UB, ... or sram, wbuf, ...)",
        scope: Scope::Pools,
        footer: true,
    },
    Binding {
        action: Action::TryCapacity,
        keys: &[(KeyCode::Char('c'), N)],
        key_label: "c",
        hint: "try smaller",
        help: "A model that fits: re-run at 75 %, then 50 % of its peak live bytes, then at the capacity it started with",
        scope: Scope::Fits,
        footer: true,
    },
    Binding {
        action: Action::SwitchTable,
        keys: &[(KeyCode::Char('t'), N)],
        key_label: "t",
        hint: "ops/tensors",
        help:
            "Compare: the list keys (j/k, PgUp/PgDn, Enter) move the op table or the tensor table",
        scope: Scope::CompareTensors,
        footer: true,
    },
    Binding {
        action: Action::SwitchSide,
        keys: &[(KeyCode::Char('b'), N)],
        key_label: "b",
        hint: "A/B",
        help: "Two traces: show the other one (A or B) in views 1-5; Compare shows both",
        scope: Scope::Sides,
        footer: true,
    },
];

/// The action bound to `key` in a view with the given scopes, if any.
pub fn action_for(key: &KeyEvent, scopes: &[Scope]) -> Option<Action> {
    // Shift is implied by some characters ('?', '+'); compare without it for chars.
    let mods = match key.code {
        KeyCode::Char(_) => key.modifiers - KeyModifiers::SHIFT,
        _ => key.modifiers,
    };
    BINDINGS
        .iter()
        .filter(|b| b.scope == Scope::Global || scopes.contains(&b.scope))
        .find(|b| {
            b.keys.iter().any(|&(code, m)| {
                let m = match code {
                    KeyCode::Char(_) => m - KeyModifiers::SHIFT,
                    _ => m,
                };
                code == key.code && (m == mods || (code == KeyCode::BackTab))
            })
        })
        .map(|b| b.action)
}

/// Footer hints for the given scopes.
pub fn footer_hints(scopes: &[Scope]) -> Vec<(&'static str, &'static str)> {
    BINDINGS
        .iter()
        .filter(|b| b.footer && (b.scope == Scope::Global || scopes.contains(&b.scope)))
        .map(|b| (b.key_label, b.hint))
        .collect()
}

/// The footer hints that fit in `width` columns, in table order: `? help`
/// always, then the view's own keys, then the global ones, each only when
/// it fits whole (a hint is `KEY hint` and two spaces).
pub fn footer_fit(scopes: &[Scope], width: usize) -> Vec<(&'static str, &'static str)> {
    let all: Vec<&Binding> = BINDINGS
        .iter()
        .filter(|b| b.footer && (b.scope == Scope::Global || scopes.contains(&b.scope)))
        .collect();
    let cost = |b: &Binding| b.key_label.chars().count() + b.hint.chars().count() + 3;
    let mut keep = vec![false; all.len()];
    let mut used = 0;
    let tiers = [
        |b: &Binding| b.action == Action::Help,
        |b: &Binding| b.scope != Scope::Global,
        |b: &Binding| b.scope == Scope::Global,
    ];
    for tier in tiers {
        for (i, b) in all.iter().enumerate() {
            if !keep[i] && tier(b) && used + cost(b) <= width {
                keep[i] = true;
                used += cost(b);
            }
        }
    }
    all.iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(b, _)| (b.key_label, b.hint))
        .collect()
}

/// Help overlay rows for a view with these scopes: (keys, description,
/// scope label). Only keys that do something there are listed.
pub fn help_rows(scopes: &[Scope]) -> Vec<(String, &'static str, &'static str)> {
    BINDINGS
        .iter()
        .filter(|b| !b.help.is_empty())
        .filter(|b| b.scope == Scope::Global || scopes.contains(&b.scope))
        .map(|b| (b.key_label.to_string(), b.help, scope_label(b.scope)))
        .collect()
}

/// Where a binding acts, as `?` and the docs say it.
pub fn scope_label(scope: Scope) -> &'static str {
    match scope {
        Scope::Global => "",
        Scope::Live => "live",
        Scope::TimeAxis => "time views",
        Scope::List => "lists",
        Scope::Hotspots => "hotspots",
        Scope::Memory => "memory map",
        Scope::Compare => "compare",
        Scope::Suggest => "live, with --config",
        Scope::Nested => "nested ops",
        Scope::Pools => "memory map, several pools",
        Scope::Sides => "two traces",
        Scope::CompareTensors => "compare",
        Scope::Fits => "a model that fits",
        Scope::Names => "hotspots, repeated names",
    }
}

/// The key table as a markdown table (docs/explorer.md holds it; a test
/// checks they agree): every binding with help text, where it acts.
pub fn markdown_table() -> String {
    let mut out = String::from("| key | what it does | where |\n|---|---|---|\n");
    for b in BINDINGS.iter().filter(|b| !b.help.is_empty()) {
        let key = b.key_label.replace('|', "\\|");
        let scope = match scope_label(b.scope) {
            "" => "every view",
            s => s,
        };
        out += &format!("| `{key}` | {} | {scope} |\n", b.help.replace('|', "\\|"));
    }
    out
}

/// The terms on screen, as `?` explains them (one table: the overlay and
/// its test read it).
pub const GLOSSARY: &[(&str, &str)] = &[
    ("capacity spill", "an eviction at a step whose live bytes exceed the pool: no schedule of that step avoids it"),
    ("lifetime spill", "an eviction at a step whose live bytes would fit: fragmentation, a late free or the order caused it"),
    ("evicted out", "bytes written back to DRAM by evictions"),
    ("reloaded", "bytes read back from DRAM for evicted tensors"),
    ("streamed", "operands read from or written to DRAM without a stay on chip (too big, or planned so)"),
    ("traffic", "evicted out + reloaded + streamed in and out: the spill bytes the bus moves"),
    ("lower bound", "the least traffic any schedule of this order could move at this capacity; minimum when proven"),
    ("per-op", "bound method: each op's own working set over the pool (quick, loose)"),
    ("lp", "bound method: the exact program's linear relaxation (valid, tighter)"),
    ("windowed", "bound method: the program solved window by window, the minima added"),
    ("ilp", "bound method: the exact program solved: a proven minimum"),
    ("refining", "a cheaper bound shown while the exact program runs; no gap is printed against it"),
    ("gap", "traffic above the bound: how much a better schedule could still save"),
    ("peak live", "the most bytes live at once (resident or not) against the capacity that holds them"),
];

/// The legend of the time views' glyphs, one line (also in `?`).
pub fn legend(g: &super::glyphs::Glyphs) -> String {
    format!(
        "{} evict  {} reload  {} stream  {} several  {} stall  {} cursor",
        g.evict, g.reload, g.stream, g.both, g.stall, g.cursor
    )
}
