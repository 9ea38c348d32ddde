#!/usr/bin/env python3
"""Rewraps the paragraphs of `///` and `//!` comments that have a line over 100 columns.

Only such paragraphs are touched. Code fences, tables, headings and link definitions are left as they
are. A paragraph is filled greedily to 100 columns, and a line never starts with a token that
Markdown would read as a list, a quote, a heading or a table. A backtick span is never split, so a
span longer than a line stays over 100 columns and is listed. Running it twice changes nothing.

With `--check` it writes nothing, lists each doc line over 100 columns and exits 1 when there is one.

Usage: scripts/wrap_docs.py [--check] [DIR_OR_FILE...]   (default: engine/src)
"""

import os
import re
import sys

WIDTH = 100
DOC = re.compile(r'^(\s*)(///|//!)(.*)$')
MARKER = re.compile(r'^(?:[-*+]|\d+[.)])$')
LIST = re.compile(r'^(\s*)([-*+]|\d+[.)]) ')


def tokens(text):
    """Words, with a backtick span kept whole and a token Markdown would misread glued to the one before."""
    out = []
    for piece in re.findall(r'(?:`[^`]*`|[^\s`])+|`', text):
        if out and (MARKER.match(piece) or piece[0] in '#>|=' or piece.startswith('```')):
            out[-1] += ' ' + piece
        else:
            out.append(piece)
    return out


def fill(prefix, first_indent, rest_indent, text):
    lines, line = [], prefix + first_indent
    start = len(line)
    for token in tokens(text):
        if len(line) > start and len(line) + 1 + len(token) > WIDTH:
            lines.append(line)
            line = prefix + rest_indent
            start = len(line)
        line += (' ' if len(line) > start else '') + token
    lines.append(line)
    return lines


def rewrap_block(block):
    """`block` is a list of (indent+marker, body) of consecutive doc lines with the same prefix."""
    out, i, fence = [], 0, False
    while i < len(block):
        prefix, body = block[i]
        text = body[1:] if body.startswith(' ') else body
        stripped = text.strip()
        if stripped.startswith('```'):
            fence = not fence
        if fence or stripped.startswith('```') or not stripped or stripped[0] in '#|' or re.match(
                r'^\[[^\]]+\]:', stripped) or text.startswith('    ') and not LIST.match(text):
            out.append(prefix + body)
            i += 1
            continue
        m = LIST.match(text)
        first_indent = re.match(r'^\s*', text).group(0)
        rest_indent = ' ' * (len(m.group(0))) if m else first_indent
        para = [text]
        j = i + 1
        while j < len(block):
            nxt = block[j][1]
            nxt = nxt[1:] if nxt.startswith(' ') else nxt
            s = nxt.strip()
            if not s or s.startswith('```') or s[0] in '#|' or LIST.match(nxt) or re.match(r'^\[[^\]]+\]:', s):
                break
            if re.match(r'^\s*', nxt).group(0) != rest_indent:
                break
            para.append(nxt)
            j += 1
        lines = [prefix + ' ' + p if p else prefix for p in para]
        if any(len(line) > WIDTH for line in lines):
            words = ' '.join(p.strip() for p in para)
            out.extend(fill(prefix + ' ', first_indent, rest_indent, words))
        else:
            out.extend(lines)
        i = j
    return out


def rewrap(source):
    lines = source.split('\n')
    out, i = [], 0
    while i < len(lines):
        m = DOC.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        prefix = m.group(1) + m.group(2)
        block = []
        while i < len(lines):
            m = DOC.match(lines[i])
            if not m or m.group(1) + m.group(2) != prefix:
                break
            block.append((prefix, m.group(3)))
            i += 1
        out.extend(rewrap_block(block))
    return '\n'.join(out)


def rust_files(targets):
    for target in targets:
        if os.path.isfile(target):
            yield target
            continue
        for folder, _, names in sorted(os.walk(target)):
            for name in sorted(names):
                if name.endswith('.rs'):
                    yield os.path.join(folder, name)


def main():
    args = sys.argv[1:]
    check = '--check' in args
    targets = [arg for arg in args if arg != '--check'] or ['engine/src']
    long_lines = 0
    for path in rust_files(targets):
        with open(path) as file:
            source = file.read()
        result = source if check else rewrap(source)
        if result != source:
            with open(path, 'w') as file:
                file.write(result)
        fence = False
        for number, line in enumerate(result.split('\n'), 1):
            match = DOC.match(line)
            if match and match.group(3).strip().startswith('```'):
                fence = not fence
            if match and not fence and len(line) > WIDTH and not match.group(3).strip().startswith('|'):
                long_lines += 1
                print(f'{path}:{number}: {len(line)} columns')
    return 1 if check and long_lines else 0


if __name__ == '__main__':
    sys.exit(main())
