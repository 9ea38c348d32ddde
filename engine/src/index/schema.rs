//! The index's fields and its trigram tokenizer.
//!
//! One tantivy document per commit:
//! - `sha`: the full hex sha, indexed as one term (deletions) and stored (answers);
//! - `time`: the committer date in seconds since the epoch, a fast field (ranking, `since`/`until`);
//! - `message`: the whole message (subject and body) as [`Trigrams`]: positions make a phrase of consecutive
//!   trigrams match exactly where the text holds the query as a substring, which is what `git log -i --grep`
//!   matches;
//! - `author`: `"Name <email>"` as [`Trigrams`], for the `author` filter (a substring, as `git log -i --author`);
//! - `paths`: every prefix of every path the commit touched (`a`, `a/b`, `a/b/c.rs`), one raw term each.

use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The name the trigram tokenizer is registered under.
pub(crate) const TRIGRAMS: &str = "fluxgit_trigrams";

/// Pads the lowercased text so that every character starts a trigram (the last two are completed with it); a
/// query of one or two characters then matches as a prefix of some trigram.
pub(crate) const PAD: char = '\u{1}';

/// The fields of the schema, looked up once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    pub(crate) sha: Field,
    pub(crate) time: Field,
    pub(crate) message: Field,
    pub(crate) author: Field,
    pub(crate) paths: Field,
}

/// The schema and its fields.
pub(crate) fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let sha = builder.add_text_field("sha", STRING | STORED);
    let time = builder.add_i64_field("time", FAST | INDEXED);
    let trigram_options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(TRIGRAMS).set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let message = builder.add_text_field("message", trigram_options.clone());
    let author = builder.add_text_field("author", trigram_options);
    let paths = builder.add_text_field("paths", STRING);
    (builder.build(), Fields { sha, time, message, author, paths })
}

/// Splits lowercased text into overlapping character trigrams, the trigram starting at character `i` at position
/// `i`; the text is padded with [`PAD`] so the last characters start trigrams too.
#[derive(Debug, Clone, Default)]
pub(crate) struct Trigrams {
    token: Token,
}

/// The trigrams of `text` (already lowercased by [`fold`]), in order.
pub(crate) fn trigrams(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().chain([PAD, PAD]).collect();
    chars.windows(3).map(|window| window.iter().collect()).collect()
}

/// The case folding shared by documents and queries (Unicode lowercase).
pub(crate) fn fold(text: &str) -> String {
    text.to_lowercase()
}

impl Tokenizer for Trigrams {
    type TokenStream<'a> = TrigramStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> TrigramStream<'a> {
        self.token.reset();
        TrigramStream { grams: trigrams(&fold(text)).into_iter(), position: 0, token: &mut self.token }
    }
}

/// The token stream of [`Trigrams`].
pub(crate) struct TrigramStream<'a> {
    grams: std::vec::IntoIter<String>,
    position: usize,
    token: &'a mut Token,
}

impl TokenStream for TrigramStream<'_> {
    fn advance(&mut self) -> bool {
        let Some(gram) = self.grams.next() else { return false };
        self.token.text = gram;
        self.token.position = self.position;
        self.token.offset_from = self.position;
        self.token.offset_to = self.position + 1;
        self.position += 1;
        true
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_character_starts_a_trigram() {
        assert_eq!(trigrams("abcd"), vec!["abc", "bcd", "cd\u{1}", "d\u{1}\u{1}"]);
        assert_eq!(trigrams(""), Vec::<String>::new());
        let mut tokenizer = Trigrams::default();
        let mut stream = tokenizer.token_stream("AbC");
        let mut seen = Vec::new();
        while stream.advance() {
            seen.push((stream.token().text.clone(), stream.token().position));
        }
        assert_eq!(seen, vec![("abc".to_owned(), 0), ("bc\u{1}".to_owned(), 1), ("c\u{1}\u{1}".to_owned(), 2)]);
    }
}
