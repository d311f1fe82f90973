#!/usr/bin/env bash
# The device check for a TPU host (the one-chip v5e lent to developers; Colab's and Kaggle's
# TPU runtimes; a TPU VM), run from the repository root with the host's own python3 and JAX
# (with libtpu). Nothing is installed here: where the host lacks rich, watchfiles or
# flatbuffers (and for step 5 nbclient, ipykernel), install their wheels with
# `pip install --no-deps --target DIR` and append DIR to PYTHONPATH (after the host's own
# entries: a newer typing_extensions or dateutil ahead of them can break the host's jax). Writes logs under $OUT
# (default ./tpu-out); STEPS picks steps (default all). On a host without an accelerator it says so and exits 0.
#
#   1. which jax and devices;
#   2. `course grade --all --solutions --json`: every lesson's reference passes (lesson 13 says
#      in one sentence where the host refuses loopback TCP); only the worker opens the TPU, every
#      student's process runs jax on the CPU and exports for the worker's platform; one chip is
#      fewer than the meshes need, so meshes are simulated CPUs and the one-device programs
#      (10.merge_partials, 11.top1_dispatch/top2_dispatch) run on the chip; their correct forms
#      within the checks' allowances there (tpu_precision.py) and each catalogued mistake of
#      them failing there with its words (tpu_mistakes.py);
#   3. `course grade --all` of the stubs: every exercise "not started";
#   4. the same from a process that holds the TPU first (a notebook's kernel): from the
#      command line, and through course.notebook.grade in that very process;
#   5. `course watch 2` re-grades on a save; notebooks 01 and 16 run top to bottom in a real
#      kernel (nbclient, ipykernel); the notebooks' setup cell keeps the host's jax and libtpu;
#   6. the chip's figures: lesson 3's roofline (benchmarks/tpu_roofline.py), lesson 16's decode
#      step against its model (benchmarks/tpu_decode.py), the Pallas kernels where the lesson
#      has its benchmark (benchmarks/pallas_tpu.py).
set -uo pipefail
OUT=${OUT:-tpu-out}
STEPS=${STEPS:-2 3 4 5 6} # which of steps 2-6 to run (step 1 always): STEPS="2 3" for a short call
want() { [[ " $STEPS " == *" $1 "* ]]; }
mkdir -p "$OUT"
: >"$OUT/summary.txt"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONWARNINGS="ignore:Transparent hugepages" # libtpu's advice, printed by every process
if ! python3 -c 'import jax, sys; sys.exit(0 if jax.devices()[0].platform == "tpu" else 1)' 2>/dev/null; then
	echo "tpu_check: no TPU here (this check is for a TPU host): nothing to check"
	exit 0
fi
python3 -c 'import jax, sys; print(sys.version.split()[0], "jax", jax.__version__, jax.devices())' 2>&1 | tee "$OUT/versions.txt"

summary() { # a grade's JSON, one line a lesson
	python3 - "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for lesson in doc["lessons"]:
    counts = {}
    for e in lesson["exercises"]:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    odd = [(e["exercise"], e["status"], (e.get("error") or "")[:240]) for e in lesson["exercises"]
           if e["status"] not in ("passed", "not started")]
    print(f"lesson {lesson['lesson']:>2}: {counts} on {lesson.get('devices')}" + (f"  {odd}" if odd else ""))
PY
}

if want 2; then
home=$(mktemp -d)
SECONDS=0
python3 -m course --home "$home" grade --all --solutions --json >"$OUT/solutions.json" 2>"$OUT/solutions.err"
echo "== grade --all --solutions: exit $? in ${SECONDS} s" | tee -a "$OUT/summary.txt"
summary "$OUT/solutions.json" | tee -a "$OUT/summary.txt"
# the one-device programs on the chip: correct forms within the checks' allowances, and
# every catalogued mistake of them failing there with its words
python3 benchmarks/tpu_precision.py 2>&1 | tee "$OUT/precision.txt" | tee -a "$OUT/summary.txt"
python3 benchmarks/tpu_mistakes.py 2>&1 | tee "$OUT/mistakes.txt" | tail -1 | tee -a "$OUT/summary.txt"

fi
if want 3; then
SECONDS=0
python3 -m course --home "$(mktemp -d)" grade --all --json >"$OUT/stubs.json" 2>"$OUT/stubs.err"
echo "== grade --all (the stubs): exit $? in ${SECONDS} s" | tee -a "$OUT/summary.txt"
summary "$OUT/stubs.json" | tee -a "$OUT/summary.txt"

fi
# 4. a process that holds the TPU first, as a notebook's kernel does
if want 4; then
python3 - "$OUT" <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import json, subprocess, sys, tempfile, time
import jax
print("== held: this process holds", jax.devices()[0], flush=True)
t = time.perf_counter()
r = subprocess.run([sys.executable, "-m", "course", "--home", tempfile.mkdtemp(), "grade", "--all",
                    "--solutions", "--json"], capture_output=True, text=True)
doc = json.loads(r.stdout)
bad = [(l["lesson"], e["exercise"], e["status"]) for l in doc["lessons"] for e in l["exercises"]
       if e["status"] != "passed" and l["lesson"] != 13]
