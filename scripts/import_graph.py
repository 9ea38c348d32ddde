#!/usr/bin/env python3
"""Prints the import circles between the source files of each crate of the workspace.

The graph has one node per source file and an edge from file A to file B when A names an item that B defines:
in a `use` line, or in a path written in the code that starts with `crate::`, `super::`, `self::`, a child
module's name or a name a `use` line brought in (a `use` of a module makes no edge by itself). A path is followed through the module tree (the `mod` declarations) and through `use` bindings, so
an item that a module re-exports leads to the file that defines it. A `pub use` line is a re-export, not a
dependency of the file that writes it, so it makes no edge of its own. Items marked `#[cfg(test)]` (test
modules, inline or in their own file) are left out: a test may use any part of the crate to check its own. A `mod` declaration makes no edge either,
and neither does a module's use of its own submodules: a folder's `mod.rs` is the front of what it declares, and
its children may use the items it defines.

It reads each crate twice. The first reading is the one above. The second reads `use` lines only (a path
written in the code makes no edge) and counts a module's use of its own submodules too, so a folder's `mod.rs`
that imports from a child whose file imports from it is a circle there.

It prints every strongly connected component of more than one file (Tarjan's algorithm) with the edges inside it
and the names behind each edge. With `--check` it exits 1 when there is any, in either reading, so a circle that
comes back fails scripts/test.sh.

Usage: scripts/import_graph.py [--check] [CRATE_SRC_DIR...]   (default: every crate of the workspace; a crate
with both `lib.rs` and `main.rs` is read from each root)
"""

import os
import re
import sys
from collections import defaultdict

TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|::|.", re.S)


