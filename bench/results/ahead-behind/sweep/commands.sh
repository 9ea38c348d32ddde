#!/bin/sh
# Run in the fixture's work tree (see ../env.txt); each command's stdout and stderr are in the numbered files.
git status
git log -n 10
git branch -vv
git stash list
git submodule status --recursive
git diff --stat
git rev-list --left-right --count @{upstream}...HEAD
git worktree list
