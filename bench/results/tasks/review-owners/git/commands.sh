#!/bin/sh
# The expert's commands, run in the task's checkout (or the fleet's folder).
git status -s
git show HEAD:.github/CODEOWNERS
git shortlog -sn --no-merges HEAD -- tokio/src/process | head -3
