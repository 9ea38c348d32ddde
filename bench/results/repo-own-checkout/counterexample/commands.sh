#!/bin/sh
# Run in the fixture's work tree (see ../env.txt); each command's stdout and stderr are in the numbered files.
git status -sb
git log --oneline -10
git stash list
