//! The durable journal (design.md#gateway): one SQLite database, `<run_dir>/gateway/journal.sqlite3`, in WAL mode with
//! `synchronous=FULL`, so every committed transition survives a crash or power loss.
//!
//! Tables: `proposals` (one row per proposal, its current state), `transitions` (every state change and human act,
//! in order; the safety timeline reads it), `restore_points`. Every transition is committed before the act it
//! announces (a claim before git runs, a restore point before the operation), and changes state only from the
//! expected state (`UPDATE ... WHERE status = ?`), so two processes can never both claim one proposal.
//! The CLI and the serving gateway open the same file; SQLite's locking serialises them (busy timeout 10 s).

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::Value;

use crate::time::now_ms;

/// Proposals one agent may have pending at once (design.md#gateway).
pub const PENDING_CAP: i64 = 5;
/// Proposals all agents together may have pending at once: agent ids are self-declared, so a client could
/// otherwise fill the queue under ever new names.
pub const PENDING_GLOBAL_CAP: i64 = 50;
/// How long a proposal waits for a person, after `requestedAt` (design.md#tools), in milliseconds.
pub const EXPIRY_MS: i64 = 5 * 60 * 1000;

/// A proposal's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Waiting for a person.
    Pending,
    /// Approved, waiting for the executor's claim.
    Approved,
    /// Claimed by the executor; git may have run.
    Executing,
    /// Executed.
    Completed,
    /// Blocked or failed during execution (or an operation this gateway does not execute yet).
    Failed,
    /// A person said no.
    Rejected,
    /// Its agent withdrew it while pending.
    Cancelled,
    /// Nobody decided in time.
    Expired,
}

impl Status {
    const ALL: [(Status, &'static str); 8] = [
        (Self::Pending, "pending"),
        (Self::Approved, "approved"),
        (Self::Executing, "executing"),
        (Self::Completed, "completed"),
        (Self::Failed, "failed"),
        (Self::Rejected, "rejected"),
        (Self::Cancelled, "cancelled"),
        (Self::Expired, "expired"),
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(status, _)| *status == self).map_or("pending", |(_, name)| name)
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(_, wire)| *wire == name).map(|(status, _)| *status)
    }

    /// Whether no further transition can happen.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Rejected | Self::Cancelled | Self::Expired)
    }
}

/// One proposal as journaled.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// The `previewId`.
    pub id: String,
    /// The forwarded agent id (self-declared).
    pub agent: String,
    /// The idempotency key as sent (`{op}:client:{key}` or `{op}:call:{uuid}`).
    pub idempotency_key: String,
    /// The operation type.
    pub op: String,
    /// The repository path as sent (the canonical root).
    pub repo_path: String,
    /// The canonical repository resolved on receipt (JSON of [`crate::repo::Canonical`]).
    pub canonical: Value,
    /// The agent's reason.
    pub reason: String,
    /// The whole request body.
    pub body: Value,
    /// `requestedAt` as sent.
    pub requested_at: String,
    /// When it expires while pending (ms since the epoch).
    pub expires_at_ms: i64,
    /// Its state.
    pub status: Status,
    /// For terminal states other than completed: a machine reason (`rejected_by_person`, `blocked_refs_moved`,
    /// `blocked_repository_mismatch`, ...).
    pub status_reason: Option<String>,
    /// A message for people and agents.
    pub status_message: Option<String>,
    /// What git did (completed or failed).
    pub result: Option<Value>,
    /// sha256 of the one-time code `show` printed, while one is outstanding.
    pub code_hash: Option<String>,
    /// Digest of the card the code was printed on.
    pub card_digest: Option<String>,
    /// The repository state recorded at approval (HEAD and refs), revalidated before execution.
    pub approval: Option<Value>,
    /// Whether an `executing` proposal was found after a restart and needs a person to reconcile it.
    pub needs_reconciliation: bool,
    /// When it was received (ms).
    pub created_ms: i64,
    /// When it last changed (ms).
    pub updated_ms: i64,
}

/// One journaled transition or human act.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// Order in the journal.
    pub seq: i64,
    /// The proposal.
    pub proposal_id: String,
    /// State before (`None` for receipt).
    pub from: Option<String>,
    /// State after (or the act, e.g. `restored`).
    pub to: String,
    /// When (ms).
    pub at_ms: i64,
    /// Who: `agent:<id>`, `person`, `gateway`.
    pub actor: String,
    /// Free text.
    pub detail: String,
}

