//! Desktop notifications: the serving gateway tells the person a proposal waits, the moment it is recorded.
//!
//! On Linux and the BSDs a notification goes to the freedesktop notification daemon over the D-Bus session bus
//! (`org.freedesktop.Notifications.Notify`): the operation and its risk in the summary, the agent (self-declared),
//! the repository and the reason in the body. When the page is served, the notification's default action (a click
//! on it) opens that proposal's card in the page: the gateway hears `ActionInvoked` from the daemon that showed it
//! and runs `xdg-open` with the page's address and the proposal's anchor. A daemon that renders hyperlinks gets the
//! same address as a link in the body. There is never an action that approves: a click is not a person's typed
//! confirmation.
//!
//! Where there is no session bus or no daemon answers (a server, a container, macOS, Windows), the gateway rings
//! the terminal bell and writes one line per proposal on stderr instead. Notifications never delay the answer to
//! the agent: [`Notifier::proposed`] queues and returns, and one task sends them in order.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::time::Duration;

use crate::card;
use crate::journal::Proposal;

/// The well-known name, object path and interface of the freedesktop notification daemon.
pub const NOTIFICATIONS: &str = "org.freedesktop.Notifications";
/// The notification daemon's object path.
pub const NOTIFICATIONS_PATH: &str = "/org/freedesktop/Notifications";
/// The application name the gateway gives the notification daemon.
pub const APP_NAME: &str = "FluxGit gateway";
/// How long one D-Bus call may take before the gateway falls back to the bell for that proposal.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// How many shown notifications the gateway remembers, to open their card when one is clicked.
pub const REMEMBERED: usize = 64;
/// Longest reason quoted in a notification, in characters.
pub const REASON_CHARS: usize = 120;

/// What a notification says about one proposal: plain data, sanitised for a terminal and a notification daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The proposal's previewId.
    pub id: String,
    /// The operation type.
    pub op: String,
    /// `low`, `medium` or `high` ([`card::risk`]).
    pub risk: &'static str,
    /// The agent, as it calls itself.
    pub agent: String,
    /// The repository's path.
    pub repo: String,
    /// The agent's reason, on one line, at most [`REASON_CHARS`] characters.
    pub reason: String,
    /// The card's address in the approval page (`<page>#<previewId>`), when the page is served.
    pub card_url: Option<String>,
}

impl Note {
    /// The note of a newly recorded `proposal`; `page` is the approval page's address (`http://ADDR/<secret>/`).
    pub fn new(proposal: &Proposal, page: Option<&str>) -> Self {
        let one_line = |text: &str| card::sanitize(&text.replace(['\n', '\r', '\t'], " "));
        let reason: String = proposal.reason.chars().take(REASON_CHARS).collect();
        Self {
            id: one_line(&proposal.id),
            op: one_line(&proposal.op),
            risk: card::risk(&proposal.op, &proposal.body),
            agent: one_line(&proposal.agent),
            repo: one_line(&proposal.repo_path),
            reason: one_line(&reason),
            card_url: page.map(|page| format!("{page}#{}", proposal.id)),
        }
    }

    /// The notification's summary line.
    pub fn summary(&self) -> String {
        format!("FluxGit: {} proposed ({} risk)", self.op, self.risk)
    }

    /// The notification's body: agent, repository and reason; with `markup`, escaped for the daemon's markup and
    /// with a link to the card when `links` too.
    pub fn body(&self, markup: bool, links: bool) -> String {
        let text = format!(
            "{} (self-declared) on {}\n{}\nDecide in the approval page or with `fluxgit-gateway show {}`",
            self.agent, self.repo, self.reason, self.id
        );
        if !markup {
            return text;
        }
        let mut body = escape_markup(&text);
        if let (true, Some(url)) = (links, &self.card_url) {
            body.push_str(&format!("\n<a href=\"{}\">Open the card</a>", escape_markup(url)));
        }
        body
    }

    /// The fallback: one line for stderr, starting with the terminal bell, ending with a newline.
    pub fn fallback_line(&self) -> String {
        format!(
            "\u{7}fluxgit-gateway: proposal {} waits for you: {} ({} risk) on {} by {} (self-declared): {}; \
             `fluxgit-gateway show {}` or `fluxgit-gateway open`\n",
            self.id, self.op, self.risk, self.repo, self.agent, self.reason, self.id
        )
    }
}

