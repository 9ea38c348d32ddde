#!/bin/sh
# The expert's commands, run in the task's checkout (or the fleet's folder).
git blame -L 121,121 wildmatch.c
git show -s 1f2e05f0b7
