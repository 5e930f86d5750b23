#!/bin/bash
# A real single-node Slurm (Debian's slurm-wlm + munge) started in a temporary directory, with its
# own munge key, config, ports and state, runs the batch.sbatch and serve.sbatch that
# `plexus deploy --target slurm` writes; everything is stopped at the end.
# Usage: run_slurm_test.sh PLEXUS   Exit 77: skipped (slurm-wlm or munge not installed).
set -euo pipefail

PLEXUS_BIN=$(realpath "$1")
export PATH="$PATH:/usr/sbin:/sbin"

for tool in munged slurmctld slurmd sbatch srun sinfo squeue scancel python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIPPED: $tool is not installed (scripts/setup.sh installs slurm-wlm and munge)"
    exit 77
  fi
done

started=$(date +%s)
T=$(mktemp -d "${TMPDIR:-/tmp}/plexus-slurm.XXXXXX")
chmod 755 "$T" # munged wants its socket's directories searchable by all
user=$(id -un)
host=$(hostname -s)
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/log" "$T/jobs"
export SLURM_CONF="$T/slurm.conf"
# Nothing of the machine's own Slurm or MPI settings leaks in.
unset SLURM_JOB_ID SLURM_JOBID SBATCH_PARTITION SLURM_PARTITION

log() { echo "[slurm-test $(($(date +%s) - started))s] $*"; }
fail() {
  echo "FAILED: $*" >&2
  exit 1
}