/// A restore point (design.md#tools `flux.restorePointDetails`).
#[derive(Debug, Clone, PartialEq)]
pub struct RestorePoint {
    /// Its id.
    pub id: String,
    /// The proposal it protects.
    pub proposal_id: String,
    /// The operation type.
    pub op: String,
    /// The repository's canonical work tree.
    pub repo_path: String,
    /// When it was taken (ms).
    pub created_ms: i64,
    /// HEAD's symbolic target before, if on a branch.
    pub head_ref: Option<String>,
    /// HEAD's commit before (unborn: `None`).
    pub head_sha: Option<String>,
    /// Every ref before (`{name: sha}`).
    pub refs_before: Value,
    /// Every ref after the operation (`{name: sha}`), once it ran.
    pub refs_after: Option<Value>,
    /// The snapshot commit (`refs/fluxgit/restore/<id>`): work tree as its tree.
    pub snapshot: String,
    /// The saved index file (`None`: the repository had none).
    pub index_file: Option<String>,
    /// When it was restored (ms), if it was.
    pub restored_ms: Option<i64>,
}

/// Outcome of recording a new proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    /// A new proposal, journaled as pending.
    Created(Proposal),
    /// The same agent's proposal with the same idempotency key, as it stands.
    Existing(Proposal),
}

/// A journal error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// SQLite failed.
    #[error("journal: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The run dir cannot be made.
    #[error("journal directory {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// [`PENDING_GLOBAL_CAP`] proposals are pending, whatever their agents.
    #[error("{0} proposals are pending (the cap for all agents is {PENDING_GLOBAL_CAP})")]
    GlobalQuota(i64),
    /// The agent already has [`PENDING_CAP`] pending proposals.
    #[error("agent has {0} pending proposals (the cap is {PENDING_CAP})")]
    Quota(i64),
    /// The `previewId` is taken by another proposal.
    #[error("previewId is already used by another proposal")]
    IdTaken,
}

/// The journal: one SQLite connection.
#[derive(Debug)]
pub struct Journal {
    connection: Connection,
    dir: PathBuf,
}

/// A new proposal to record.
#[derive(Debug, Clone)]
pub struct NewProposal {
    /// The `previewId`.
    pub id: String,
    /// The agent id.
    pub agent: String,
    /// The idempotency key.
    pub idempotency_key: String,
    /// The operation type.
    pub op: String,
    /// The repository path as sent.
    pub repo_path: String,
    /// The canonical repository.
    pub canonical: Value,
    /// The reason.
    pub reason: String,
    /// The whole body.
    pub body: Value,
    /// `requestedAt` as sent.
    pub requested_at: String,
    /// Expiry (ms).
    pub expires_at_ms: i64,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS proposals (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    op TEXT NOT NULL,
    repo_path TEXT NOT NULL,
    canonical TEXT NOT NULL,
    reason TEXT NOT NULL,
    body TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    status TEXT NOT NULL,
    status_reason TEXT,
    status_message TEXT,
    result TEXT,
    code_hash TEXT,
    card_digest TEXT,
    approval TEXT,
    needs_reconciliation INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    UNIQUE (agent, idempotency_key)
);
CREATE TABLE IF NOT EXISTS transitions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    proposal_id TEXT NOT NULL,
    from_status TEXT,
    to_status TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    actor TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS restore_points (
    id TEXT PRIMARY KEY,
    proposal_id TEXT NOT NULL,
    op TEXT NOT NULL,
    repo_path TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    head_ref TEXT,
    head_sha TEXT,
    refs_before TEXT NOT NULL,
    refs_after TEXT,
    snapshot TEXT NOT NULL,
    index_file TEXT,
    restored_ms INTEGER
);
";

const PROPOSAL_COLUMNS: &str = "id, agent, idempotency_key, op, repo_path, canonical, reason, body, requested_at, \
    expires_at_ms, status, status_reason, status_message, result, code_hash, card_digest, approval, \
    needs_reconciliation, created_ms, updated_ms";

const RESTORE_COLUMNS: &str = "id, proposal_id, op, repo_path, created_ms, head_ref, head_sha, refs_before, \
    refs_after, snapshot, index_file, restored_ms";

impl Journal {
    /// Opens (creating) `<run_dir>/gateway/journal.sqlite3` (directory mode 0700).
    pub fn open(run_dir: &Path) -> Result<Self, Error> {
        let dir = run_dir.join("gateway");
        create_private_dir(&dir)?;
        let connection = Connection::open(dir.join("journal.sqlite3"))?;
        connection.busy_timeout(std::time::Duration::from_secs(10))?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "FULL")?;
        connection.execute_batch(SCHEMA)?;
        Ok(Self { connection, dir })
    }

