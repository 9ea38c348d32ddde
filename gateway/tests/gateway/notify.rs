//! Desktop notifications of new proposals, on a real private session bus (`dbus-run-session`), watched by
//! `dbus-monitor`, with a notification daemon played by this test; and the bell on stderr without a bus.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{Sandbox, body};

/// A private session bus: `dbus-run-session` running `cat`, which ends (and takes the bus with it) when its stdin
/// closes.
struct Bus {
    child: Child,
    address: String,
}

impl Bus {
    fn start() -> Self {
        let mut child = Command::new("dbus-run-session")
            .args(["--", "sh", "-c", "printf '%s\\n' \"$DBUS_SESSION_BUS_ADDRESS\"; exec cat >/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dbus-run-session (dbus-daemon is a test dependency)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line).expect("read the address");
        let address = line.trim().to_owned();
        assert!(address.starts_with("unix:"), "{address:?}");
        Self { child, address }
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `dbus-monitor` on the bus: every line it prints, with when it was read.
struct Monitor {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
}

impl Monitor {
    fn start(bus: &Bus) -> Self {
        let mut child = Command::new("dbus-monitor")
            .args(["--address", &bus.address, "type='method_call',interface='org.freedesktop.Notifications'"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dbus-monitor");
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send((Instant::now(), line)).is_err() {
                    return;
                }
            }
        });
        let monitor = Self { child, lines };
        // Becoming a monitor, it prints the loss of its own name: from then on it sees every call.
        monitor.wait_for(|line| line.contains("member=NameLost"), Duration::from_secs(10));
        monitor
    }

    fn wait_for(&self, matches: impl Fn(&str) -> bool, within: Duration) -> (Instant, Vec<String>) {
        let deadline = Instant::now() + within;
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok((at, line)) => {
                    let found = matches(&line);
                    seen.push(line);
                    if found {
                        // The arguments follow on the next lines.
                        while let Ok((_, more)) = self.lines.recv_timeout(Duration::from_millis(300)) {
                            seen.push(more);
                        }
                        return (at, seen);
                    }
                }
                Err(_) => break,
            }
        }
        panic!("dbus-monitor printed no matching line within {within:?}; it printed:\n{}", seen.join("\n"));
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `Notify` call as the daemon received it.
#[derive(Debug)]
struct Received {
    summary: String,
    body: String,
    actions: Vec<String>,
}

type NotifyArguments = (String, u32, String, String, String, Vec<String>, HashMap<String, zbus::OwnedVariant>, i32);

/// A notification daemon on the bus: answers `GetCapabilities` (actions, markup, links), takes each `Notify`, and
/// then, as a person clicking the notification would, emits `ActionInvoked(id, "default")`.
fn fake_daemon(address: String) -> mpsc::Receiver<Received> {
    let (sender, received) = mpsc::channel();
    let (ready, is_ready) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            use futures_util::StreamExt;
            let connection =
                zbus::connection::Builder::address(address.as_str()).build().await.expect("connect the fake daemon");
            let mut stream = zbus::MessageStream::from(&connection);
            connection.request_name("org.freedesktop.Notifications").await.expect("own the notifications name");
            ready.send(()).expect("tell the test");
            let mut next_id = 1u32;
            while let Some(Ok(message)) = stream.next().await {
                let header = message.header();
                if header.message_type() != zbus::message::Type::MethodCall {
                    continue;
                }
                match header.member().map(|member| member.as_str()) {
                    Some("GetCapabilities") => {
                        let capabilities = vec!["actions", "body", "body-markup", "body-hyperlinks"];
                        connection.reply(&header, &capabilities).await.expect("reply capabilities");
                    }
                    Some("Notify") => {
                        let (_, _, _, summary, body, actions, _, _): NotifyArguments =
                            message.body().deserialize().expect("Notify's arguments");
                        let id = next_id;
                        next_id += 1;
                        connection.reply(&header, &id).await.expect("reply to Notify");
                        let _ = sender.send(Received { summary, body, actions });
                        connection
                            .emit_signal(
                                None::<&str>,
                                "/org/freedesktop/Notifications",
                                "org.freedesktop.Notifications",
                                "ActionInvoked",
                                &(id, "default"),
                            )
                            .await
                            .expect("emit ActionInvoked");
                    }
                    _ => {
                        let _ =
                            connection.reply_dbus_error(&header, zbus::fdo::Error::UnknownMethod("no".into())).await;
                    }
                }
            }
        });
    });
    is_ready.recv_timeout(Duration::from_secs(10)).expect("the fake daemon owns its name");
    received
}

