//! Property tests of the framing transport and the JSON-RPC dispatcher: arbitrary bytes and JSON values never panic,
//! every request with an id gets exactly one well-formed answer, and the server serves the next request.
//!
//! CI runs 64 cases per property; a long run: `PROPTEST_CASES=20000 cargo test -p fluxgit-mcp-sidecar --test
//! properties --release`.

use std::io::Cursor;

use fluxgit_mcp_sidecar::protocol::Server;
use fluxgit_mcp_sidecar::transport::{Frame, FrameReader};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Cases per property: `PROPTEST_CASES` when set, else a small number that keeps CI fast.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(64);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// A server with every real tool, allowed to read only an empty temporary directory.
fn server(root: &std::path::Path) -> Server {
    let registry = fluxgit_mcp_sidecar::tools::registry().expect("the registry builds");
    let engine = fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![root.to_path_buf()] });
    Server::new(registry, engine)
}

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":"probe","method":"ping"}"#;

/// Asserts that `server` answers a ping with an empty result.
fn assert_serves_ping(server: &mut Server) {
    let answer = server.handle(PING).expect("a ping gets an answer");
    assert_eq!(answer["id"], "probe", "{answer}");
    assert_eq!(answer["result"], json!({}), "{answer}");
}

/// Asserts the shape of a JSON-RPC response.
fn assert_response(answer: &Value) {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    let has_result = answer.get("result").is_some();
    let has_error = answer.get("error").is_some();
    assert!(has_result != has_error, "exactly one of result and error: {answer}");
    if has_error {
        assert!(answer["error"]["code"].is_i64(), "{answer}");
        assert!(answer["error"]["message"].is_string(), "{answer}");
    }
}

/// Every frame of `input` read with a small limit, through `server`; returns how many frames there were.
fn drain(input: &[u8], server: &mut Server) -> usize {
    let mut reader = FrameReader::with_limit(Cursor::new(input.to_vec()), 512);
    let mut frames = 0;
    // Every frame consumes input, so there are at most as many frames as bytes (plus one pending line).
    while let Some(frame) = reader.next_frame().expect("reading from memory does not fail") {
        frames += 1;
        assert!(frames <= input.len() + 1, "the reader does not advance");
        if let Frame::Message(bytes) = &frame {
            assert!(bytes.len() <= 512, "a message over the limit was buffered");
        }
        if let Some(answer) = server.handle_frame(frame) {
            assert_response(&answer);
            serde_json::to_string(&answer).expect("answers serialise");
        }
    }
    frames
}

/// Bytes that look like the wire: JSON-ish fragments, `Content-Length` headers, line ends, and noise.
fn wire_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"Content-Length: ".to_vec()),
        (0u32..100_000).prop_map(|n| format!("Content-Length: {n}\r\n\r\n").into_bytes()),
        Just(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec()),
        Just(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec()),
        Just(b"{\"jsonrpc\":\"2.0\",\"id\":[],\"method\":".to_vec()),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
}

/// Arbitrary JSON values, nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        Just(Value::String("tools/call".into())),
        Just(Value::String("2.0".into())),
        Just(Value::String("repo.brief".into())),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("jsonrpc".to_owned()),
                    Just("id".to_owned()),
                    Just("method".to_owned()),
                    Just("params".to_owned()),
                    Just("name".to_owned()),
                    Just("arguments".to_owned()),
                    Just("repoPath".to_owned()),
                    Just("_meta".to_owned()),
                    ".{0,8}",
                ],
                inner,
                0..6,
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(config())]

    /// Arbitrary bytes never panic the reader or the server, and a ping sent after them is served.
    #[test]
    fn arbitrary_bytes_then_a_ping(noise in wire_bytes()) {
        let root = tempfile::tempdir().expect("a temporary directory");
        let mut server = server(root.path());
        drain(&noise, &mut server);
        assert_serves_ping(&mut server);
    }

    /// Without an open `Content-Length` frame, a newline resynchronises: the next line is answered.
    #[test]
    fn a_newline_resynchronises(noise in proptest::collection::vec(any::<u8>(), 0..600)) {
        prop_assume!(!noise.windows(15).any(|window| window.eq_ignore_ascii_case(b"content-length:")));
        let root = tempfile::tempdir().expect("a temporary directory");
        let server = server(root.path());
        let mut input = noise.clone();
        input.extend_from_slice(b"\n");
        input.extend_from_slice(PING);
        input.extend_from_slice(b"\n");
        let mut reader = FrameReader::with_limit(Cursor::new(input), 512);
        let mut last = None;
        while let Some(frame) = reader.next_frame().expect("reading from memory does not fail") {
            last = server.handle_frame(frame).or(last);
        }
        let last = last.expect("the ping is answered");
        prop_assert_eq!(&last["id"], "probe");
        prop_assert_eq!(&last["result"], &json!({}));
    }

    /// A `Content-Length` frame whose body has exactly the declared length is one message, whatever the body.
    #[test]
    fn content_length_frames_are_exact(body in proptest::collection::vec(any::<u8>(), 0..300)) {
        let root = tempfile::tempdir().expect("a temporary directory");
        let server = server(root.path());
        let mut input = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        input.extend_from_slice(&body);
        input.extend_from_slice(format!("Content-Length: {}\r\n\r\n", PING.len()).as_bytes());
        input.extend_from_slice(PING);
        let mut reader = FrameReader::with_limit(Cursor::new(input), 512);
        let first = reader.next_frame().expect("in memory").expect("a frame");
        prop_assert_eq!(first, Frame::Message(body.clone()));
        let second = reader.next_frame().expect("in memory").expect("the ping's frame");
        let answer = server.handle_frame(second).expect("the ping is answered");
        prop_assert_eq!(&answer["id"], "probe");
    }

    /// Arbitrary JSON values as messages: never a panic, a well-formed answer (or none), then the ping.
    #[test]
    fn arbitrary_json_messages(messages in proptest::collection::vec(json_value(), 1..6)) {
        let root = tempfile::tempdir().expect("a temporary directory");
        let mut server = server(root.path());
        for message in &messages {
            let bytes = serde_json::to_vec(message).expect("serialises");
            if let Some(answer) = server.handle(&bytes) {
                assert_response(&answer);
            }
        }
        assert_serves_ping(&mut server);
    }

    /// Requests with an id, arbitrary tool names and arguments: exactly one answer carrying that id.
    #[test]
    fn tool_calls_with_arbitrary_arguments(
        id in any::<u32>(),
        name in prop_oneof![Just("repo.brief".to_owned()), Just("repo.history".to_owned()),
            Just("diff.text".to_owned()), Just("operation.preview.merge".to_owned()), ".{0,16}"],
        arguments in json_value(),
    ) {
        let root = tempfile::tempdir().expect("a temporary directory");
        let mut server = server(root.path());
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "prop", "version": "1"}}});
        server.handle(&serde_json::to_vec(&initialize).expect("serialises")).expect("initialize is answered");
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}});
        let answer = server.handle(&serde_json::to_vec(&call).expect("serialises")).expect("a request is answered");
        assert_response(&answer);
        prop_assert_eq!(&answer["id"], &json!(id));
        assert_serves_ping(&mut server);
    }
}
