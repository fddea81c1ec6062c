#!/usr/bin/env bash
# The documented sequence, as an operator would script it with curl and jq: set the weights, one
# bulk POST per kind and source storage (source_storage_name + destination_storage_name), then poll
# GET /projects?repository_storage=<source> until it is empty. Nothing is retried: a failed move, or
# a snippet or group still on a source, is only visible in the leftovers printed at the end.
#
# Usage: GITLAB_URL=http://127.0.0.1:PORT GITLAB_TOKEN=... bench/baseline-doc.sh
# Env:   SOURCES="nfs-1 nfs-2"  DESTINATION=cluster  POLL_SECONDS=0.2
#        TIMEOUT_SECONDS=120 (give up)  STALL_SECONDS=10 (give up when the count stops falling)
# Prints one JSON line: makespan, requests sent, items left on the sources per kind.
set -euo pipefail

for tool in curl jq; do
  command -v "$tool" >/dev/null 2>&1 || { echo "baseline-doc.sh: $tool is not installed; it is needed to run the documented sequence" >&2; exit 3; }
done
: "${GITLAB_URL:?set GITLAB_URL}"
: "${GITLAB_TOKEN:?set GITLAB_TOKEN}"
SOURCES=${SOURCES:-"nfs-1 nfs-2"}
DESTINATION=${DESTINATION:-cluster}
POLL_SECONDS=${POLL_SECONDS:-0.2}
TIMEOUT_SECONDS=${TIMEOUT_SECONDS:-120}
STALL_SECONDS=${STALL_SECONDS:-10}
API="$GITLAB_URL/api/v4"
# The token goes in a header file, not on curl's command line (visible in ps). Requests are counted
# as lines of a file, since command substitutions run in subshells.
HEADERS=$(mktemp)
COUNTER=$(mktemp)
trap 'rm -f "$HEADERS" "$COUNTER"' EXIT
printf 'PRIVATE-TOKEN: %s\nContent-Type: application/json\n' "$GITLAB_TOKEN" >"$HEADERS"

api() { # method path [json]
  echo >>"$COUNTER"
  if [ $# -ge 3 ]; then curl -sS --max-time 30 -H @"$HEADERS" -X "$1" "$API$2" -d "$3"
  else curl -sS --max-time 30 -H @"$HEADERS" -X "$1" "$API$2"; fi
}
# Items of a kind still on a storage: offset pages of 100 until a short page.
left_on() { # list-path storage
  local page=1 n=0 got
  while :; do
    got=$(api GET "$1?repository_storage=$2&per_page=100&page=$page" | jq 'length')
    n=$((n + got))
    [ "$got" -lt 100 ] && break
    page=$((page + 1))
  done
  echo "$n"
}
now() { date +%s.%N; }

start=$(now)
weights=$(jq -cn --arg d "$DESTINATION" --arg s "$SOURCES" '{repository_storages_weighted: ({($d): 100} + ([$s | splits(" +") | select(length > 0) | {(.): 0}] | add))}')
api PUT /application/settings "$weights" >/dev/null
for src in $SOURCES; do
  body=$(jq -cn --arg s "$src" --arg d "$DESTINATION" '{source_storage_name: $s, destination_storage_name: $d}')
  for kind in project snippet group; do
    api POST "/${kind}_repository_storage_moves" "$body" >/dev/null
  done
done

outcome=drained
last=-1
last_change=$(now)
while :; do
  total=0
  for src in $SOURCES; do total=$((total + $(left_on /projects "$src"))); done
  t=$(now)
  [ "$total" -eq 0 ] && { last_change=$t; break; }
  if [ "$total" -ne "$last" ]; then last=$total; last_change=$t; fi
  if awk -v a="$t" -v b="$start" -v m="$TIMEOUT_SECONDS" 'BEGIN { exit !(a - b > m) }'; then outcome=timeout; break; fi
  if awk -v a="$t" -v b="$last_change" -v m="$STALL_SECONDS" 'BEGIN { exit !(a - b > m) }'; then outcome=stalled; break; fi
  sleep "$POLL_SECONDS"
done
end=$(now)
sent=$(wc -l <"$COUNTER")

# What the documented sequence left behind (not counted in its requests).
projects=0 snippets=0 groups=0
for src in $SOURCES; do
  projects=$((projects + $(left_on /projects "$src")))
  snippets=$((snippets + $(left_on /snippets/all "$src")))
  groups=$((groups + $(left_on /groups "$src")))
done
jq -cn --arg outcome "$outcome" --argjson start "$start" --argjson finish "$end" --argjson progress "$last_change" --argjson requests "$sent" \
  --argjson projects "$projects" --argjson snippets "$snippets" --argjson groups "$groups" \
  '{outcome: $outcome, makespanSeconds: ($finish - $start), lastProgressSeconds: ($progress - $start), requests: $requests, left: {projects: $projects, snippets: $snippets, groups: $groups}}'
