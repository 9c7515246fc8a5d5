#!/usr/bin/env bash
# `execute` leaves no rank behind (issue 34: 39 orphans kept running after their parent was
# killed). Starts a long cpu run, waits until both rank processes run `execute-rank`, kills the
# parent with SIGKILL (it gets no chance to clean up, so only PR_SET_PDEATHSIG can stop the ranks),
# and checks that every rank is gone within 10 s.
# usage: tests/hardening_orphans.sh CLUSTERSIM   (from the repository root)
set -u
bin=$1
"$bin" execute scenarios/cpu-mlp-2rank-ddp.yaml --warmup 0 --steps 1000000 --timeout 60 >/dev/null 2>&1 &
parent=$!

# The parent's children that have become ranks (a forked child shows the parent's command line
# until it calls exec).
ranks_of() {
  local p
  for p in $(pgrep -P "$1"); do
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q execute-rank && echo "$p"
  done
}
# Alive: present and not a zombie waiting for a reaper (a container's pid 1 may never reap).
alive() { [ -r "/proc/$1/stat" ] && ! awk '{ exit $3 != "Z" }' "/proc/$1/stat" 2>/dev/null; }

ranks=()
for _ in $(seq 600); do  # up to 60 s for both ranks to start on a loaded machine
  mapfile -t ranks < <(ranks_of "$parent")
  [ ${#ranks[@]} -ge 2 ] && break
  sleep 0.1
done
if [ ${#ranks[@]} -lt 2 ]; then
  echo "FAIL: the ranks did not start within 60 s (found: ${ranks[*]:-none})"
  kill -KILL "$parent" 2>/dev/null
  exit 1
fi
sleep 1  # the ranks now run their steps
# The rendezvous folder the killed parent cannot remove (the word after --dir in a rank's command).
dir=$(tr '\0' '\n' <"/proc/${ranks[0]}/cmdline" | grep -A1 -x -- --dir | tail -1)
trap 'case "$dir" in /tmp/clustersim-exec-*) rm -rf "$dir" ;; esac' EXIT
kill -KILL "$parent"
wait "$parent" 2>/dev/null
for _ in $(seq 100); do
  left=()
  for p in "${ranks[@]}"; do alive "$p" && left+=("$p"); done
  [ ${#left[@]} -eq 0 ] && { echo "ok: parent $parent killed, its ranks ${ranks[*]} are gone"; exit 0; }
  sleep 0.1
done
echo "FAIL: parent $parent killed, ranks still running: ${left[*]}"
kill -KILL "${left[@]}" 2>/dev/null
exit 1