/// Escapes `&`, `<`, `>`, `"` and `'` for the notification daemon's markup.
pub fn escape_markup(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// The serving gateway's notifier: a queue to the task that sends notifications, or nothing when they are off.
#[derive(Debug, Clone)]
pub struct Notifier {
    queue: Option<tokio::sync::mpsc::UnboundedSender<Note>>,
    page: Option<String>,
}

impl Notifier {
    /// A notifier that notifies nobody (`serve --no-notify`, `FLUXGIT_GATEWAY_NOTIFY_DISABLED`, tests).
    pub fn off() -> Self {
        Self { queue: None, page: None }
    }

    /// Starts the sending task on the current tokio runtime (it must be running: call from inside it). `page` is
    /// the approval page's address, when it is served.
    pub fn start(page: Option<String>) -> Self {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(send_loop(receiver));
        Self { queue: Some(sender), page }
    }

    /// Queues the notification of a newly recorded proposal; returns at once.
    pub fn proposed(&self, proposal: &Proposal) {
        if let Some(queue) = &self.queue {
            let _ = queue.send(Note::new(proposal, self.page.as_deref()));
        }
    }
}

/// Rings the bell and writes the note's line on stderr (one write).
fn fall_back(note: &Note) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(note.fallback_line().as_bytes());
    let _ = stderr.flush();
}

/// The notification daemon as the gateway found it on the session bus.
struct Daemon {
    connection: zbus::Connection,
    markup: bool,
    links: bool,
    actions: bool,
}

/// Shown notifications (daemon id to card address), oldest first, at most [`REMEMBERED`].
#[derive(Default)]
struct Shown {
    order: VecDeque<u32>,
    urls: HashMap<u32, (String, String)>,
}

impl Shown {
    fn remember(&mut self, id: u32, daemon: String, url: String) {
        if self.urls.insert(id, (daemon, url)).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > REMEMBERED {
            if let Some(old) = self.order.pop_front() {
                self.urls.remove(&old);
            }
        }
    }
}

type SharedShown = std::sync::Arc<std::sync::Mutex<Shown>>;

async fn send_loop(mut queue: tokio::sync::mpsc::UnboundedReceiver<Note>) {
    let shown: SharedShown = SharedShown::default();
    let mut daemon: Option<Daemon> = connect(&shown).await;
    while let Some(note) = queue.recv().await {
        if daemon.as_ref().is_none_or(|daemon| daemon.connection.is_closed()) {
            daemon = connect(&shown).await;
        }
        let Some(current) = &daemon else {
            fall_back(&note);
            continue;
        };
        match tokio::time::timeout(CALL_TIMEOUT, notify(current, &note)).await {
            Ok(Ok((id, sender))) => {
                if let Some(url) = &note.card_url {
                    shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remember(id, sender, url.clone());
                }
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "no desktop notification");
                fall_back(&note);
            }
            Err(_) => {
                tracing::debug!("the notification daemon did not answer in time");
                fall_back(&note);
            }
        }
    }
}

/// Connects to the session bus, asks the daemon what it renders, and starts listening for clicks. `None` when
/// there is no session bus.
async fn connect(shown: &SharedShown) -> Option<Daemon> {
    if cfg!(not(any(target_os = "linux", target_os = "freebsd", target_os = "openbsd", target_os = "netbsd"))) {
        return None;
    }
    let connection = match tokio::time::timeout(CALL_TIMEOUT, zbus::Connection::session()).await {
        Ok(Ok(connection)) => connection,
        Ok(Err(error)) => {
            tracing::debug!(%error, "no D-Bus session bus: proposals ring the bell on stderr");
            return None;
        }
        Err(_) => return None,
    };
    let capabilities: Vec<String> = match tokio::time::timeout(
        CALL_TIMEOUT,
        connection.call_method(Some(NOTIFICATIONS), NOTIFICATIONS_PATH, Some(NOTIFICATIONS), "GetCapabilities", &()),
    )
    .await
    {
        Ok(Ok(reply)) => reply.body().deserialize().unwrap_or_default(),
        _ => Vec::new(),
    };
    let has = |name: &str| capabilities.iter().any(|capability| capability == name);
    let daemon =
        Daemon { markup: has("body-markup"), links: has("body-hyperlinks"), actions: has("actions"), connection };
    if daemon.actions {
        listen_for_clicks(&daemon.connection, shown).await;
    }
    Some(daemon)
}