# Stops everything this test started: jobs, slurmd, slurmctld, munged; then any process still
# naming the temporary directory (a job step slurmd left), one pid at a time.
cleanup() {
  local rc=$?
  set +e
  if [ -f "$T/slurmctld.pid" ]; then
    scancel --full --quiet --user="$user" 2>/dev/null
    for _ in $(seq 1 60); do
      [ -z "$(squeue -h 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
  for daemon in slurmd slurmctld; do
    if [ -f "$T/$daemon.pid" ]; then
      pid=$(cat "$T/$daemon.pid")
      kill "$pid" 2>/dev/null
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -9 "$pid" 2>/dev/null
    fi
  done
  if [ -S "$T/munge/munge.socket" ]; then munged --socket="$T/munge/munge.socket" --stop >/dev/null 2>&1; fi
  for pid in $(pgrep -f "$T" 2>/dev/null); do
    [ "$pid" = "$$" ] && continue
    echo "slurm-test: stopping leftover process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" >&2
    kill -9 "$pid" 2>/dev/null
  done
  if [ "$rc" -ne 0 ]; then
    echo "--- logs ($T) ---" >&2
    tail -n 30 "$T"/log/*.log "$T"/munge/munged.log "$T"/jobs/*.out "$T"/jobs/*.err 2>/dev/null >&2
  fi
  if [ -z "${PLEXUS_KEEP_SLURM_TEST:-}" ]; then rm -rf "$T"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- munge: its own key and socket --------------------------------------------------------------
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge/munge.key"
munged --force --socket="$T/munge/munge.socket" --key-file="$T/munge/munge.key" \
  --pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" --seed-file="$T/munge/munged.seed" ||
  fail "munged did not start"

# --- slurm.conf: free ports, every path in the temporary directory -------------------------------
read -r ctld_port slurmd_port serve_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("", 0))
print(*[s.getsockname()[1] for s in socks])')
# Enough CPUs for 2 tasks of the --cpus-per-task that deploy picks (at most the machine's cores)
# even on a small machine (config_overrides: Slurm takes the config's numbers over the hardware's).
cpus=$((2 * $(nproc)))
[ "$cpus" -lt 4 ] && cpus=4
# The node's memory as Slurm counts it (MB), a consumable resource (CR_Core_Memory), so the
# scripts' --mem is checked against it and allocated as on a cluster.
mem_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
cat >"$SLURM_CONF" <<EOF
ClusterName=plexustest
SlurmctldHost=$host
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.socket
CredType=cred/munge
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=plexustest Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
for i in $(seq 1 120); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
  [ "$state" = "idle" ] && break
  [ "$i" -eq 120 ] && fail "the node is not idle after 60 s (sinfo: '$state')"
  sleep 0.5
done
log "slurm is up: node $host idle, slurmctld port $ctld_port, slurmd port $slurmd_port"

mpi_list=$(srun --mpi=list 2>&1)
if grep -qw pmix <<<"$mpi_list"; then expected_launcher="srun --mpi=pmix"; else expected_launcher="mpirun"; fi
log "srun --mpi=list: $(tr '\n\t' '  ' <<<"$mpi_list")-> expect launcher: $expected_launcher"

# --- the model, requests, the generated scripts ---------------------------------------------------
# The tiny random model with a real tokenizer (serve needs one; batch reads ids and writes text too).
tokenizer="$(dirname "$(realpath "$0")")/../../data/golden/tokenizers/mistral"
model="$T/tiny-test"
app=plexus-tiny-test # plexus deploy names the job and its logs after the model's directory
"$PLEXUS_BIN" make-model "$model" --tokenizer "$tokenizer" >/dev/null 2>&1 || fail "make-model"
# Requests as token ids; N requests, max_tokens from LO to LO+7.
write_requests() { # FILE N LO
  python3 - "$@" <<'EOF'
import json, random, sys
path, n, lo = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(n)
with open(path, "w") as f:
    for i in range(n):
        ids = [rng.randrange(1, 32000) for _ in range(2 + i % 6)]
        f.write(json.dumps({"id": f"q{i}", "ids": ids, "max_tokens": lo + i % 8}) + "\n")
EOF
}
# Compares two outputs by id (every id once in each; replica and latency_ms ignored).
compare_outputs() { # GOT WANT N
  python3 - "$@" <<'EOF'
import json, sys
def load(path):
    out = {}
    for line in open(path):
        if not line.strip(): continue
        j = json.loads(line)
        if "plexus_batch" in j: continue
        key = json.dumps(j["id"])
        if key in out: sys.exit(f"{path}: id {key} written twice")
        j.pop("replica", None); j.pop("latency_ms", None)
        out[key] = j
    return out
got, want, n = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
if len(want) != n: sys.exit(f"{sys.argv[2]}: {len(want)} results, expected {n}")
if got.keys() != want.keys():
    sys.exit(f"{sys.argv[1]}: ids differ: missing {sorted(want.keys() - got.keys())[:5]}, extra {sorted(got.keys() - want.keys())[:5]}")
bad = [k for k in want if got[k] != want[k]]
if bad: sys.exit(f"{sys.argv[1]}: {len(bad)} results differ from the direct run, e.g. {got[bad[0]]} vs {want[bad[0]]}")
print(f"{n} results equal the direct run")
EOF
}
result_lines() { if [ -f "$1" ]; then grep -c '"id"' "$1" || true; else echo 0; fi; }

"$PLEXUS_BIN" deploy "$model" --target slurm --out "$T/deploy" --port "$serve_port" --env PLEXUS_SLURM_TEST=1 \
  >"$T/deploy.log" 2>&1 || fail "plexus deploy --target slurm: $(cat "$T/deploy.log")"
bash -n "$T/deploy/batch.sbatch" || fail "bash -n batch.sbatch"
bash -n "$T/deploy/serve.sbatch" || fail "bash -n serve.sbatch"
grep -q -- '--ntasks=2$' "$T/deploy/batch.sbatch" || fail "batch.sbatch does not ask for 2 tasks"
for script in batch serve; do
  grep -Eq -- '^#SBATCH --mem=[0-9]+G$' "$T/deploy/$script.sbatch" || fail "$script.sbatch asks for no --mem"
done
# The direct runs take the plan's flags from the script's plexus batch line.
plan_flags=$(sed -n 's/.*--output "$output" \(.*\) "$@"$/\1/p' "$T/deploy/batch.sbatch")
[ -n "$plan_flags" ] || fail "no plexus batch line in batch.sbatch"
eval "plan=($plan_flags)"
log "plexus deploy wrote batch.sbatch and serve.sbatch; plan flags: ${plan[*]}"
cd "$T/jobs"
export PLEXUS="$PLEXUS_BIN"

# --- 1: a small job on 2 tasks (rank 0 + one replica) equals a direct run -------------------------
write_requests "$T/small.jsonl" 20 4
"$PLEXUS_BIN" batch "$model" --input "$T/small.jsonl" --output "$T/small.direct.jsonl" "${plan[@]}" \
  2>/dev/null || fail "the direct run of the small job"
sbatch --wait --parsable "$T/deploy/batch.sbatch" "$T/small.jsonl" "$T/small.out.jsonl" >"$T/job1.id" ||
  fail "job $(cat "$T/job1.id") (batch.sbatch on 20 requests) did not complete"
job=$(cat "$T/job1.id")
grep -q "launcher: $expected_launcher" "$app-batch-$job.out" ||
  fail "job $job did not use $expected_launcher: $(cat "$app-batch-$job.out")"
grep -q "2 tasks" "$app-batch-$job.out" || fail "job $job did not run 2 tasks"
compare_outputs "$T/small.out.jsonl" "$T/small.direct.jsonl" 20 || fail "job $job's results"
log "test 1 passed: job $job (2 tasks, $expected_launcher) gave the direct run's 20 results"

# --- 2: a longer job cancelled in mid-run and submitted again resumes without loss ---------------
n_long=300
write_requests "$T/long.jsonl" "$n_long" 64
"$PLEXUS_BIN" batch "$model" --input "$T/long.jsonl" --output "$T/long.direct.jsonl" "${plan[@]}" \
  --batch-size 1 2>/dev/null || fail "the direct run of the long job"
job=$(sbatch --parsable "$T/deploy/batch.sbatch" "$T/long.jsonl" "$T/long.out.jsonl" --batch-size 1)
for i in $(seq 1 1200); do
  done_lines=$(result_lines "$T/long.out.jsonl")
  [ "$done_lines" -ge 10 ] && break
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && fail "job $job ended before it wrote 10 results"
  [ "$i" -eq 1200 ] && fail "job $job wrote no 10 results in 120 s"
  sleep 0.1
done
scancel "$job"
for _ in $(seq 1 100); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 0.2
done
[ -z "$(squeue -h -j "$job" 2>/dev/null)" ] || fail "job $job is still there 20 s after scancel"
partial=$(result_lines "$T/long.out.jsonl")
[ "$partial" -lt "$n_long" ] || fail "job $job finished all $n_long requests before scancel: make the job longer"
log "job $job cancelled with $partial of $n_long results written"
sbatch --wait --parsable "$T/deploy/batch.sbatch" "$T/long.jsonl" "$T/long.out.jsonl" --batch-size 1 >"$T/job2.id" ||
  fail "the resubmitted job $(cat "$T/job2.id") did not complete"
job2=$(cat "$T/job2.id")
grep -q "[1-9][0-9]* resumed" "$app-batch-$job2.err" ||
  fail "job $job2 resumed nothing: $(cat "$app-batch-$job2.err")"
compare_outputs "$T/long.out.jsonl" "$T/long.direct.jsonl" "$n_long" || fail "the resumed job's results"
log "test 2 passed: job $job cancelled after $partial results, job $job2 resumed: all $n_long, each once, equal the direct run"

# --- 2b: the same job requeued in mid-run (scontrol requeue: what Slurm does after a node failure
# or preemption, since batch.sbatch is --requeue) restarts as the same job and resumes ------------
job=$(sbatch --parsable "$T/deploy/batch.sbatch" "$T/long.jsonl" "$T/requeue.out.jsonl" --batch-size 1)
for i in $(seq 1 1200); do
  [ "$(result_lines "$T/requeue.out.jsonl")" -ge 10 ] && break
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && fail "job $job ended before it wrote 10 results"
  [ "$i" -eq 1200 ] && fail "job $job wrote no 10 results in 120 s"
  sleep 0.1
done
scontrol requeue "$job" || fail "scontrol requeue $job"
partial=$(result_lines "$T/requeue.out.jsonl")
# Slurm holds a requeued job back until a begin time in the future: start it now.
for i in $(seq 1 300); do
  state=$(squeue -h -j "$job" -o "%T %r" 2>/dev/null || true)
  if [[ "$state" == PENDING* ]]; then
    log "job $job requeued: $state"
    scontrol update JobId="$job" StartTime=now || fail "scontrol update JobId=$job StartTime=now"
    break
  fi
  [ "$i" -eq 300 ] && fail "the requeued job $job is not pending after 30 s: '$state'"
  sleep 0.1
done
for i in $(seq 1 3000); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  [ "$i" -eq 3000 ] && fail "the requeued job $job did not end in 300 s: $(squeue -j "$job")"
  sleep 0.1
done
[ "$(grep -c "launcher:" "$app-batch-$job.out")" -eq 2 ] ||
  fail "job $job's log does not hold both runs (--open-mode=append): $(cat "$app-batch-$job.out")"
grep -q "(restart 1)" "$app-batch-$job.out" || fail "job $job was not restarted: $(cat "$app-batch-$job.out")"
compare_outputs "$T/requeue.out.jsonl" "$T/long.direct.jsonl" "$n_long" || fail "the requeued job's results"
log "test 2b passed: job $job requeued after about $partial results restarted, resumed, and its log holds both runs"

# --- 3: the fallback launcher (Open MPI's mpirun inside the allocation) ---------------------------
if command -v mpirun >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
  PLEXUS_SLURM_MPI=mpirun sbatch --wait --parsable "$T/deploy/batch.sbatch" "$T/small.jsonl" "$T/small.mpirun.jsonl" \
    >"$T/job3.id" || fail "job $(cat "$T/job3.id") (PLEXUS_SLURM_MPI=mpirun) did not complete"
  job=$(cat "$T/job3.id")
  grep -q "launcher: mpirun" "$app-batch-$job.out" || fail "job $job did not use mpirun"
  compare_outputs "$T/small.mpirun.jsonl" "$T/small.direct.jsonl" 20 || fail "job $job's results (mpirun)"
  log "test 3 passed: job $job (mpirun inside the allocation) gave the direct run's 20 results"
fi

# --- 4: serve.sbatch: the server answers at the URL its log names, until scancel ------------------
if command -v curl >/dev/null 2>&1; then
  job=$(sbatch --parsable "$T/deploy/serve.sbatch")
  url=
  for i in $(seq 1 600); do
    url=$(grep -o 'http://[^ ]*' "$app-serve-$job.out" 2>/dev/null | head -n 1 || true)
    if [ -n "$url" ] && curl -fsS "$url/health" >/dev/null 2>&1; then break; fi
    [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && fail "the server job $job ended: $(cat "$app-serve-$job.out")"
    [ "$i" -eq 600 ] && fail "the server job $job did not answer on '$url/health' in 60 s"
    sleep 0.1
  done
  [ "$url" = "http://$(hostname):$serve_port" ] || fail "job $job's log names $url, not http://$(hostname):$serve_port"
  curl -fsS "$url/v1/models" | grep -q '"tiny-test"' || fail "$url/v1/models does not list tiny-test"
  scancel "$job"
  log "test 4 passed: serve.sbatch job $job answered at $url (/health, /v1/models)"
fi

log "all passed"