def strip(src):
    """Returns the source with comments, strings and char literals blanked out."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif re.match(r'(b?r)(#*)"', src[i:i + 40]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'(b?r)(#*)"', src[i:])
            end = src.find('"' + m.group(2), i + len(m.group(0)))
            i = n if end < 0 else end + 1 + len(m.group(2))
            out.append(' "" ')
        elif c == '"':
            i += 1
            while i < n and src[i] != '"':
                i += 2 if src[i] == "\\" else 1
            i += 1
            out.append(' "" ')
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:])
            if m:
                i += len(m.group(0))
                out.append(" 'c' ")
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def tokens(src):
    """Returns the tokens of a source file, without the items marked `#[cfg(test)]`."""
    toks = [t for t in TOKEN.findall(strip(src)) if not t.isspace()]
    out = []
    i = 0
    while i < len(toks):
        if toks[i:i + 7] == ["#", "[", "cfg", "(", "test", ")", "]"]:
            i = skip_item(toks, i + 7)
            continue
        out.append(toks[i])
        i += 1
    return out


def skip_item(toks, i):
    """Returns the index after the item that starts at toks[i] (its attributes, then up to `;` or its block)."""
    while toks[i:i + 2] == ["#", "["]:
        depth, i = 1, i + 2
        while depth:
            depth += {"[": 1, "]": -1}.get(toks[i], 0)
            i += 1
    depth = 0
    while i < len(toks):
        t = toks[i]
        i += 1
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
            if depth == 0 and t == "}":
                return i
        elif t == ";" and depth == 0:
            return i
    return i


class Module:
    def __init__(self, path, file):
        self.path = path
        self.file = file
        self.children = {}
        self.bindings = {}
        self.globs = []


def parse_use_tree(toks, i, prefix, out):
    """Parses a use tree from toks[i]; appends (path, alias) pairs to out; returns the index after it."""
    path = list(prefix)
    while i < len(toks):
        t = toks[i]
        if t == "{":
            i += 1
            while toks[i] != "}":
                i = parse_use_tree(toks, i, path, out)
                if toks[i] == ",":
                    i += 1
            return i + 1
        if t == "*":
            out.append((path + ["*"], None))
            return i + 1
        if t == "::":
            i += 1
            continue
        if re.match(r"[A-Za-z_]", t):
            path.append(t)
            i += 1
            if i < len(toks) and toks[i] == "as":
                out.append((path, toks[i + 1]))
                return i + 2
            if i < len(toks) and toks[i] == "::":
                continue
            out.append((path, None))
            return i
        return i + 1
    return i


class Crate:
    def __init__(self, src_dir, root, uses_only):
        self.src_dir = src_dir
        self.uses_only = uses_only
        self.modules = {}
        self.files = {}
        self.load((), root)
        self.edges = defaultdict(lambda: defaultdict(set))
        for path, toks in list(self.files.items()):
            self.scan(path, toks, collect=True)
        for path, toks in list(self.files.items()):
            self.scan(path, toks, collect=False)

    def load(self, modpath, file):
        with open(file, encoding="utf-8") as f:
            toks = tokens(f.read())
        self.files[file] = toks
        self.modules[modpath] = Module(modpath, file)
        child_dir = os.path.dirname(file) if os.path.basename(file) in ("lib.rs", "main.rs", "mod.rs") else file[:-3]
        stack = [(modpath, None)]
        depth = 0
        i = 0
        while i < len(toks):
            t = toks[i]
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                if stack[-1][1] == depth:
                    stack.pop()
            elif t == "mod" and i + 2 < len(toks) and re.match(r"[A-Za-z_]", toks[i + 1]):
                name, nxt = toks[i + 1], toks[i + 2]
                cur = stack[-1][0]
                if nxt == ";" and cur == modpath:
                    for cand in (os.path.join(child_dir, name + ".rs"), os.path.join(child_dir, name, "mod.rs")):
                        if os.path.exists(cand):
                            self.modules[modpath].children[name] = modpath + (name,)
                            self.load(modpath + (name,), cand)
                            break
                elif nxt == "{":
                    inner = cur + (name,)
                    self.modules[cur].children[name] = inner
                    self.modules[inner] = Module(inner, file)
                    stack.append((inner, depth))
                    depth += 1
                    i += 3
                    continue
            i += 1

    def absolute(self, mod, path):
        """Makes a path written in module `mod` absolute, or returns None for an external crate."""
        if not path:
            return None
        head = path[0]
        if head == "crate":
            return list(path[1:])
        if head in ("super", "self"):
            base = list(mod)
            rest = list(path)
            while rest and rest[0] in ("super", "self"):
                if rest[0] == "super":
                    base = base[:-1]
                rest = rest[1:]
            return base + rest
        m = self.modules.get(tuple(mod))
        if m and (head in m.children or head in m.bindings):
            return list(mod) + list(path)
        return None

    def is_module(self, path, depth=0):
        """Tells whether an absolute path names a module (a `use` of it makes no edge; its paths in the code do)."""
        cur = ()
        for k, seg in enumerate(path):
            m = self.modules[cur]
            if seg in m.children:
                cur = m.children[seg]
            elif seg in m.bindings and m.bindings[seg] is not None and depth < 20:
                return self.is_module(m.bindings[seg] + list(path[k + 1:]), depth + 1)
            else:
                return False
        return True

    def resolve(self, path, depth=0):
        """Returns the file that defines the item an absolute path names."""
        cur = ()
        for k, seg in enumerate(path):
            m = self.modules[cur]
            if seg in m.children:
                cur = m.children[seg]
                continue
            if seg in m.bindings and depth < 20:
                target = m.bindings[seg]
                if target is None:
                    return None
                return self.resolve(target + list(path[k + 1:]), depth + 1)
            if seg == "*":
                return m.file
            for g in m.globs:
                gm = self.modules.get(tuple(g))
                if gm and (seg in gm.children or seg in gm.bindings) and depth < 20:
                    return self.resolve(g + list(path[k:]), depth + 1)
            return m.file
        return self.modules[cur].file

    def scan(self, file, toks, collect):
        modpath = self.module_of(file)
        stack = [(modpath, None)]
        depth = 0
        i = 0
        while i < len(toks):
            t = toks[i]
            cur = stack[-1][0]
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                if stack[-1][1] == depth:
                    stack.pop()
            elif t == "mod" and i + 2 < len(toks) and toks[i + 2] == "{":
                stack.append((cur + (toks[i + 1],), depth))
                depth += 1
                i += 3
                continue
            elif t == "use" and (i == 0 or toks[i - 1] != "::"):
                public = i > 0 and (toks[i - 1] == "pub" or (toks[i - 1] == ")" and "pub" in toks[max(0, i - 6):i]))
                pairs = []
                j = parse_use_tree(toks, i + 1, [], pairs)
                for path, alias in pairs:
                    absolute = self.absolute(cur, path[:-1] if path[-1] == "*" else path)
                    if path[-1] == "*":
                        if collect and absolute is not None:
                            self.modules[cur].globs.append(absolute)
                    elif path[-1] == "self":
                        absolute = absolute[:-1] if absolute else None
                        name = alias or path[-2]
                        if collect:
                            self.modules[cur].bindings.setdefault(name, absolute)
                    elif collect and (alias or path[-1]) != "_":
                        self.modules[cur].bindings.setdefault(alias or path[-1], absolute)
                    if not collect and not public and absolute is not None and not self.is_module(absolute):
                        self.edge(file, absolute, path)
                i = j
                continue
            elif not self.uses_only and not collect and re.match(r"[A-Za-z_]", t) and i + 1 < len(toks) and toks[i + 1] == "::" and (
                    i == 0 or toks[i - 1] != "::"):
                j = i
                path = []
                while j < len(toks) and re.match(r"[A-Za-z_]", toks[j]):
                    path.append(toks[j])
                    if j + 1 < len(toks) and toks[j + 1] == "::":
                        j += 2
                    else:
                        j += 1
                        break
                head = path[0]
                m = self.modules.get(cur)
                if head in ("crate", "super", "self") or (m and (head in m.children or head in m.bindings)):
                    absolute = self.absolute(cur, path)
                    if absolute is not None:
                        self.edge(file, absolute, path)
                i = j
                continue
            i += 1

    def edge(self, file, absolute, path):
        target = self.resolve(absolute)
        if target and target != file and (self.uses_only or not self.below(target, file)):
            self.edges[file][target].add("::".join(path))


    def below(self, target, file):
        """Tells whether `target` is a file of a submodule of the module that `file` holds."""
        a = self.module_of(file)
        b = self.module_of(target)
        return len(b) > len(a) and b[:len(a)] == a

    def module_of(self, file):
        return min((p for p, m in self.modules.items() if m.file == file), key=len)


def sccs(nodes, edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return [sorted(c) for c in out if len(c) > 1]


def workspace_crates():
    """Returns the `src` folder of every member of the workspace, from the root Cargo.toml."""
    with open("Cargo.toml", encoding="utf-8") as f:
        text = f.read()
    members = re.search(r"members\s*=\s*\[(.*?)\]", text, re.S)
    return [os.path.join(m, "src") for m in re.findall(r'"([^"]+)"', members.group(1))] if members else []


def main(argv):
    check = "--check" in argv
    dirs = [a for a in argv if not a.startswith("--")] or workspace_crates()
    found = 0
    readings = [(d, root, uses_only) for d in dirs for root in ("lib.rs", "main.rs")
                if os.path.exists(os.path.join(d, root)) for uses_only in (False, True)]
    for d, root, uses_only in readings:
        crate = Crate(d, os.path.join(d, root), uses_only)
        comps = sccs(crate.files.keys(), crate.edges)
        reading = "use lines, parent to child included" if uses_only else "uses and paths"
        print(f"{d} from {root}, {reading}: {len(crate.files)} files, "
              f"{sum(len(t) for t in crate.edges.values())} edges, {len(comps)} circle(s)")
        for comp in sorted(comps, key=len, reverse=True):
            found += 1
            members = set(comp)
            rel = lambda f: os.path.relpath(f, d)
            print(f"  circle of {len(comp)} files: {' '.join(rel(f) for f in comp)}")
            for a in comp:
                for b in sorted(crate.edges[a]):
                    if b in members:
                        names = ", ".join(sorted(crate.edges[a][b]))
                        print(f"    {rel(a)} -> {rel(b)}: {names}")
    if check and found:
        print(f"import_graph: {found} circle(s); a module must not import from a module that imports it",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
