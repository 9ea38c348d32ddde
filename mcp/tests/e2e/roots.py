"""The allowed roots a test server needs for a repository (FLUXGIT_MCP_ALLOWED_ROOTS, os.pathsep-separated)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def allowed_roots(repo: Path) -> str:
    """`repo`, plus the folder holding its common dir when that lies outside it (a linked worktree's objects and
    refs live in the main repository's .git, which the server must also be allowed to read)."""
    common = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--path-format=absolute", "--git-common-dir"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    common_path = Path(common).resolve()
    roots = [str(repo)]
    if not common_path.is_relative_to(repo):
        roots.append(str(common_path.parent))
    return os.pathsep.join(roots)
