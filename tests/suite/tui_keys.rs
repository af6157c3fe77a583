//! Every key the footer or `?` offers in a view does something there: the
//! test walks the key table per view, presses each key in a state where it
//! can act (a list scrolled down before `k`, a zoomed axis before `h`,
//! help open before `Esc`), and checks that the screen, the status or the
//! effect asked of the runtime changed.

use crate::common;
use common::sample_trace as trace;
use common::screen::render;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use spillscope_explorer::app::{update, App, Effect, Msg, View};
use spillscope_explorer::data::Dataset;
use spillscope_explorer::keys::{footer_fit, help_rows, Action, Scope, BINDINGS};

/// A live session on a watched config, with suggestions ready; Compare
/// gets two traces of different lengths.
fn app_for(view: View) -> App {
    let mut a = if view == View::Compare {
        App::new(vec![
            Dataset::build("a.lru.json", trace("edge-resnet50-b3.lru.json")),
            Dataset::build("b.ideal.json", trace("edge-resnet50-b3.ideal.json")),
        ])
    } else {
        App::new(vec![Dataset::build(
            "encdec-1mib.lru.json",
            trace("encdec-1mib.lru.json"),
        )])
    };
    a.live = true;
    a.config = Some("sched.toml".into());
    a.tensors.tensor = a.tensor_list().first().copied();
    let t = a.data[0].trace.clone();
    let (g, hw, cfg) = spillscope::analysis::suggest::inputs_of_trace(&t).unwrap();
    let s = spillscope::analysis::suggest::suggest(&g, &hw, &cfg).unwrap();
    update(
        &mut a,
        Msg::Suggested {
            trace: t,
            result: Ok(Box::new(s)),
        },
    );
    a.view = view;
    a
}

fn press(a: &mut App, code: KeyCode, mods: KeyModifiers) -> Option<Effect> {
    update(a, Msg::Key(KeyEvent::new(code, mods)))
}

fn chars(a: &mut App, s: &str) {
    for c in s.chars() {
        press(a, KeyCode::Char(c), KeyModifiers::NONE);
    }
}

/// Puts the app where `action` has something to do.
fn prepare(a: &mut App, action: Action) {
    match action {
        Action::Close => chars(a, "?"),
        Action::ZoomOut | Action::ZoomFit | Action::PanLeft | Action::PanRight => chars(a, "+++l"),
        Action::PrevSpill => chars(a, "..."),
        Action::Up | Action::PageUp => {
            for _ in 0..3 {
                press(a, KeyCode::PageDown, KeyModifiers::NONE);
            }
        }
        Action::CursorLeft | Action::CursorDown => {
            chars(a, "+");
            for _ in 0..3 {
                press(a, KeyCode::Right, KeyModifiers::NONE);
                press(a, KeyCode::Up, KeyModifiers::NONE);
            }
        }
        Action::Undo => a.can_undo = true,
        Action::Select if a.view == View::Suggest => {
            // A pin suggestion opens its tensor; others say how to make it.
            press(a, KeyCode::Char('j'), KeyModifiers::NONE);
        }
        _ => {}
    }
}

#[test]
fn every_key_shown_does_something_in_its_view() {
    let mut checked = 0;
    for view in View::ALL {
        let scopes = app_for(view).scopes();
        let offered: Vec<&str> = help_rows(&scopes).into_iter().map(|r| r.1).collect();
        let footer: Vec<&str> = footer_fit(&scopes, 200).into_iter().map(|h| h.1).collect();
        for b in BINDINGS {
            let shown = offered.contains(&b.help) || footer.contains(&b.hint);
            if !shown {
                continue;
            }
            if b.action == Action::GotoView(view.index()) {
                continue; // the view's own number: already there
            }
            for &(code, mods) in b.keys {
                let mut a = app_for(view);
                prepare(&mut a, b.action);
                let (screen, status) = (render(&a, 80, 24), a.status.clone());
                let effect = press(&mut a, code, mods);
                let changed = a.quit
                    || effect.is_some()
                    || render(&a, 80, 24) != screen
                    || a.status != status;
                assert!(
                    changed,
                    "{view:?}: {:?} ({}: {}) did nothing\n{screen}",
                    code, b.key_label, b.help
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "only {checked} key presses walked");
}

#[test]
fn keys_of_other_views_are_not_offered() {
    // The Overview has no list, time axis or sort: none of their keys is
    // offered there, and none of them changes it.
    let scopes = app_for(View::Overview).scopes();
    let offered: Vec<&str> = help_rows(&scopes).into_iter().map(|r| r.1).collect();
    for b in BINDINGS.iter().filter(|b| b.scope != Scope::Global) {
        if offered.contains(&b.help) {
            continue;
        }
        for &(code, mods) in b.keys {
            let mut a = app_for(View::Overview);
            let screen = render(&a, 80, 24);
            let effect = press(&mut a, code, mods);
            assert!(
                effect.is_none() && render(&a, 80, 24) == screen,
                "{code:?} ({}) is not offered on the Overview but changed it",
                b.key_label
            );
        }
    }
}
