#!/bin/sh
# The expert's commands, run in the task's checkout (or the fleet's folder).
for d in checkout-*; do echo "== $d"; git -C "$d" status -sb; git -C "$d" stash list; done
