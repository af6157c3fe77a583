//! The real binary in a detached tmux server: keys in, screen out.

use std::process::Command;
use std::time::{Duration, Instant};

/// One tmux server (its own socket) running one command; killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn start(name: &str, cmd: &str, w: u16, h: u16) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("SKIP: tmux is not installed");
            return None;
        }
        // A server per start: a test that opens the viewer again under the
        // same name would otherwise ask for a new session on the server the
        // last one is still shutting down (`q`, then kill-server), which
        // fails now and then.
        static STARTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = format!("spillscope-test-{}-{name}-{k}", std::process::id());
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
                cmd,
            ])
            .env_remove("NO_COLOR")
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "tmux new-session failed");
        Some(Tmux { socket })
    }
    pub fn send(&self, keys: &[&str]) {
        let mut args = vec!["-L", &self.socket, "send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        assert!(Command::new("tmux").args(&args).status().unwrap().success());
    }
    pub fn send_literal(&self, text: &str) {
        assert!(Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "0", "-l", text])
            .status()
            .unwrap()
            .success());
    }
    /// Runs a tmux command against this server; its standard output.
    pub fn run(&self, args: &[&str]) -> String {
        let o = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
    pub fn screen(&self) -> String {
        let o = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "0"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
    /// Starts `cmd` in a 100x30 pane and waits (10 s at most) for its first
    /// frame, recognised by `ready`, then 300 ms more so a watcher started
    /// with it is settled before the test touches its files.
    pub fn open(name: &str, cmd: &str, ready: impl Fn(&str) -> bool) -> Option<Tmux> {
        let t = Tmux::start(name, cmd, 100, 30)?;
        t.wait_for(Duration::from_secs(10), ready)
            .expect("first frame");
        std::thread::sleep(Duration::from_millis(300));
        Some(t)
    }
    /// As [`Tmux::open`], in a `w` x `h` pane.
    pub fn open_at(
        name: &str,
        cmd: &str,
        (w, h): (u16, u16),
        ready: impl Fn(&str) -> bool,
    ) -> Option<Tmux> {
        let t = Tmux::start(name, cmd, w, h)?;
        t.wait_for(Duration::from_secs(20), ready)
            .expect("first frame");
        std::thread::sleep(Duration::from_millis(300));
        Some(t)
    }
    /// Polls the screen until `pred` holds or `timeout` passes.
    pub fn wait_for(
        &self,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return Ok(s);
            }
            if start.elapsed() > timeout {
                return Err(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}
