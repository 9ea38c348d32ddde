#!/usr/bin/env bash
# Builds the checkout of README.md's "An answer" under $1: `main` cloned from `origin` at two commits, one behind
# after a fetch, `main.rs` edited and `notes.txt` untracked. Names and dates are fixed, so the shas are too; the test
# `readme_example_is_what_the_server_prints` (first_use.rs) holds README's block to the server's answer here.
set -euo pipefail
export GIT_AUTHOR_NAME="Ada Lovelace" GIT_AUTHOR_EMAIL="ada@example.com"
export GIT_COMMITTER_NAME="Ada Lovelace" GIT_COMMITTER_EMAIL="ada@example.com"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
at() { export GIT_AUTHOR_DATE="2026-11-02T$1:00:00Z" GIT_COMMITTER_DATE="2026-11-02T$1:00:00Z"; }
cd "$1"
git init -q -b main origin
cd origin
at 10
printf 'fn main() {}\n' > main.rs
git add main.rs
git commit -q -m "feat: start the parser"
at 11
printf 'fn main() {}\nfn parse() {}\n' > main.rs
git commit -q -a -m "feat(parser): parse tokens"
cd ..
git clone -q origin repo
cd origin
at 12
printf 'tokens\n' > lexer.rs
git add lexer.rs
git commit -q -m "feat(lexer): split words"
cd ../repo
git fetch -q
printf 'fn main() { parse(); }\nfn parse() {}\n' > main.rs
printf 'todo\n' > notes.txt
