#!/usr/bin/env python3
"""Checks every relative link of the project's Markdown files: the file it names must exist, and a `#fragment` must
name a heading of that file (GitHub's anchor rules: lower case, spaces to hyphens, punctuation dropped) or an
`<a id="...">` in it. Checks too that every citation of the contract in the tracked sources and docs,
`design.md#<id>`, names an anchor of docs/design.md, and that none cites it by section number (`design.md#transport`),
which renumbering breaks silently.

Usage: scripts/check_links.py [--check]. Prints each broken link as `file:line: target (why)` and exits 1 when there
is one. Links to other sites (`http:`, `https:`, `mailto:`) are not fetched.
"""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT = re.compile(r'<a id="([^"]+)"></a>')
CITATION = re.compile(r"design\.md#([A-Za-z0-9_-]+)")
NUMBERED = re.compile(r"design\.md §\d")


def markdown_files():
    """The tracked Markdown files, outside vendor/ (patched upstream copies) and node_modules."""
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / name for name in listed.stdout.splitlines() if not name.startswith("vendor/")]


def anchor(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"`|\*", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found = set()
        fenced = False
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                fenced = not fenced
            match = None if fenced else HEADING.match(line)
            found.update(EXPLICIT.findall(line))
            if match:
                base = anchor(match.group(2))
                name, count = base, 1
                while name in found:
                    name, count = f"{base}-{count}", count + 1
                found.add(name)
        cache[path] = found
    return cache[path]


def broken(path):
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for match in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            target = match.group(1) or match.group(2)
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, fragment = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                yield f"{path.relative_to(ROOT)}:{number}: {target} (no such file)"
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                yield f"{path.relative_to(ROOT)}:{number}: {target} (no such heading)"


def citations():
    """Each citation of the contract in a tracked text file that names no anchor of docs/design.md, or a section
    number."""
    design = ROOT / "docs" / "design.md"
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in listed.stdout.splitlines():
        if name.startswith("vendor/") or not name.endswith((".rs", ".md", ".py", ".sh", ".mjs", ".toml", ".json")):
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for anchor_id in CITATION.findall(line):
                if anchor_id not in anchors(design):
                    yield f"{name}:{number}: design.md#{anchor_id} (no such anchor in docs/design.md)"
            if NUMBERED.search(line) and name != "scripts/check_links.py":
                yield f"{name}:{number}: cites design.md by section number; cite design.md#<anchor> instead"


def main():
    problems = [problem for path in markdown_files() for problem in broken(path)]
    problems += list(citations())
    for problem in problems:
        print(problem)
    checked = len(markdown_files())
    if problems:
        print(f"check_links: {len(problems)} broken links or citations ({checked} Markdown files)", file=sys.stderr)
        return 1
    print(f"check_links: every relative link of {checked} Markdown files and every design.md citation resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
