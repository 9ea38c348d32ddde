//! The index's fields and its trigram tokenizer.
//!
//! One tantivy document per commit:
//! - `sha`: the full hex sha, indexed as one term (deletions) and stored (answers);
//! - `time`: the committer date in seconds since the epoch, a fast field (ranking,
//!   `since`/`until`);
//! - `message`: the whole message (subject and body) as [`Trigrams`]: positions make a phrase of
//!   consecutive trigrams match exactly where the text holds the query as a substring, which is
//!   what `git log -i --grep` matches;
//! - `words`: the same message as [`Words`] (its runs of word characters, lowercased, with
//!   frequencies): a query word made only of word characters is a substring of the message exactly
//!   when it is a substring of one of its words, so such a query is answered from the words of the
//!   term dictionary that contain it, without positions (see `crate::search`);
//! - `identity`: the author as recorded, `"Name\0email"` (at most [`IDENTITY_MAX_BYTES`]), one raw
//!   term: the `author` filter reads the distinct identities from the term dictionary, maps each
//!   through `.mailmap` and matches the recorded and the mapped `"Name <email>"` (see
//!   `crate::search`);
//! - `key`: the first 8 bytes of the sha as a big-endian number, a fast field: the last tie-break
//!   of the answer's order, the same from the index and from a walk;
//! - `paths`: every prefix of every path the commit touched (`a`, `a/b`, `a/b/c.rs`), one raw term
//!   each.

use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The name the trigram tokenizer is registered under.
pub(crate) const TRIGRAMS: &str = "fluxgit_trigrams";

/// The name the word tokenizer is registered under.
pub(crate) const WORDS: &str = "fluxgit_words";

/// The longest word, in bytes, indexed as itself in `words` (tantivy refuses terms near 64 KiB); a
/// longer run of word characters is indexed as [`LONG_WORD`].
pub(crate) const WORD_MAX_BYTES: usize = 256;

/// The term standing for "this message has a word longer than [`WORD_MAX_BYTES`]": it holds no word
/// character, so no query word is a substring of it.
pub(crate) const LONG_WORD: &str = "\u{1}";

/// Pads the lowercased text so that every character starts a trigram (the last two are completed
/// with it); a query of one or two characters then matches as a prefix of some trigram.
pub(crate) const PAD: char = '\u{1}';

/// The fields of the schema, looked up once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    pub(crate) sha: Field,
    pub(crate) time: Field,
    pub(crate) message: Field,
    pub(crate) words: Field,
    pub(crate) identity: Field,
    pub(crate) key: Field,
    pub(crate) paths: Field,
}

/// The longest `identity` term in bytes (tantivy refuses terms near 64 KiB); a longer one is cut at
/// a character boundary (such an author is then matched by what survives the cut).
pub(crate) const IDENTITY_MAX_BYTES: usize = 4096;

/// The `identity` term of an author.
pub(crate) fn identity(name: &str, email: &str) -> String {
    let mut text = format!("{name}\0{email}");
    if text.len() > IDENTITY_MAX_BYTES {
        let mut end = IDENTITY_MAX_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// The `key` of a commit: its sha's first 8 bytes, big-endian.
pub(crate) fn key(id: &gix::oid) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&id.as_bytes()[..8]);
    u64::from_be_bytes(bytes)
}

/// The schema and its fields.
pub(crate) fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let sha = builder.add_text_field("sha", STRING | STORED);
    let time = builder.add_i64_field("time", FAST | INDEXED);
    let trigram_options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(TRIGRAMS).set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let message = builder.add_text_field("message", trigram_options);
    let words = builder.add_text_field(
        "words",
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default().set_tokenizer(WORDS).set_index_option(IndexRecordOption::WithFreqs),
        ),
    );
    let identity = builder.add_text_field("identity", STRING);
    let key = builder.add_u64_field("key", FAST);
    let paths = builder.add_text_field("paths", STRING);
    (builder.build(), Fields { sha, time, message, words, identity, key, paths })
}

/// Splits lowercased text into overlapping character trigrams, the trigram starting at character
/// `i` at position `i`; the text is padded with [`PAD`] so the last characters start trigrams too.
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

/// The token stream of [`Trigrams`] and [`Words`]: the given strings, one position each.
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

/// Whether `c` is a word character for [`Words`] (and for the query words answered from them).
pub(crate) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The words of `text` (already lowercased by [`fold`]): its maximal runs of [`is_word_char`]
/// characters, in order; a run longer than [`WORD_MAX_BYTES`] is [`LONG_WORD`].
pub(crate) fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !is_word_char(c))
        .filter(|word| !word.is_empty())
        .map(|word| if word.len() > WORD_MAX_BYTES { LONG_WORD } else { word })
        .collect()
}

/// Splits lowercased text into its [`words`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Words {
    token: Token,
}

impl Tokenizer for Words {
    type TokenStream<'a> = TrigramStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> TrigramStream<'a> {
        self.token.reset();
        let words: Vec<String> = words(&fold(text)).into_iter().map(str::to_owned).collect();
        TrigramStream { grams: words.into_iter(), position: 0, token: &mut self.token }
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

    #[test]
    fn words_are_runs_of_word_characters() {
        assert_eq!(
            words("fix(blamed): revise 3 lines_x (41234)\n\nbody-text"),
            vec!["fix", "blamed", "revise", "3", "lines_x", "41234", "body", "text"]
        );
        let long = "a".repeat(WORD_MAX_BYTES + 1);
        assert_eq!(words(&format!("x {long} y")), vec!["x", LONG_WORD, "y"]);
        assert!(!LONG_WORD.chars().any(is_word_char));
    }
}
