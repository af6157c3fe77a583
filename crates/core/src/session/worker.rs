//! The background session: one worker thread runs the newest request; a
//! newer one cancels the running job (which stops at its next check) and
//! replaces any that was waiting, so stale work never queues up. What the
//! reader of a file keeps between runs (JSONL tails, the model by stamp)
//! lives with the worker.

use super::job::Job;
use super::{Posted, Request, Tails, Update};
use crate::cancel::Cancel;
use std::sync::{Arc, Condvar, Mutex};

/// A handle on the worker; dropping it ends the worker after its job.
pub struct Session {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<Inbox>,
    cv: Condvar,
}

#[derive(Default)]
struct Inbox {
    /// The request waiting to run (a newer one replaces it).
    pending: Option<(u64, Request)>,
    /// The running job's token.
    running: Option<Cancel>,
    generation: u64,
    closed: bool,
}

impl Session {
    /// Starts the worker; `post` receives every update, tagged with the
    /// generation of its request, from the worker's thread.
    pub fn spawn(post: impl Fn(Posted) + Send + Sync + 'static) -> Session {
        Session::spawn_with(Tails::new(), post)
    }

    /// [`Session::spawn`] with what earlier reads left (JSONL streams read
    /// up to where the first frame's load stopped).
    pub fn spawn_with(tails: Tails, post: impl Fn(Posted) + Send + Sync + 'static) -> Session {
        let shared = Arc::new(Shared::default());
        let mine = shared.clone();
        std::thread::Builder::new()
            .name("spillscope-session".into())
            .spawn(move || work(&mine, tails, &post))
            .map(|_| ())
            .unwrap_or_else(|_| {
                // No thread: nothing will answer; the front end's own
                // timeouts say so.
            });
        Session { shared }
    }

    /// Runs `request` next, cancelling the running job; returns its
    /// generation (updates of older generations are stale).
    pub fn submit(&self, request: Request) -> u64 {
        let Ok(mut s) = self.shared.state.lock() else {
            return 0;
        };
        s.generation += 1;
        let g = s.generation;
        s.pending = Some((g, request));
        if let Some(c) = &s.running {
            c.cancel();
        }
        self.shared.cv.notify_one();
        g
    }

    /// Cancels the running job without starting another.
    pub fn cancel(&self) {
        if let Ok(s) = self.shared.state.lock() {
            if let Some(c) = &s.running {
                c.cancel();
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Ok(mut s) = self.shared.state.lock() {
            s.closed = true;
            s.pending = None;
            if let Some(c) = &s.running {
                c.cancel();
            }
        }
        self.shared.cv.notify_one();
    }
}

fn work(shared: &Shared, mut tails: Tails, post: &(dyn Fn(Posted) + Send + Sync)) {
    loop {
        let (generation, request, cancel) = {
            let Ok(mut s) = shared.state.lock() else {
                return;
            };
            loop {
                if s.closed {
                    return;
                }
                if let Some((g, r)) = s.pending.take() {
                    let c = Cancel::new();
                    s.running = Some(c.clone());
                    break (g, r, c);
                }
                s = match shared.cv.wait(s) {
                    Ok(s) => s,
                    Err(_) => return,
                };
            }
        };
        let tag = |update: Update| post(Posted { generation, update });
        // The job's outcome (its graphs, plans and re-simulated runs) is
        // dropped at the end of this statement, before the pages are
        // handed back below (held in a binding, it outlived the trim and
        // its 34 MB plan of a 1M-event trace stayed resident).
        match Job::new(generation, cancel.clone(), &tag, &mut tails).run(&request) {
            Ok(_) | Err(crate::Error::Cancelled) => {}
            Err(e) => tag(Update::Failed(e)),
        }
        // Hand the freed pages back while the views hold only what they
        // show.
        crate::limits::release_free_memory();
        if let Ok(mut s) = shared.state.lock() {
            s.running = None;
        }
    }
}
