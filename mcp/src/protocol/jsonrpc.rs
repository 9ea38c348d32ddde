//! JSON-RPC 2.0 envelopes: classifying an incoming value and building responses (design.md#transport, §4.3).

use serde_json::{Map, Value, json};

use crate::tools::ProtocolError;

/// `-32700`: the message is not valid JSON.
pub const PARSE_ERROR: i32 = -32700;
/// `-32600`: the message is JSON but not a valid request (batch, bad `jsonrpc`, bad `id` type, frame too large).
pub const INVALID_REQUEST: i32 = -32600;
/// `-32601`: unknown method.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// `-32602`: invalid params, unknown tool, arguments failing the input schema, missing modern `_meta` keys.
pub const INVALID_PARAMS: i32 = -32602;
/// `-32603`: internal error (e.g. a tool panicked).
pub const INTERNAL_ERROR: i32 = -32603;
/// `-32800`: the request was cancelled by `notifications/cancelled` (LSP's `RequestCancelled`). Never sent on
/// stdio (MCP: no response for a cancelled request); the audit ledger records a cancelled call with it.
pub const REQUEST_CANCELLED: i32 = -32800;
/// `-32022`: unsupported modern protocol version; `data: {supported, requested}`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;

impl ProtocolError {
    /// An error with `code`, `message` and optional `data`.
    pub fn new(code: i32, message: impl Into<String>, data: Option<Value>) -> Self {
        Self { code, message: message.into(), data }
    }

    /// `-32602` invalid params, e.g. `ProtocolError::invalid_params("repoPath is outside the allowed roots",
    /// Some(json!({"reason": "outside_allowed_roots"})))` (design.md#roots).
    pub fn invalid_params(message: impl Into<String>, data: Option<Value>) -> Self {
        Self::new(INVALID_PARAMS, message, data)
    }

    /// `-32600` invalid request.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(INVALID_REQUEST, message, None)
    }

    /// `-32601` method not found.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(METHOD_NOT_FOUND, format!("Method not found: {method}"), None)
    }

    /// `-32603` internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(INTERNAL_ERROR, message, None)
    }

    /// `-32800` request cancelled ([`REQUEST_CANCELLED`]).
    pub fn cancelled() -> Self {
        Self::new(REQUEST_CANCELLED, "Request cancelled", None)
    }

    /// The JSON-RPC `error` member: `{code, message, data?}`.
    pub fn to_json(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".to_owned(), Value::from(self.code));
        error.insert("message".to_owned(), Value::from(self.message.clone()));
        if let Some(data) = &self.data {
            error.insert("data".to_owned(), data.clone());
        }
        Value::Object(error)
    }
}

/// A well-formed incoming message.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A request: must be answered.
    Request {
        /// A string or number id, echoed in the response.
        id: Value,
        method: String,
        /// `None` when absent; otherwise an object or array.
        params: Option<Value>,
    },
    /// A notification (no `id`): never answered, and never executed if it names a request method.
    Notification {
        method: String,
        /// `None` when absent; otherwise an object or array.
        params: Option<Value>,
    },
    /// A response or error from the client (we send no requests, so it is only logged).
    Response,
}

/// A message refused before dispatch, with the id to answer with (`null` when unknown or invalid).
#[derive(Debug)]
pub(crate) struct Rejected {
    pub(crate) id: Value,
    pub(crate) error: ProtocolError,
}

/// Classifies one parsed JSON value.
pub(crate) fn classify(message: Value) -> Result<Incoming, Box<Rejected>> {
    let mut object = match message {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(Box::new(Rejected {
                id: Value::Null,
                error: ProtocolError::invalid_request(
                    "Batch requests are not supported: send one JSON-RPC message per frame",
                ),
            }));
        }
        _ => {
            return Err(Box::new(Rejected {
                id: Value::Null,
                error: ProtocolError::invalid_request("A JSON-RPC message must be a JSON object"),
            }));
        }
    };
    let id = match object.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => {
            return Err(Box::new(Rejected {
                id: Value::Null,
                error: ProtocolError::invalid_request("id must be a string or a number"),
            }));
        }
    };
    let reject = |message: &str| {
        Box::new(Rejected { id: id.clone().unwrap_or(Value::Null), error: ProtocolError::invalid_request(message) })
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(reject("jsonrpc must be \"2.0\""));
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return Err(reject("method must be a string")),
        None if id.is_some() && (object.contains_key("result") || object.contains_key("error")) => {
            return Ok(Incoming::Response);
        }
        None => return Err(reject("A request needs a method")),
    };
    let params = match object.remove("params") {
        None => None,
        Some(params @ (Value::Object(_) | Value::Array(_))) => Some(params),
        Some(_) => return Err(reject("params must be an object")),
    };
    Ok(match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    })
}

/// `{"jsonrpc": "2.0", "id": id, "result": result}`.
pub(crate) fn success(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// `{"jsonrpc": "2.0", "id": id, "error": {...}}` (`id` is `null` when the request's id is unknown).
pub(crate) fn failure(id: Value, error: &ProtocolError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()})
}
