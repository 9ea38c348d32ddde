//! Conflict-marker regions in a file's lines: `<<<<<<<`, optional `|||||||` (diff3 / zdiff3),
//! `=======`, `>>>>>>>`, each exactly `conflict-marker-size` characters long (default 7), as Git
//! writes them.

use serde::Serialize;

/// Git's default `conflict-marker-size`.
pub const DEFAULT_MARKER_SIZE: usize = 7;

/// A run of lines: the first line (1-based) and how many; `count` 0 is an empty side (its `start`
/// is the line after the marker that opens it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LineSpan {
    /// First line, 1-based.
    pub start: usize,
    /// Number of lines.
    pub count: usize,
}

/// One conflict region: the marker lines and the sides between them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MarkerRegion {
    /// Line of the `<<<<<<<` marker, 1-based.
    pub start: usize,
    /// Line of the `>>>>>>>` marker, 1-based (inclusive).
    pub end: usize,
    /// Our side: the lines between `<<<<<<<` and `|||||||` (or `=======`).
    pub ours: LineSpan,
    /// The base, only in the diff3 and zdiff3 styles: the lines between `|||||||` and `=======`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<LineSpan>,
    /// Their side: the lines between `=======` and `>>>>>>>`.
    pub theirs: LineSpan,
    /// The label after `<<<<<<<` (e.g. `HEAD`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ours_label: Option<String>,
    /// The label after `|||||||`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_label: Option<String>,
    /// The label after `>>>>>>>`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theirs_label: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Outside,
    Ours,
    Base,
    Theirs,
}

/// Scans lines one at a time (so a large file never needs to be in memory) and collects complete
/// regions. A region left open at the end of input is not reported.
#[derive(Debug)]
pub struct Scanner {
    marker_size: usize,
    line: usize,
    section: Section,
    open: Option<MarkerRegion>,
    regions: Vec<MarkerRegion>,
}

impl Scanner {
    /// A scanner for markers of `marker_size` characters.
    pub fn new(marker_size: usize) -> Self {
        Self { marker_size, line: 0, section: Section::Outside, open: None, regions: Vec::new() }
    }

    /// Feeds the next line, with or without its line ending.
    pub fn feed(&mut self, line: &[u8]) {
        self.line += 1;
        let number = self.line;
        let span_from = |start: usize| LineSpan { start, count: number - start };
        match (self.section, self.marker(line)) {
            (_, Some((b'<', label))) => {
                self.open = Some(MarkerRegion {
                    start: number,
                    end: number,
                    ours: LineSpan { start: number + 1, count: 0 },
                    base: None,
                    theirs: LineSpan { start: 0, count: 0 },
                    ours_label: label,
                    base_label: None,
                    theirs_label: None,
                });
                self.section = Section::Ours;
            }
            (Section::Ours, Some((b'|', label))) => {
                if let Some(region) = &mut self.open {
                    region.ours = span_from(region.ours.start);
                    region.base = Some(LineSpan { start: number + 1, count: 0 });
                    region.base_label = label;
                }
                self.section = Section::Base;
            }
            (Section::Ours | Section::Base, Some((b'=', None))) => {
                if let Some(region) = &mut self.open {
                    match &mut region.base {
                        Some(base) => *base = span_from(base.start),
                        None => region.ours = span_from(region.ours.start),
                    }
                    region.theirs = LineSpan { start: number + 1, count: 0 };
                }
                self.section = Section::Theirs;
            }
            (Section::Theirs, Some((b'>', label))) => {
                if let Some(mut region) = self.open.take() {
                    region.theirs = span_from(region.theirs.start);
                    region.end = number;
                    region.theirs_label = label;
                    self.regions.push(region);
                }
                self.section = Section::Outside;
            }
            _ => {}
        }
    }

    /// The complete regions found, in file order.
    pub fn finish(self) -> Vec<MarkerRegion> {
        self.regions
    }

    /// `Some((kind, label))` when `line` is a marker: exactly `marker_size` of one of `<|=>`, then
    /// the end of the line or a space and a label (`=======` takes no label).
    fn marker(&self, line: &[u8]) -> Option<(u8, Option<String>)> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let kind = *line.first()?;
        if !matches!(kind, b'<' | b'|' | b'=' | b'>') || line.len() < self.marker_size {
            return None;
        }
        let (run, rest) = line.split_at(self.marker_size);
        if run.iter().any(|byte| *byte != kind) {
            return None;
        }
        match rest {
            [] => Some((kind, None)),
            [b' ', label @ ..] if kind != b'=' => {
                Some((kind, (!label.is_empty()).then(|| String::from_utf8_lossy(label).into_owned())))
            }
            _ => None,
        }
    }
}

/// The regions in `content` (whole-buffer convenience over [`Scanner`]).
pub fn regions(content: &[u8], marker_size: usize) -> Vec<MarkerRegion> {
    let mut scanner = Scanner::new(marker_size);
    for line in content.split_inclusive(|byte| *byte == b'\n') {
        scanner.feed(line);
    }
    scanner.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_style() {
        let text = b"a\n<<<<<<< HEAD\nours\n=======\ntheirs 1\ntheirs 2\n>>>>>>> topic\nz\n";
        let found = regions(text, 7);
        assert_eq!(found.len(), 1);
        let region = &found[0];
        assert_eq!((region.start, region.end), (2, 7));
        assert_eq!(region.ours, LineSpan { start: 3, count: 1 });
        assert_eq!(region.base, None);
        assert_eq!(region.theirs, LineSpan { start: 5, count: 2 });
        assert_eq!(region.ours_label.as_deref(), Some("HEAD"));
        assert_eq!(region.theirs_label.as_deref(), Some("topic"));
    }

    #[test]
    fn diff3_style_with_empty_sides_and_crlf() {
        let text = b"<<<<<<< ours\r\n||||||| base\r\nold\r\n=======\r\n>>>>>>> theirs\r\n";
        let region = &regions(text, 7)[0];
        assert_eq!(region.ours, LineSpan { start: 2, count: 0 });
        assert_eq!(region.base, Some(LineSpan { start: 3, count: 1 }));
        assert_eq!(region.theirs, LineSpan { start: 5, count: 0 });
        assert_eq!(region.base_label.as_deref(), Some("base"));
    }

    #[test]
    fn marker_size_is_exact() {
        let text = b"<<<<<<<< long\n<<<<<<<\nx\n========\n=======\ny\n>>>>>>>>\n>>>>>>>\n";
        let found = regions(text, 7);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].start, found[0].end), (2, 8));
        assert_eq!(found[0].ours, LineSpan { start: 3, count: 2 }, "an 8-character run is content");
        assert!(regions(b"<<<<<<<<<<\nx\n==========\ny\n>>>>>>>>>>\n", 10).len() == 1);
        assert!(regions(b"<<<<<<< a\nunterminated\n=======\n", 7).is_empty());
    }
}
