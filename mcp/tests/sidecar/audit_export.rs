//! `audit export` through the real binary (design.md#audit): CSV that Python's `csv` module reads back with the same
//! values, JSON Lines filtered and in chain order across rotated segments, a broken chain refused or marked, a
//! FIFO in the ledger's place refused at once, and a 100 MB ledger exported in bounded memory.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fluxgit_audit::{Approval, Event, EventType, Ledger, Limits, Outcome, Risk};
use serde_json::{Map, Value};

use crate::support::{BIN, run};

fn event(index: u64, tool: &str, risk: Risk, result: Outcome, session: &str, summary: &str) -> Event {
    Event {
        tool: tool.to_owned(),
        event_type: EventType::ToolCall,
        repo_scope: fluxgit_audit::repo_scope("/work/repo"),
        args_fingerprint: fluxgit_audit::fingerprint(&serde_json::json!({"i": index})),
        risk,
        approval: Approval::None,
        result,
        session_id: session.to_owned(),
        duration_ms: index,
        summary: summary.to_owned(),
        read_only: risk == Risk::Read,
        sidecar_read_only: true,
    }
}

/// Every record of the ledger at `active` in chain order: segments oldest first, then the active file.
fn records(active: &Path) -> Vec<Map<String, Value>> {
    let dir = active.parent().expect("dir");
    let name = active.file_name().and_then(|name| name.to_str()).expect("name").to_owned();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&format!("{name}.segment-")))
        })
        .collect();
    files.sort();
    files.push(active.to_path_buf());
    files
        .iter()
        .flat_map(|file| {
            std::fs::read_to_string(file)
                .expect("read")
                .lines()
                .map(|line| serde_json::from_str(line).expect("a JSON object"))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn text_of(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

fn export(ledger: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["audit", "export", ledger.to_str().expect("utf-8")];
    args.extend_from_slice(extra);
    run(&args, &[])
}

#[test]
fn csv_export_reads_back_in_python_with_the_same_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("mcp.jsonl");
    let writer =
        Ledger::open_with_limits(&ledger, None, Limits { rotate_bytes: 4096, keep_segments: 1000, ..Limits::STANDARD })
            .expect("open");
    let hostile = [
        "plain",
        "a,b,c",
        "say \"hi\", twice \"\"",
        "two\nlines",
        "crlf\r\nand a lone cr\r",
        "=HYPERLINK(\"x\")",
        " leading and trailing spaces ",
        "ünïcödé ✓ 日本",
        "",
    ];
    for (index, text) in hostile.iter().cycle().take(40).enumerate() {
        let index = index as u64;
        let result = if index.is_multiple_of(3) { Outcome::Error } else { Outcome::Success };
        writer.append(&event(index, "repo.status", Risk::Read, result, text, text)).expect("append");
    }
    let expected = records(&ledger);
    assert!(std::fs::read_dir(dir.path()).expect("dir").count() > 3, "rotated into segments");

    let (code, stdout, stderr) = export(&ledger, &["--format", "csv"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("40 of 40 records written"), "{stderr}");
    let csv_path = dir.path().join("export.csv");
    std::fs::write(&csv_path, &stdout).expect("write");
    let script = "import csv, json, sys\n\
                  with open(sys.argv[1], newline='', encoding='utf-8') as f:\n\
                  \x20   print(json.dumps(list(csv.DictReader(f))))\n";
    let output = Command::new("python3").arg("-c").arg(script).arg(&csv_path).output().expect("python3 runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows: Vec<Map<String, Value>> = serde_json::from_slice(&output.stdout).expect("python's JSON");
    assert_eq!(rows.len(), expected.len());
    for (row, record) in rows.iter().zip(&expected) {
        assert_eq!(row.len(), fluxgit_audit::CSV_COLUMNS.len(), "{row:?}");
        for column in fluxgit_audit::CSV_COLUMNS {
            if column == "time" {
                continue;
            }
            assert_eq!(row[column], Value::String(text_of(record.get(column))), "{column} of {record:?}");
        }
        let time = row["time"].as_str().expect("time");
        let millis = record["timestamp"].as_u64().expect("timestamp") % 1000;
        assert!(time.ends_with(&format!(".{millis:03}Z")) && time.len() == 24, "{time}");
    }
}

#[test]
fn jsonl_export_is_in_chain_order_and_filtered_by_time_tool_risk_and_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("mcp.jsonl");
    let writer =
        Ledger::open_with_limits(&ledger, None, Limits { rotate_bytes: 2048, keep_segments: 1000, ..Limits::STANDARD })
            .expect("open");
    for batch in 0..3u64 {
        for index in batch * 10..batch * 10 + 10 {
            let (tool, risk) = if index.is_multiple_of(2) {
                ("repo.status", Risk::Read)
            } else {
                ("operation.preview.commit", Risk::WriteProposal)
            };
            let result = if index.is_multiple_of(5) { Outcome::Error } else { Outcome::Success };
            writer.append(&event(index, tool, risk, result, "s", "x")).expect("append");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let all = records(&ledger);
    let sequences = |stdout: &str| -> Vec<u64> {
        stdout
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("JSON")["sequence"].as_u64().expect("sequence"))
            .collect()
    };
    let (code, stdout, stderr) = export(&ledger, &["--format", "jsonl"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(sequences(&stdout), (1..=30).collect::<Vec<_>>());
    let first: Map<String, Value> = serde_json::from_str(stdout.lines().next().expect("a line")).expect("JSON");
    assert_eq!(first, all[0], "records as stored");

    let (code, stdout, _) = export(&ledger, &["--format", "jsonl", "--risk", "write-proposal", "--result", "success"]);
    assert_eq!(code, 0);
    let wanted: Vec<u64> = (0..30u64).filter(|i| i % 2 == 1 && !i.is_multiple_of(5)).map(|i| i + 1).collect();
    assert_eq!(sequences(&stdout), wanted);
    let (_, stdout, _) = export(&ledger, &["--format", "jsonl", "--tool", "repo.status"]);
    assert_eq!(sequences(&stdout).len(), 15);

    let since = all[10]["timestamp"].as_u64().expect("timestamp").to_string();
    let until = all[20]["timestamp"].as_u64().expect("timestamp").to_string();
    let (code, stdout, stderr) = export(&ledger, &["--format", "jsonl", "--since", &since, "--until", &until]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(sequences(&stdout), (11..=20).collect::<Vec<_>>(), "the middle batch");
    let (code, stdout, _) = export(&ledger, &["--format", "jsonl", "--since", "2999-01-01"]);
    assert_eq!((code, stdout.as_str()), (0, ""));
    let (code, _, stderr) = export(&ledger, &["--format", "jsonl", "--since", "yesterday"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--since") && stderr.contains("RFC 3339"), "{stderr}");
    let (code, _, stderr) = export(&dir.path().join("missing.jsonl"), &["--format", "csv"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn an_edited_entry_refuses_the_rest_unless_marked_broken() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("mcp.jsonl");
    let writer = Ledger::open(&ledger, None).expect("open");
    for index in 0..10 {
        writer.append(&event(index, "repo.status", Risk::Read, Outcome::Success, "s", "ok")).expect("append");
    }
    let text = std::fs::read_to_string(&ledger).expect("read");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[6] = lines[6].replace("\"summary\":\"ok\"", "\"summary\":\"edited\"");
    std::fs::write(&ledger, lines.join("\n") + "\n").expect("write");

    let (code, stdout, stderr) = export(&ledger, &["--format", "jsonl"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("REFUSED") && stderr.contains("after 6 records") && stderr.contains("line 7"), "{stderr}");
    assert_eq!(stdout.lines().count(), 6, "only what the chain vouches for");

    let (code, stdout, stderr) = export(&ledger, &["--format", "jsonl", "--mark-broken"]);
    assert_eq!(code, 3, "{stderr}");
    let marks: Vec<bool> = stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON")["chainVerified"].as_bool().expect("mark"))
        .collect();
    assert_eq!(marks, [[true; 6].as_slice(), &[false; 4]].concat());
    let (code, stdout, _) = export(&ledger, &["--format", "csv", "--mark-broken"]);
    assert_eq!(code, 3);
    assert!(stdout.starts_with("sequence,") && stdout.lines().next().expect("header").ends_with(",chainVerified"));
    assert!(stdout.lines().nth(7).expect("row 7").ends_with(",false"), "{stdout}");
}

#[test]
fn a_fifo_in_place_of_the_ledger_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("mcp.jsonl");
    let status = Command::new("mkfifo").arg(&ledger).status().expect("mkfifo");
    assert!(status.success());
    let started = Instant::now();
    let (code, stdout, stderr) = export(&ledger, &["--format", "csv"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("FIFO"), "{stderr}");
    assert_eq!(stdout.lines().count(), 1, "the header only: {stdout}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

/// 100 MB of ledger (400 entries of ~250 KiB, the line limit being 256 KiB, in 25 segments), exported as CSV: the
/// peak RSS of the export process, read by Python's `resource` for its child, stays under 64 MB.
#[test]
fn exporting_a_100_mb_ledger_stays_under_64_mb_of_memory() {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.expect("tempdir");
    let ledger = dir.path().join("mcp.jsonl");
    let writer = Ledger::open_with_limits(
        &ledger,
        None,
        Limits { rotate_bytes: 4 << 20, keep_segments: 1000, max_bytes: u64::MAX, retain_ms: None },
    )
    .expect("open");
    let session = "s".repeat(250 * 1024);
    for index in 0..400 {
        writer.append(&event(index, "repo.status", Risk::Read, Outcome::Success, &session, "ok")).expect("append");
    }
    let size: u64 = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|entry| entry.expect("entry").metadata().expect("metadata").len())
        .sum();
    assert!(size > 100_000_000, "{size} bytes");
    let script = "import resource, subprocess, sys\n\
                  r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n\
                  print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
                  sys.stderr.write(r.stderr.decode())\n";
    let output = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args([BIN, "audit", "export", ledger.to_str().expect("utf-8"), "--format", "csv"])
        .stdin(Stdio::null())
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut fields = stdout.split_whitespace();
    let code: i32 = fields.next().and_then(|code| code.parse().ok()).expect("exit code");
    let peak_kib: u64 = fields.next().and_then(|peak| peak.parse().ok()).expect("peak RSS");
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("400 of 400 records written"), "{stderr}");
    assert!(peak_kib < 64 * 1024, "peak RSS {peak_kib} KiB exporting {size} bytes");
    eprintln!("exported {size} bytes with a peak RSS of {peak_kib} KiB");
}
