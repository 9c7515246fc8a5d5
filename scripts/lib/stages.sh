# Sourced by the GPU campaign scripts (gpu-validate.sh, gpu-database.sh): stages with their own
# time budgets inside a total, logged to one file. The caller sets, before sourcing:
#   LOG            the log file every stage's output goes to
#   TOTAL_BUDGET   seconds for the whole campaign
#   STAGES         the optional stages to run ("3 4 5"), for `wants`
#   STAGE_MARGIN_S seconds kept back from the total for the summary (default 15); a stage is
#                  killed that many seconds, at most 10, after its budget if it ignores SIGTERM
# and reads FAILED (what did not finish, with why) and DONE (how many did) at the end.
START=$(date +%s)
FAILED=()
DONE=0
STAGE_MARGIN_S="${STAGE_MARGIN_S:-15}"
wants() { case " $STAGES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
say() { echo "$*" | tee -a "$LOG"; }
elapsed() { echo $(( $(date +%s) - START )); }
# run_stage NAME BUDGET_S COMMAND...: runs with a deadline of min(budget, what is left of the
# total); the command sees its budget as $STAGE_BUDGET.
run_stage() {
  local name="$1" budget="$2"; shift 2
  local left=$(( TOTAL_BUDGET - $(elapsed) - STAGE_MARGIN_S ))
  local kill_after=$(( STAGE_MARGIN_S < 10 ? STAGE_MARGIN_S : 10 ))
  if [ "$left" -le 5 ]; then
    say "[$(elapsed)s] $name: SKIPPED, the ${TOTAL_BUDGET}s budget is spent"
    FAILED+=("$name (no time left)")
    return 1
  fi
  [ "$budget" -gt "$left" ] && budget=$left
  say "[$(elapsed)s] $name: budget ${budget}s"
  local t0 rc=0
  t0=$(date +%s)
  STAGE_BUDGET="$budget" timeout --kill-after="$kill_after" "$budget" "$@" >> "$LOG" 2>&1 || rc=$?
  local took=$(( $(date +%s) - t0 ))
  if [ "$rc" = 0 ]; then
    say "[$(elapsed)s] $name: done in ${took}s"
    DONE=$((DONE + 1))
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    say "[$(elapsed)s] $name: STOPPED at its ${budget}s budget (output so far is kept)"
    FAILED+=("$name (timeout ${budget}s)")
  else
    say "[$(elapsed)s] $name: FAILED (exit $rc; see $(basename "$LOG"))"
    FAILED+=("$name (exit $rc)")
  fi
  return "$rc"
}
