//! Git's binary patch format (`git diff --binary`): zlib-deflated content in git's base85, which
//! `git apply` turns back into the exact bytes. Used for text that is not valid UTF-8, so a JSON
//! patch never mangles it.

use std::io::Write as _;

/// Git's base85 alphabet (`base85.c`).
const ALPHABET: &[u8; 85] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// Bytes per encoded line, as git writes them.
const LINE_BYTES: usize = 52;

/// The `GIT binary patch` block that turns `old` into `new`: a forward literal, then the reverse
/// one (so that `git apply -R` works too), each followed by an empty line.
pub(crate) fn patch(old: &[u8], new: &[u8]) -> String {
    let mut out = String::from("GIT binary patch\n");
    literal(&mut out, new);
    literal(&mut out, old);
    out
}

fn literal(out: &mut String, data: &[u8]) {
    out.push_str(&format!("literal {}\n", data.len()));
    for chunk in deflate(data).chunks(LINE_BYTES) {
        encode_line(out, chunk);
    }
    out.push('\n');
}

fn deflate(data: &[u8]) -> Vec<u8> {
    let mut writer = gix::zlib::stream::deflate::Write::new(Vec::new(), gix::zlib::Compression::DEFAULT);
    // Writing to a Vec cannot fail; `flush` finishes the zlib stream.
    writer.write_all(data).expect("writing to memory succeeds");
    writer.flush().expect("writing to memory succeeds");
    writer.into_inner()
}

/// One line: a length character (`A`-`Z` for 1-26 bytes, `a`-`z` for 27-52), then 5 characters per
/// 4 bytes.
fn encode_line(out: &mut String, chunk: &[u8]) {
    let len = chunk.len();
    out.push(if len <= 26 { (b'A' + len as u8 - 1) as char } else { (b'a' + (len - 26) as u8 - 1) as char });
    for group in chunk.chunks(4) {
        let mut word = [0u8; 4];
        word[..group.len()].copy_from_slice(group);
        let mut acc = u32::from_be_bytes(word);
        let mut digits = [0u8; 5];
        for digit in digits.iter_mut().rev() {
            *digit = ALPHABET[(acc % 85) as usize];
            acc /= 85;
        }
        out.extend(digits.iter().map(|&digit| digit as char));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_git() {
        // The zlib stream git wrote for `ab\0ce` in `git diff --binary`, and the line it printed for it.
        let zlib = [0x78, 0x01, 0x4b, 0x4c, 0x62, 0x48, 0x4e, 0x05, 0x00, 0x04, 0x9d, 0x01, 0x8c];
        let mut line = String::new();
        encode_line(&mut line, &zlib);
        assert_eq!(line, "McmYdHVn|K}00f-@i~s-t\n");
    }

    #[test]
    fn long_content_splits_into_52_byte_lines() {
        let data: Vec<u8> = (0..2000u32).map(|value| (value * 31 % 256) as u8).collect();
        let text = patch(b"", &data);
        assert!(text.starts_with("GIT binary patch\nliteral 2000\n"));
        assert!(text.ends_with("literal 0\n") || text.contains("\nliteral 0\n"));
        for line in
            text.lines().filter(|line| line.len() > 1 && !line.starts_with("literal") && !line.starts_with("GIT"))
        {
            let first = line.as_bytes()[0];
            let bytes = if first.is_ascii_uppercase() { first - b'A' + 1 } else { first - b'a' + 27 } as usize;
            assert_eq!(line.len() - 1, bytes.div_ceil(4) * 5, "{line}");
        }
    }
}