    /// `<run_dir>/gateway`: where the journal, the serve lock and saved index files live.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes `<run_dir>/gateway/execute.lock` (waiting for it): held by the executor while it runs a proposal and
    /// by `restore`, so two of them never change repositories at once. Released when the file is dropped.
    pub fn execution_lock(&self) -> Result<std::fs::File, Error> {
        let path = self.dir.join("execute.lock");
        let wrap = |source| Error::Dir { path: path.clone(), source };
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(wrap)?;
        file.lock().map_err(wrap)?;
        Ok(file)
    }

    /// Records a new proposal as pending, or returns the existing one for a reused idempotency key; refuses when
    /// the agent is at its pending cap or all agents together are at the global one. One immediate transaction.
    pub fn record(&mut self, new: &NewProposal) -> Result<Recorded, Error> {
        let now = now_ms();
        let transaction = self.connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing: Option<String> = transaction
            .query_row(
                "SELECT id FROM proposals WHERE agent = ?1 AND idempotency_key = ?2",
                params![new.agent, new.idempotency_key],
                |row| row.get(0),
            )
            .optional()?;
        if let Some(id) = existing {
            drop(transaction);
            self.expire_due()?;
            return Ok(Recorded::Existing(self.get(&id)?.ok_or(Error::IdTaken)?));
        }
        let taken: i64 =
            transaction.query_row("SELECT count(*) FROM proposals WHERE id = ?1", params![new.id], |row| row.get(0))?;
        if taken > 0 {
            return Err(Error::IdTaken);
        }
        let pending: i64 = transaction.query_row(
            "SELECT count(*) FROM proposals WHERE agent = ?1 AND status = 'pending' AND expires_at_ms > ?2",
            params![new.agent, now],
            |row| row.get(0),
        )?;
        if pending >= PENDING_CAP {
            return Err(Error::Quota(pending));
        }
        let all_pending: i64 = transaction.query_row(
            "SELECT count(*) FROM proposals WHERE status = 'pending' AND expires_at_ms > ?1",
            params![now],
            |row| row.get(0),
        )?;
        if all_pending >= PENDING_GLOBAL_CAP {
            return Err(Error::GlobalQuota(all_pending));
        }
        transaction.execute(
            "INSERT INTO proposals (id, agent, idempotency_key, op, repo_path, canonical, reason, body, \
             requested_at, expires_at_ms, status, created_ms, updated_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending', ?11, ?11)",
            params![
                new.id,
                new.agent,
                new.idempotency_key,
                new.op,
                new.repo_path,
                new.canonical.to_string(),
                new.reason,
                new.body.to_string(),
                new.requested_at,
                new.expires_at_ms,
                now
            ],
        )?;
        insert_transition(&transaction, &new.id, None, "pending", now, &format!("agent:{}", new.agent), "received")?;
        transaction.commit()?;
        Ok(Recorded::Created(self.get(&new.id)?.ok_or(Error::IdTaken)?))
    }
    /// Whether a new proposal of `agent` with `idempotency_key` would meet the global pending cap now: at least
    /// [`PENDING_GLOBAL_CAP`] proposals are pending and none answers that key. A cheap look before the git checks
    /// of a proposal; [`Journal::record`] decides for good.
    pub fn at_global_cap(&self, agent: &str, idempotency_key: &str) -> Result<bool, Error> {
        let pending: i64 = self.connection.query_row(
            "SELECT count(*) FROM proposals WHERE status = 'pending' AND expires_at_ms > ?1",
            params![now_ms()],
            |row| row.get(0),
        )?;
        if pending < PENDING_GLOBAL_CAP {
            return Ok(false);
        }
        let known: i64 = self.connection.query_row(
            "SELECT count(*) FROM proposals WHERE agent = ?1 AND idempotency_key = ?2",
            params![agent, idempotency_key],
            |row| row.get(0),
        )?;
        Ok(known == 0)
    }

    /// One proposal.
    pub fn get(&self, id: &str) -> Result<Option<Proposal>, Error> {
        let sql = format!("SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE id = ?1");
        Ok(self.connection.query_row(&sql, params![id], proposal_from_row).optional()?)
    }