/// A fake `xdg-open` that appends its one argument to `opened`.
fn fake_opener(sandbox: &Sandbox) -> (std::path::PathBuf, std::path::PathBuf) {
    let bin = sandbox.home.join("bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    let script = bin.join("xdg-open");
    let opened = sandbox.home.join("opened.txt");
    std::fs::write(&script, format!("#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n", opened.display()))
        .expect("write the fake opener");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("make it executable");
    (bin, opened)
}

#[test]
fn notify_call_reaches_the_session_bus_within_a_second_and_a_click_opens_the_card() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("notified");
    let bus = Bus::start();
    let monitor = Monitor::start(&bus);
    let received = fake_daemon(bus.address.clone());
    let (bin, opened) = fake_opener(&sandbox);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let gateway = sandbox.serve(&[
        ("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str()),
        ("DISPLAY", ":99"),
        ("PATH", path.as_str()),
    ]);

    let proposed = Instant::now();
    let (code, answer) = gateway.propose(&body(
        "notify-reset-1",
        "agent.x",
        "reset",
        &repo,
        json!({ "targetRef": "HEAD~1", "mode": "hard", "reason": "undo <b>this</b> & that" }),
    ));
    assert_eq!(code, 202, "{answer}");
    let (at, lines) = monitor.wait_for(|line| line.contains("member=Notify"), Duration::from_secs(10));
    let delay = at.saturating_duration_since(proposed);
    assert!(delay < Duration::from_secs(1), "Notify seen {delay:?} after the proposal");
    let call = lines.join("\n");
    assert!(call.contains("string \"FluxGit gateway\""), "{call}");

    let note = received.recv_timeout(Duration::from_secs(5)).expect("the daemon got the notification");
    assert_eq!(note.summary, "FluxGit: reset proposed (high risk)");
    assert!(note.body.starts_with("agent.x (self-declared) on "), "{}", note.body);
    assert!(note.body.contains(&repo.display().to_string()), "{}", note.body);
    assert!(note.body.contains("\nundo &lt;b&gt;this&lt;/b&gt; &amp; that\n"), "{}", note.body);
    let card = format!("{}#notify-reset-1", gateway.page);
    assert!(note.body.contains(&format!("<a href=\"{card}\">")), "{}", note.body);
    assert_eq!(note.actions, ["default", "Open the card"], "only the action that opens the card, never approve");

    // The daemon clicked it: the gateway opened the card in the "browser".
    let deadline = Instant::now() + Duration::from_secs(5);
    while !opened.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let opened = std::fs::read_to_string(&opened).expect("the opener ran");
    assert_eq!(opened, format!("{card}\n"));
    assert_eq!(gateway.status("notify-reset-1")["status"], "pending", "a click approves nothing");
}

/// Reads the gateway's stderr until `count` bell lines came (or `within`), then more for `tail`.
fn bell_lines(gateway: &mut crate::support::Gateway, count: usize, within: Duration, tail: Duration) -> Vec<String> {
    let stderr = gateway.child.stderr.take().expect("piped stderr");
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    let mut bells = Vec::new();
    let deadline = Instant::now() + within;
    while bells.len() < count
        && let Some(left) = deadline.checked_duration_since(Instant::now())
    {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains('\u{7}') => bells.push(line),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let stop = Instant::now() + tail;
    while let Some(left) = stop.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains('\u{7}') => bells.push(line),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    bells
}

#[test]
fn without_a_session_bus_each_proposal_rings_the_bell_on_one_stderr_line() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("belled");
    // The sandbox's environment has no DBUS_SESSION_BUS_ADDRESS and no XDG_RUNTIME_DIR.
    let mut gateway = sandbox.serve(&[]);
    for id in ["bell-one", "bell-two"] {
        let (code, answer) =
            gateway.propose(&body(id, "agent.b", "branch", &repo, json!({ "name": format!("b/{id}"), "startPoint": "HEAD", "checkout": false, "reason": "two\nlines \u{1b}[2J" })));
        assert_eq!(code, 202, "{answer}");
    }
    let bells = bell_lines(&mut gateway, 2, Duration::from_secs(10), Duration::from_millis(500));
    assert_eq!(bells.len(), 2, "{bells:#?}");
    for (line, id) in bells.iter().zip(["bell-one", "bell-two"]) {
        assert!(line.starts_with('\u{7}'), "{line:?}");
        assert!(line.contains(&format!("proposal {id} waits for you: branch (low risk)")), "{line:?}");
        assert!(line.contains("by agent.b (self-declared): two lines \\u{1b}[2J;"), "{line:?}");
    }
}

#[test]
fn no_notify_flag_and_variable_turn_the_bell_off() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("quiet");
    for (args, extra) in [(&["--no-notify"][..], &[][..]), (&[][..], &[("FLUXGIT_GATEWAY_NOTIFY_DISABLED", "")][..])] {
        let mut gateway = sandbox.serve_with(args, extra);
        let id = format!("quiet-{}", args.len());
        let (code, answer) = gateway.propose(&body(
            &id,
            "a",
            "branch",
            &repo,
            json!({ "name": format!("q/{id}"), "startPoint": "HEAD", "checkout": false }),
        ));
        assert_eq!(code, 202, "{answer}");
        // A notified gateway rings well within this wait (the test above); this one must stay silent.
        let bells = bell_lines(&mut gateway, 1, Duration::from_secs(2), Duration::ZERO);
        assert!(bells.is_empty(), "{bells:#?}");
    }
}