print(f"held, command line --all --solutions: exit {r.returncode} in {time.perf_counter() - t:.0f} s;"
      f" devices {doc['lessons'][0]['devices']!r}; not passed but lesson 13: {bad}")
from course import notebook
for n in (1, 10, 16):
    t = time.perf_counter()
    g = notebook.grade(n, solutions=True, home=tempfile.mkdtemp())
    print(f"held, notebook.grade({n}, solutions=True): {'passed' if g.passed else 'NOT PASSED'} in {time.perf_counter() - t:.1f} s", flush=True)
g = notebook.grade(2, home=tempfile.mkdtemp())
print(f"held, notebook.grade(2) of the stubs: passed={g.passed}")
PY

fi
# 5. `course watch` re-grades on a save; notebooks 01 and 16 top to bottom in a real kernel; the
#    notebooks' setup cell, as on a hosted TPU runtime, pins this host's jax, jaxlib and libtpu
if want 5; then
watched=$(mktemp -d)
python3 -m course --home "$watched" grade 2 >/dev/null 2>&1 # the workspace, with the stubs
timeout 90 python3 -m course --home "$watched" watch 2 >"$OUT/watch.txt" 2>&1 &
watcher=$!
for _ in $(seq 60); do grep -q "Score" "$OUT/watch.txt" && break; sleep 1; done
cp solutions/l02_collectives.py "$watched/exercises/l02_collectives.py"
for _ in $(seq 60); do [[ $(grep -c "Score" "$OUT/watch.txt") -ge 2 ]] && break; sleep 1; done
kill $watcher 2>/dev/null
echo "== watch 2: $(grep "Score" "$OUT/watch.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"

python3 - "$OUT" <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import json, os, subprocess, sys, tempfile, time
from pathlib import Path
import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
spec = Path(tempfile.mkdtemp()) / "kernels" / "course"
spec.mkdir(parents=True)
# ipykernel binds its IOPub pipe (output of forked children) to tcp://127.0.0.1 whatever the
# transport; where the host refuses TCP, libzmq aborts the kernel there (measured on the lent
# host, ipykernel 6.31 and 7.4). The kernel below runs without that pipe: the same kernel,
# children's output unforwarded. (On the lent v5e host, ipykernel 7.4: notebooks 01 and 16
# ran top to bottom, 23 s and 14 s, 2026-12-06.)
launch = ("import ipykernel.iostream as io\n"
          "io.IOPubThread._setup_pipe_in = lambda self: setattr(self, '_pipe_flag', False)\n"
          "from ipykernel.kernelapp import launch_new_instance\nlaunch_new_instance()")
(spec / "kernel.json").write_text(json.dumps({"argv": [sys.executable, "-c", launch, "-f", "{connection_file}"], "language": "python", "display_name": "course"}))
os.environ["JUPYTER_PATH"] = str(spec.parents[1])
for name in ("01_meshes", "16_serving"):
    os.environ["COURSE_HOME"] = tempfile.mkdtemp()
    nb = nbformat.read(f"notebooks/{name}.ipynb", as_version=4)
    t = time.perf_counter()
    try:
        # over unix sockets: a host that refuses TCP (the lent one's gVisor) still runs the kernel
        km = KernelManager(kernel_name="course", transport="ipc", ip=str(Path(tempfile.mkdtemp()) / "kernel"))
        NotebookClient(nb, km=km, timeout=600, startup_timeout=300).execute()
        said = "ran top to bottom"
    except Exception as exc:
        said = f"FAILED: {str(exc)[-400:]}"
    texts = [o.get("data", {}).get("text/plain", "") + o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    devices = [line for t_ in texts for line in t_.splitlines() if "devices (" in line or "device (" in line][:1]
    print(f"== notebook {name}: {said} in {time.perf_counter() - t:.0f} s; {devices}")
# the setup cell as on a hosted TPU runtime (Kaggle's variable, the course not importable): what pip is asked
cell = "".join(nbformat.read("notebooks/01_meshes.ipynb", as_version=4).cells[1].source)
wheel = Path(tempfile.mkdtemp()) / "scaling_course-0.1.0-py3-none-any.whl"
wheel.write_text("")
asked = []
def run(argv, *a, **k):
    asked.append(list(argv))
    if "-c" in argv:
        asked.append(Path(argv[argv.index("-c") + 1]).read_text().split())
    return subprocess.CompletedProcess(argv, 0)
import importlib.util
real = importlib.util.find_spec
importlib.util.find_spec = lambda n, *a: None if n == "course" else real(n, *a)
subprocess.run, os.environ["KAGGLE_KERNEL_RUN_TYPE"] = run, "Interactive"
exec(compile(cell.replace('COURSE_PACKAGE = ""', f'COURSE_PACKAGE = "{wheel}"'), "setup-cell", "exec"), {})
print("== setup cell on this TPU host: pip asked", asked)
PY

fi
# 6. the chip's figures
if want 6; then
python3 benchmarks/tpu_roofline.py --json "$OUT/roofline.json" 2>&1 | tee "$OUT/roofline.txt"
python3 benchmarks/tpu_decode.py --json "$OUT/decode.json" 2>&1 | tee "$OUT/decode.txt"
[[ -f benchmarks/pallas_tpu.py ]] && python3 benchmarks/pallas_tpu.py 2>&1 | tee "$OUT/pallas.txt"
fi
exit 0
