//! The gateway's read routes (design.md#gateway): restore points, the safety timeline and semantic diffs. Unlike proposals,
//! these answers are data to pass on: [`Bridge::fetch`] says whether a gateway is configured and what it answered.

use serde_json::{Map, Value};

use crate::bridge::{Bridge, Setting, json_object};

/// What a read route gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Fetched {
    /// No gateway is configured (no address variable set).
    NotConfigured,
    /// HTTP 200 with a JSON object.
    Answer(Map<String, Value>),
    /// The gateway is configured but gave nothing usable: `reason` is `invalid_address`, `unreachable`, `timeout`,
    /// `redirect`, `http_status`, `not_found`, `malformed_reply` or `empty_reply`.
    Failed {
        /// Machine-readable reason.
        reason: String,
        /// What happened, for the agent.
        message: String,
    },
}

impl Bridge {
    /// One read: `GET path` (or `POST path` with `body`), bounded like every bridge exchange.
    pub fn fetch(&self, path: &str, body: Option<&Value>) -> Fetched {
        if matches!(self.address, Setting::Unset) {
            return Fetched::NotConfigured;
        }
        let failed = |reason: &str, message: String| Fetched::Failed { reason: reason.to_owned(), message };
        let reply = match self.address().and_then(|address| self.exchange(address, path, body)) {
            Ok(reply) => reply,
            Err(failure) => {
                let reason = failure.data.get("reason").and_then(Value::as_str).unwrap_or("unreachable").to_owned();
                return Fetched::Failed { reason, message: failure.message };
            }
        };
        match reply.status {
            200 if reply.body.trim().is_empty() => {
                failed("empty_reply", "The gateway answered 200 with no body.".into())
            }
            200 => match json_object(&reply) {
                Ok(answer) => Fetched::Answer(answer),
                Err(failure) => failed("malformed_reply", failure.message),
            },
            404 => failed("not_found", format!("The gateway has no such record ({path}).")),
            300..=399 => failed(
                "redirect",
                format!("The gateway answered HTTP {} (redirects are never followed).", reply.status),
            ),
            status => failed("http_status", format!("The gateway answered HTTP {status} to {path}.")),
        }
    }
}

/// `value` percent-encoded for a URL query (RFC 3986 unreserved characters kept).
pub fn query_value(value: &str) -> String {
    value
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(query_value("/home/me/café dir&x=1"), "%2Fhome%2Fme%2Fcaf%C3%A9%20dir%26x%3D1");
        assert_eq!(query_value("a-b_c.d~e"), "a-b_c.d~e");
    }

    #[test]
    fn without_a_gateway_nothing_is_fetched() {
        assert_eq!(Bridge::NONE.fetch("/v1/mcp/restore-points", None), Fetched::NotConfigured);
    }
}
