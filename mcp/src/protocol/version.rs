//! MCP protocol versions and which fields each one knows (design.md#transport).

/// An MCP protocol version this server speaks, oldest first; `Ord` follows the release dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// `2024-11-05`: tools without annotations, titles, output schemas or structured content.
    V2024_11_05,
    /// `2025-03-26`: adds tool `annotations` (with their own `title`).
    V2025_03_26,
    /// `2025-06-18`: adds the top-level tool `title`, `outputSchema` and `structuredContent`.
    V2025_06_18,
    /// `2025-11-25`: the newest version with an `initialize` handshake.
    V2025_11_25,
    /// `2026-07-28`: the modern, stateless era (`server/discover`, per-request `_meta`, `resultType`, cache hints).
    V2026_07_28,
}

impl Version {
    /// Every supported version, oldest first: what `server/discover` advertises and what `-32022` lists.
    pub const ALL: [Version; 5] =
        [Self::V2024_11_05, Self::V2025_03_26, Self::V2025_06_18, Self::V2025_11_25, Self::V2026_07_28];

    /// The newest legacy version: the `initialize` fallback and the version of legacy requests sent before
    /// `initialize`.
    pub const NEWEST_LEGACY: Version = Self::V2025_11_25;

    /// The newest version overall (modern era).
    pub const NEWEST: Version = Self::V2026_07_28;

    /// Parses a version string such as `2025-06-18`; `None` for any version this server does not speak.
    pub fn parse(text: &str) -> Option<Version> {
        Self::ALL.into_iter().find(|version| version.as_str() == text)
    }

    /// The version string, e.g. `2025-06-18`, as the MCP specification names its releases.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether this version negotiates with `initialize` (everything before 2026-07-28).
    pub fn is_legacy(self) -> bool {
        self < Self::V2026_07_28
    }

    /// Whether results carry `resultType`, `_meta` serverInfo and, for lists, `ttlMs`/`cacheScope` (2026-07-28).
    pub fn is_modern(self) -> bool {
        !self.is_legacy()
    }

    /// Whether tools may carry `annotations` (hints and `annotations.title`): 2025-03-26 on.
    pub fn has_tool_annotations(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// Whether tools may carry a top-level `title`: 2025-06-18 on.
    pub fn has_tool_title(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// Whether tools may carry `outputSchema` and call results `structuredContent`: 2025-06-18 on.
    pub fn has_structured_output(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// Whether `ping` exists: 2026-07-28 removed it.
    pub fn has_ping(self) -> bool {
        self.is_legacy()
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_parse_back_and_order_by_date() {
        let ours: Vec<&str> = Version::ALL.iter().map(|version| version.as_str()).collect();
        // The specification's releases, oldest first, as the SDKs name them.
        assert_eq!(ours, ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]);
        for version in Version::ALL {
            assert_eq!(Version::parse(version.as_str()), Some(version));
            assert_eq!(version.is_legacy(), version != Version::V2026_07_28);
        }
        assert!(Version::ALL.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(Version::NEWEST_LEGACY, Version::V2025_11_25);
        assert_eq!(Version::parse("2025-01-01"), None);
    }

    #[test]
    fn field_gates() {
        assert!(!Version::V2024_11_05.has_tool_annotations());
        assert!(Version::V2025_03_26.has_tool_annotations());
        assert!(!Version::V2025_03_26.has_tool_title());
        assert!(!Version::V2025_03_26.has_structured_output());
        assert!(Version::V2025_06_18.has_tool_title());
        assert!(Version::V2025_06_18.has_structured_output());
        assert!(Version::V2026_07_28.has_structured_output());
        assert!(Version::V2026_07_28.is_modern());
        assert!(!Version::V2025_11_25.is_modern());
    }
}