/// Sends one notification; its daemon id and the unique bus name of the daemon that took it.
async fn notify(daemon: &Daemon, note: &Note) -> zbus::Result<(u32, String)> {
    let body = note.body(daemon.markup, daemon.links);
    // The default action is the click on the notification itself; no action ever approves.
    let actions: Vec<&str> =
        if daemon.actions && note.card_url.is_some() { vec!["default", "Open the card"] } else { Vec::new() };
    let urgency: u8 = if note.risk == "high" { 2 } else { 1 };
    let mut hints: HashMap<&str, zbus::Variant<'_>> = HashMap::new();
    hints.insert("urgency", zbus::Variant::from(urgency));
    hints.insert("category", zbus::Variant::from("x-fluxgit.proposal"));
    let arguments = (APP_NAME, 0u32, "dialog-question", note.summary(), body, actions, hints, -1i32);
    let reply = daemon
        .connection
        .call_method(Some(NOTIFICATIONS), NOTIFICATIONS_PATH, Some(NOTIFICATIONS), "Notify", &arguments)
        .await?;
    let id: u32 = reply.body().deserialize()?;
    let sender = reply.header().sender().map(ToString::to_string).unwrap_or_default();
    Ok((id, sender))
}

/// Listens for `ActionInvoked` and `NotificationClosed` from the notification daemon: a click on one of the
/// gateway's notifications opens its card, and only a signal from the daemon that showed it counts.
async fn listen_for_clicks(connection: &zbus::Connection, shown: &SharedShown) {
    use futures_util::StreamExt;
    let rule = match zbus::MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .interface(NOTIFICATIONS)
        .path(NOTIFICATIONS_PATH)
        .build()
    {
        Ok(rule) => rule,
        Err(error) => {
            tracing::debug!(%error, "no match rule for notification clicks");
            return;
        }
    };
    let mut stream = match zbus::MessageStream::for_match_rule(rule, connection, None).await {
        Ok(stream) => stream,
        Err(error) => {
            tracing::debug!(%error, "cannot listen for notification clicks");
            return;
        }
    };
    let shown = std::sync::Arc::clone(shown);
    tokio::spawn(async move {
        while let Some(Ok(message)) = stream.next().await {
            let header = message.header();
            let sender = header.sender().map(ToString::to_string).unwrap_or_default();
            let member = header.member().map(ToString::to_string).unwrap_or_default();
            let id = match member.as_str() {
                "ActionInvoked" => message.body().deserialize::<(u32, String)>().ok().map(|(id, key)| (id, Some(key))),
                "NotificationClosed" => message.body().deserialize::<(u32, u32)>().ok().map(|(id, _)| (id, None)),
                _ => None,
            };
            let Some((id, key)) = id else { continue };
            let mut shown = shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some((daemon, url)) = shown.urls.get(&id).cloned() else { continue };
            if daemon != sender {
                continue;
            }
            match key.as_deref() {
                Some("default") => {
                    drop(shown);
                    tokio::task::spawn_blocking(move || {
                        if let Err(error) = crate::desktop::open_url(&url) {
                            tracing::warn!(%error, "could not open the card in a browser");
                        }
                    });
                }
                Some(_) => {}
                None => {
                    shown.urls.remove(&id);
                    shown.order.retain(|kept| *kept != id);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note() -> Note {
        Note {
            id: "p1".into(),
            op: "reset".into(),
            risk: "high",
            agent: "a<b>".into(),
            repo: "/r & s".into(),
            reason: "why \"not\"".into(),
            card_url: Some("http://127.0.0.1:1/s/#p1".into()),
        }
    }

    #[test]
    fn body_escapes_markup_and_links_only_when_the_daemon_renders_them() {
        let note = note();
        assert!(note.body(false, false).starts_with("a<b> (self-declared) on /r & s\n"));
        let marked = note.body(true, false);
        assert!(marked.starts_with("a&lt;b&gt; (self-declared) on /r &amp; s\nwhy &quot;not&quot;"), "{marked}");
        assert!(!marked.contains("<a href"));
        assert!(note.body(true, true).ends_with("\n<a href=\"http://127.0.0.1:1/s/#p1\">Open the card</a>"));
    }

    #[test]
    fn fallback_is_one_line_with_the_bell() {
        let line = note().fallback_line();
        assert!(line.starts_with('\u{7}'));
        assert_eq!(line.matches('\n').count(), 1);
        assert!(line.ends_with('\n'));
    }

    #[test]
    fn remembers_at_most_the_bound() {
        let mut shown = Shown::default();
        for id in 0..(REMEMBERED as u32 + 10) {
            shown.remember(id, "d".into(), format!("u{id}"));
        }
        assert_eq!(shown.urls.len(), REMEMBERED);
        assert!(!shown.urls.contains_key(&0));
        assert!(shown.urls.contains_key(&(REMEMBERED as u32 + 9)));
    }
}