    /// The ids of proposals that start with `prefix`, in id order, at most `limit` of them.
    pub fn ids_starting_with(&self, prefix: &str, limit: usize) -> Result<Vec<String>, Error> {
        let mut statement = self
            .connection
            .prepare("SELECT id FROM proposals WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id LIMIT ?2")?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = statement.query_map(params![prefix, limit], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every proposal, newest first.
    pub fn list(&self) -> Result<Vec<Proposal>, Error> {
        let sql = format!("SELECT {PROPOSAL_COLUMNS} FROM proposals ORDER BY created_ms DESC, id");
        let mut statement = self.connection.prepare(&sql)?;
        let rows = statement.query_map([], proposal_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// What the approval page's queue lists: every proposal not yet ended or flagged for reconciliation (oldest
    /// first), then at most `recent` ended ones (newest change first): only those rows are read into memory,
    /// whatever the journal's length.
    pub fn queue(&self, recent: usize) -> Result<(Vec<Proposal>, Vec<Proposal>), Error> {
        let open_sql = format!(
            "SELECT {PROPOSAL_COLUMNS} FROM proposals \
             WHERE status IN ('pending', 'approved', 'executing') OR needs_reconciliation = 1 ORDER BY created_ms, id"
        );
        let ended_sql = format!(
            "SELECT {PROPOSAL_COLUMNS} FROM proposals \
             WHERE status NOT IN ('pending', 'approved', 'executing') AND needs_reconciliation = 0 \
             ORDER BY updated_ms DESC, id LIMIT ?1"
        );
        let mut statement = self.connection.prepare(&open_sql)?;
        let open = statement.query_map([], proposal_from_row)?.collect::<Result<_, _>>()?;
        let mut statement = self.connection.prepare(&ended_sql)?;
        let limit = i64::try_from(recent).unwrap_or(i64::MAX);
        let ended = statement.query_map(params![limit], proposal_from_row)?.collect::<Result<_, _>>()?;
        Ok((open, ended))
    }

    /// Proposals in `status`, oldest change first.
    pub fn with_status(&self, status: Status) -> Result<Vec<Proposal>, Error> {
        let sql = format!("SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE status = ?1 ORDER BY updated_ms, id");
        let mut statement = self.connection.prepare(&sql)?;
        let rows = statement.query_map(params![status.as_str()], proposal_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Moves `id` from one of `from` to `to`, journaling the transition, in one transaction; `false` (nothing
    /// written) when it was not in one of `from`. `update` sets reason, message and result where given.
    pub fn transition(&mut self, id: &str, from: &[Status], to: Status, change: &Change<'_>) -> Result<bool, Error> {
        let now = now_ms();
        let transaction = self.connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current: Option<String> = transaction
            .query_row("SELECT status FROM proposals WHERE id = ?1", params![id], |row| row.get(0))
            .optional()?;
        let Some(current) = current.filter(|name| from.iter().any(|status| status.as_str() == name)) else {
            return Ok(false);
        };
        transaction.execute(
            "UPDATE proposals SET status = ?2, updated_ms = ?3, \
             status_reason = coalesce(?4, status_reason), status_message = coalesce(?5, status_message), \
             result = coalesce(?6, result), approval = coalesce(?7, approval), \
             code_hash = NULL, card_digest = NULL WHERE id = ?1 AND status = ?8",
            params![
                id,
                to.as_str(),
                now,
                change.reason,
                change.message,
                change.result.map(Value::to_string),
                change.approval.map(Value::to_string),
                current
            ],
        )?;
        insert_transition(&transaction, id, Some(&current), to.as_str(), now, change.actor, change.detail)?;
        transaction.commit()?;
        Ok(true)
    }

    /// Journals an act that does not change the state (e.g. `restored`, `needs_reconciliation`).
    pub fn note(&mut self, id: &str, act: &str, actor: &str, detail: &str) -> Result<(), Error> {
        let status: Option<String> = self
            .connection
            .query_row("SELECT status FROM proposals WHERE id = ?1", params![id], |row| row.get(0))
            .optional()?;
        insert_transition(&self.connection, id, status.as_deref(), act, now_ms(), actor, detail)?;
        Ok(())
    }

    /// Expires every pending proposal past its expiry; returns their ids.
    pub fn expire_due(&mut self) -> Result<Vec<String>, Error> {
        let now = now_ms();
        let due: Vec<String> = {
            let mut statement =
                self.connection.prepare("SELECT id FROM proposals WHERE status = 'pending' AND expires_at_ms <= ?1")?;
            let rows = statement.query_map(params![now], |row| row.get(0))?;
            rows.collect::<Result<_, _>>()?
        };
        let mut expired = Vec::new();
        for id in due {
            let change = Change {
                actor: "gateway",
                detail: "nobody decided before the expiry",
                reason: Some("expired"),
                message: Some("nobody approved or rejected the proposal before it expired"),
                ..Change::default()
            };
            if self.transition(&id, &[Status::Pending], Status::Expired, &change)? {
                expired.push(id);
            }
        }
        Ok(expired)
    }

    /// Stores the hash of a new one-time code and the digest of the card it was printed on (replacing any
    /// earlier code). Only for a pending proposal; `false` otherwise.
    pub fn set_code(&mut self, id: &str, code_hash: &str, card_digest: &str) -> Result<bool, Error> {
        let changed = self.connection.execute(
            "UPDATE proposals SET code_hash = ?2, card_digest = ?3 WHERE id = ?1 AND status = 'pending'",
            params![id, code_hash, card_digest],
        )?;
        Ok(changed == 1)
    }

    /// Forgets the outstanding code (after a wrong one: `show` must print a new card).
    pub fn clear_code(&mut self, id: &str) -> Result<(), Error> {
        self.connection
            .execute("UPDATE proposals SET code_hash = NULL, card_digest = NULL WHERE id = ?1", params![id])?;
        Ok(())
    }

    /// Marks every `executing` proposal as needing a person to reconcile it (called when serving starts: a crash
    /// may have stopped git anywhere). Returns their ids. They are never re-run.
    pub fn flag_interrupted(&mut self) -> Result<Vec<String>, Error> {
        let ids: Vec<String> = self
            .with_status(Status::Executing)?
            .into_iter()
            .filter(|proposal| !proposal.needs_reconciliation)
            .map(|proposal| proposal.id)
            .collect();
        for id in &ids {
            self.connection.execute("UPDATE proposals SET needs_reconciliation = 1 WHERE id = ?1", params![id])?;
            self.note(id, "needs_reconciliation", "gateway", "found executing after a restart; never re-run")?;
        }
        Ok(ids)
    }

    /// Records a restore point.
    pub fn insert_restore_point(&mut self, point: &RestorePoint) -> Result<(), Error> {
        self.connection.execute(
            &format!("INSERT INTO restore_points ({RESTORE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"),
            params![
                point.id,
                point.proposal_id,
                point.op,
                point.repo_path,
                point.created_ms,
                point.head_ref,
                point.head_sha,
                point.refs_before.to_string(),
                point.refs_after.as_ref().map(Value::to_string),
                point.snapshot,
                point.index_file,
                point.restored_ms
            ],
        )?;
        Ok(())
    }

    /// Records the refs after the operation.
    pub fn set_refs_after(&mut self, id: &str, refs_after: &Value) -> Result<(), Error> {
        self.connection
            .execute("UPDATE restore_points SET refs_after = ?2 WHERE id = ?1", params![id, refs_after.to_string()])?;
        Ok(())
    }

    /// Marks a restore point restored.
    pub fn set_restored(&mut self, id: &str) -> Result<(), Error> {
        self.connection.execute("UPDATE restore_points SET restored_ms = ?2 WHERE id = ?1", params![id, now_ms()])?;
        Ok(())
    }

    /// One restore point.
    pub fn restore_point(&self, id: &str) -> Result<Option<RestorePoint>, Error> {
        let sql = format!("SELECT {RESTORE_COLUMNS} FROM restore_points WHERE id = ?1");
        Ok(self.connection.query_row(&sql, params![id], restore_from_row).optional()?)
    }

    /// The restore point of a proposal.
    pub fn restore_point_of(&self, proposal_id: &str) -> Result<Option<RestorePoint>, Error> {
        let sql = format!("SELECT {RESTORE_COLUMNS} FROM restore_points WHERE proposal_id = ?1");
        Ok(self.connection.query_row(&sql, params![proposal_id], restore_from_row).optional()?)
    }

    /// Restore points, newest first, of one repository (or all), at most `limit`.
    pub fn restore_points(&self, repo_path: Option<&str>, limit: i64) -> Result<Vec<RestorePoint>, Error> {
        let sql = format!(
            "SELECT {RESTORE_COLUMNS} FROM restore_points WHERE ?1 IS NULL OR repo_path = ?1 \
             ORDER BY created_ms DESC, id DESC LIMIT ?2"
        );
        let mut statement = self.connection.prepare(&sql)?;
        let rows = statement.query_map(params![repo_path, limit], restore_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Transitions of one proposal, in order.
    pub fn transitions_of(&self, proposal_id: &str) -> Result<Vec<Transition>, Error> {
        self.transitions("WHERE proposal_id = ?1 ORDER BY seq", params![proposal_id])
    }

    /// Transitions of proposals on one repository (or all), newest first, at most `limit`.
    pub fn timeline(&self, repo_path: Option<&str>, limit: i64) -> Result<Vec<Transition>, Error> {
        self.transitions(
            "WHERE ?1 IS NULL OR proposal_id IN (SELECT id FROM proposals WHERE repo_path = ?1) \
             ORDER BY seq DESC LIMIT ?2",
            params![repo_path, limit],
        )
    }

    /// One transition by sequence number.
    pub fn transition_by_seq(&self, seq: i64) -> Result<Option<Transition>, Error> {
        Ok(self.transitions("WHERE seq = ?1", params![seq])?.into_iter().next())
    }

    fn transitions(&self, filter: &str, parameters: &[&dyn rusqlite::ToSql]) -> Result<Vec<Transition>, Error> {
        let sql =
            format!("SELECT seq, proposal_id, from_status, to_status, at_ms, actor, detail FROM transitions {filter}");
        let mut statement = self.connection.prepare(&sql)?;
        let rows = statement.query_map(parameters, |row| {
            Ok(Transition {
                seq: row.get(0)?,
                proposal_id: row.get(1)?,
                from: row.get(2)?,
                to: row.get(3)?,
                at_ms: row.get(4)?,
                actor: row.get(5)?,
                detail: row.get(6)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// What a transition writes besides the state.
#[derive(Debug, Clone, Copy, Default)]
pub struct Change<'a> {
    /// Who (`person`, `gateway`, `agent:<id>`).
    pub actor: &'a str,
    /// Free text for the journal.
    pub detail: &'a str,
    /// Machine reason to store.
    pub reason: Option<&'a str>,
    /// Message to store.
    pub message: Option<&'a str>,
    /// Result to store.
    pub result: Option<&'a Value>,
    /// Approval snapshot to store.
    pub approval: Option<&'a Value>,
}

fn insert_transition(
    connection: &Connection,
    id: &str,
    from: Option<&str>,
    to: &str,
    at_ms: i64,
    actor: &str,
    detail: &str,
) -> Result<(), rusqlite::Error> {
    connection.execute(
        "INSERT INTO transitions (proposal_id, from_status, to_status, at_ms, actor, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![id, from, to, at_ms, actor, detail],
    )?;
    Ok(())
}

fn json_column(text: Option<String>) -> Option<Value> {
    text.and_then(|text| serde_json::from_str(&text).ok())
}

fn proposal_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Proposal> {
    let status: String = row.get(10)?;
    Ok(Proposal {
        id: row.get(0)?,
        agent: row.get(1)?,
        idempotency_key: row.get(2)?,
        op: row.get(3)?,
        repo_path: row.get(4)?,
        canonical: json_column(row.get(5)?).unwrap_or(Value::Null),
        reason: row.get(6)?,
        body: json_column(row.get(7)?).unwrap_or(Value::Null),
        requested_at: row.get(8)?,
        expires_at_ms: row.get(9)?,
        status: Status::parse(&status).unwrap_or(Status::Failed),
        status_reason: row.get(11)?,
        status_message: row.get(12)?,
        result: json_column(row.get(13)?),
        code_hash: row.get(14)?,
        card_digest: row.get(15)?,
        approval: json_column(row.get(16)?),
        needs_reconciliation: row.get::<_, i64>(17)? != 0,
        created_ms: row.get(18)?,
        updated_ms: row.get(19)?,
    })
}

fn restore_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RestorePoint> {
    Ok(RestorePoint {
        id: row.get(0)?,
        proposal_id: row.get(1)?,
        op: row.get(2)?,
        repo_path: row.get(3)?,
        created_ms: row.get(4)?,
        head_ref: row.get(5)?,
        head_sha: row.get(6)?,
        refs_before: json_column(row.get(7)?).unwrap_or(Value::Null),
        refs_after: json_column(row.get(8)?),
        snapshot: row.get(9)?,
        index_file: row.get(10)?,
        restored_ms: row.get(11)?,
    })
}

/// Creates `dir` (and parents) with mode 0700 on Unix.
pub fn create_private_dir(dir: &Path) -> Result<(), Error> {
    let wrap = |source| Error::Dir { path: dir.to_owned(), source };
    std::fs::create_dir_all(dir).map_err(wrap)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(wrap)?;
    }
    Ok(())
}
