#!/bin/sh
# The expert's commands, run in the task's checkout (or the fleet's folder).
git reflog
