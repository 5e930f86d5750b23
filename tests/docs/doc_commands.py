#!/usr/bin/env python3
"""Runs every command the README and docs/*.md print, as printed, the way a newcomer would.

The rule (docs/architecture.md, "Commands in the docs"):
- Commands live in fenced blocks tagged ```sh (or ```bash), except a block starting with `#!`
  (a script's contents, e.g. one plexus deploy writes). Every other block is text: output,
  schemas, synopses (tag those ```text). An untagged block whose lines start like a command
  (plexus, mpirun, curl, scripts/, ...) is an error here: tag it sh or text.
- In a sh block, a command is a line, with lines ending in `\\`, `|` or `&&` joined to the next.
  Comment lines are skipped. `cd DIR` and `NAME=value` lines carry over to the later commands of
  the same document.
- `needs: WHAT` in the comment beside a command (`# needs: gpu (why)`, `# what it does; needs:
  gpu`), or in a comment line of its own (then for every later command of the block), marks what
  it needs that this machine may not have: the command is skipped and the reason reported. WHAT
  is one of NEEDS below.
- A command ending in `&` is a server: it is started, the next commands run while it serves (a
  `--port N` one must answer GET /health with 200 first), and it is stopped with SIGTERM (it must
  exit 0) at the end of its document, or before another server of the document takes its port.
- Every other command must exit 0 within --timeout seconds.
- The documents run in order (README.md, docs/*.md by name, examples/README.md) in one scratch
  copy of what a clone holds (git's tracked and not-ignored files) after `make run`
  (scripts/demo.sh): a document may use what the README's commands made (models/small,
  models/tiny). `plexus` is the built binary (first on PATH, and build/plexus; build/golden is the
  build's); HOME is a scratch folder (plexus calibrate writes there). As root, OpenMPI is allowed
  to run as root and to oversubscribe (through its environment variables), so the mpirun examples
  run as printed; the docs say beside each which flags that takes by hand.

usage: doc_commands.py --source DIR --plexus BIN --golden DIR --work DIR [--timeout S] [DOC ...]
Exit 0: every command that ran succeeded; 1: one failed (its output is printed); 2: bad docs
(an unknown need, an untagged command block).
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

NEEDS = {
    "gpu": "an NVIDIA GPU (and a CUDA build)",
    "cluster": "several machines (mpirun --host, Slurm)",
    "docker": "Docker",
    "kubernetes": "a Kubernetes cluster (kubectl)",
    "network": "the internet (downloads)",
    "build": "the full build (make build: test and benchmark binaries), beyond make run's plexus",
    "long": "minutes to hours (benchmarks, fuzzing)",
}

# Lines that look like commands: an untagged block holding one must be tagged sh or text.
COMMAND_START = re.compile(r"^((build/)?plexus [a-z][a-z-]*( |$)|(mpirun|srun|curl|make|cmake|ctest|node|python3|docker|"
                           r"kubectl|echo) |(scripts|benchmarks)/\S)")
NEEDS_MARK = re.compile(r"\bneeds:\s*([a-z]+)")


class DocError(Exception):
    pass


class Command:
    def __init__(self, doc, line, text, needs):
        self.doc, self.line, self.text, self.needs = doc, line, text, needs

    def where(self):
        return f"{self.doc}:{self.line}"


def strip_comment(text):
    """The command without a trailing shell comment (a # outside quotes after a blank)."""
    quote = None
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"':
                continue
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def extract(doc_path, rel):
    """The commands of one document, and the problems of its untagged blocks."""
    commands, problems = [], []
    lines = open(doc_path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^\s*```\s*([\w+-]*)", lines[i])
        if not m:
            i += 1
            continue
        info, start = m.group(1), i
        i += 1
        body = []
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append((i + 1, lines[i]))
            i += 1
        i += 1
        if info in ("sh", "bash") and not (body and body[0][1].startswith("#!")):
            commands += block_commands(rel, body)
        elif info == "":
            for n, text in body:
                if COMMAND_START.match(text.strip()):
                    problems.append(f"{rel}:{n}: a command in an untagged block (line {start + 1}): "
                                    "tag the block ```sh (run by this test) or ```text")
    return commands, problems


def block_commands(rel, body):
    out, block_needs = [], None
    pending, first = "", None
    for n, raw in body:
        text = raw.strip()
        if not pending and (not text or text.startswith("#")):
            m = NEEDS_MARK.search(text)
            if m:
                block_needs = m.group(1)
            continue
        if first is None:
            first = n
        code = strip_comment(text)
        if code.endswith("\\"):
            pending += code[:-1] + " "
            continue
        if code.endswith("|") or code.endswith("&&"):
            pending += code + " "
            continue
        full = pending + text
        m = NEEDS_MARK.search(full[len(strip_comment(full)):])  # in the trailing comment
        out.append(Command(rel, first, full, m.group(1) if m else block_needs))
        pending, first = "", None
    if pending:
        raise DocError(f"{rel}:{first}: the block ends inside a continued command")
    return out


def clone(source, dest):
    """What a clone holds: git's tracked and not-ignored files (the whole tree without build*/
    outside git)."""
    try:
        files = subprocess.run(["git", "-C", source, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                               check=True, capture_output=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk(source):
            dirs[:] = [d for d in dirs if not (d.startswith("build") or d.startswith("."))]
            files += [os.path.relpath(os.path.join(root, f), source) for f in names]
    for f in files:
        src = os.path.join(source, f)
        if not f or not os.path.isfile(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, f))


class Runner:
    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.work)
        self.repo = os.path.join(self.work, "plexus")
        self.log_dir = os.path.join(self.work, "logs")
        self.env = dict(os.environ)
        self.servers = []
        self.count = 0
        self.skipped = {}

    def setup(self):
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.log_dir)
        clone(self.args.source, self.repo)
        build = os.path.join(self.repo, "build")
        os.makedirs(build, exist_ok=True)
        os.symlink(os.path.abspath(self.args.plexus), os.path.join(build, "plexus"))
        os.symlink(os.path.abspath(self.args.golden), os.path.join(build, "golden"))
        bin_dir = os.path.join(self.work, "bin")
        os.makedirs(bin_dir)
        os.symlink(os.path.abspath(self.args.plexus), os.path.join(bin_dir, "plexus"))
        home = os.path.join(self.work, "home")
        os.makedirs(home)
        self.env.update(PATH=bin_dir + os.pathsep + self.env.get("PATH", ""), HOME=home,
                        XDG_CACHE_HOME=os.path.join(home, ".cache"))
        self.env.pop("PLEXUS_VIRTUAL_DEVICES", None)
        if os.geteuid() == 0:
            self.env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                            OMPI_MCA_rmaps_base_oversubscribe="1")
        started = time.monotonic()
        rc, out = self.shell("bash scripts/demo.sh build/plexus", self.repo, "make-run")
        if rc != 0:
            raise RuntimeError(f"make run (scripts/demo.sh) exited {rc}:\n{tail(out)}")
        print(f"make run's outputs: {time.monotonic() - started:.1f} s", flush=True)

    def shell(self, command, cwd, name, timeout=None):
        log = os.path.join(self.log_dir, f"{self.count:03d}-{name}.log")
        with open(log, "w") as f:
            p = subprocess.Popen(["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=self.env, stdout=f,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                rc = p.wait(timeout or self.args.timeout)
            except subprocess.TimeoutExpired:
                rc = "timeout"
            finally:
                kill_group(p)  # whatever the command left running (its own process group)
        return rc, open(log, errors="replace").read()

    def run_doc(self, rel, commands):
        cwd, assigned = self.repo, []
        failures = []
        for c in commands:
            self.count += 1
            if c.needs:
                self.skipped.setdefault(c.needs, []).append(c)
                print(f"  skip {c.where()} (needs {c.needs}): {short(c.text)}", flush=True)
                continue
            code = strip_comment(c.text)
            if re.fullmatch(r"cd\s+\S+", code):
                cwd = os.path.normpath(os.path.join(cwd, code.split(None, 1)[1]))
                print(f"  cd   {c.where()}: {os.path.relpath(cwd, self.repo)}", flush=True)
                continue
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S.*", code) and " " not in code.split("=", 1)[0]:
                assigned.append(code)
                continue
            prefix = "".join(a + "\n" for a in assigned)
            if code.endswith("&") and not code.endswith("&&"):
                failure = self.start_server(c, prefix + code[:-1], cwd)
            else:
                started = time.monotonic()
                rc, out = self.shell(prefix + code, cwd, safe_name(c))
                seconds = time.monotonic() - started
                status = "ok" if rc == 0 else f"FAILED (exit {rc})"
                print(f"  {status:4} {c.where()} {seconds:6.1f} s: {short(c.text)}", flush=True)
                failure = None if rc == 0 else f"{c.where()}: exit {rc}: {c.text}\n{tail(out)}"
            if failure:
                failures.append(failure)
        failures += self.stop_servers()
        return failures

    def start_server(self, c, code, cwd):
        port = re.search(r"--port[ =](\d+)", code)
        port = int(port.group(1)) if port else None
        failures = self.stop_servers(port) if port else []
        if failures:
            return "\n".join(failures)
        log = os.path.join(self.log_dir, f"{self.count:03d}-{safe_name(c)}.log")
        f = open(log, "w")
        # exec: the server is the process (its own exit status), in its own process group.
        prefix, _, last = code.rpartition("\n")
        p = subprocess.Popen(["bash", "-c", prefix + "\nexec " + last.strip()], cwd=cwd,
                             env=self.env, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        self.servers.append((c, p, log, port))
        deadline = time.monotonic() + self.args.timeout
        while port and time.monotonic() < deadline and p.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.2)
        if p.poll() is not None:
            return f"{c.where()}: the server exited {p.returncode} at start: {c.text}\n{tail(open(log).read())}"
        if port and time.monotonic() >= deadline:
            return f"{c.where()}: the server did not answer /health on port {port} in {self.args.timeout} s"
        print(f"  serving {c.where()}: {short(c.text)}", flush=True)
        return None

    def stop_servers(self, port=None):
        """Stops the servers (those on `port` only, when given); their failures."""
        failures, kept = [], []
        for c, p, log, on in self.servers:
            if port is not None and on != port:
                kept.append((c, p, log, on))
                continue
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    kill_group(p)
                    failures.append(f"{c.where()}: the server did not stop within 60 s of SIGTERM")
                    continue
            if p.returncode != 0:
                failures.append(f"{c.where()}: the server exited {p.returncode}: {c.text}\n{tail(open(log).read())}")
            else:
                print(f"  stopped {c.where()} (exit 0)", flush=True)
        self.servers = kept
        return failures


def kill_group(p):
    """SIGKILL to what is left of p's process group (p started a session of its own)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def short(text, n=110):
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 3] + "..."


def tail(text, n=30):
    return "\n".join("    " + line for line in text.rstrip().split("\n")[-n:])


def safe_name(c):
    return re.sub(r"[^A-Za-z0-9]+", "-", f"{c.doc}-{c.line}").strip("-")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, help="the repository (its git files are copied)")
    ap.add_argument("--plexus", required=True, help="the built plexus binary")
    ap.add_argument("--golden", required=True, help="the build's golden folder (build/golden)")
    ap.add_argument("--work", required=True, help="scratch folder (emptied first)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds one command may take")
    ap.add_argument("--list", action="store_true", help="print the commands and their needs, run nothing")
    ap.add_argument("docs", nargs="*", help="documents to run (default: README.md, docs/*.md, examples/README.md)")
    args = ap.parse_args()
    source = os.path.abspath(args.source)
    docs = args.docs or [d for d in ["README.md"] + sorted("docs/" + f for f in os.listdir(os.path.join(source, "docs"))
                                                           if f.endswith(".md")) + ["examples/README.md"]
                         if os.path.isfile(os.path.join(source, d))]
    plan, problems = [], []
    try:
        for rel in docs:
            commands, bad = extract(os.path.join(source, rel), rel)
            problems += bad
            problems += [f"{c.where()}: unknown need '{c.needs}' (known: {', '.join(NEEDS)})"
                         for c in commands if c.needs and c.needs not in NEEDS]
            plan.append((rel, commands))
    except DocError as e:
        problems.append(str(e))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if args.list:
        for rel, commands in plan:
            for c in commands:
                print(f"{c.where()}\t{c.needs or 'run'}\t{short(c.text, 200)}")
        return 0
    runner = Runner(args)
    started = time.monotonic()
    # ctest's timeout sends SIGTERM: stop what runs (finally clauses) rather than leave it running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    failures = []
    try:
        runner.setup()
        for rel, commands in plan:
            if commands:
                print(f"{rel}: {len(commands)} commands", flush=True)
                failures += runner.run_doc(rel, commands)
    finally:
        runner.stop_servers()
    ran = runner.count - sum(len(v) for v in runner.skipped.values())
    print(f"\n{ran} commands ran in {time.monotonic() - started:.0f} s (with make run's outputs); "
          f"{len(failures)} failed")
    for need, cs in sorted(runner.skipped.items()):
        print(f"skipped {len(cs)}, needing {NEEDS[need]}: " + ", ".join(c.where() for c in cs))
    if failures:
        print(f"\nFAILED (the scratch copy stays in {runner.repo}, every command's output in {runner.log_dir}):\n" +
              "\n\n".join(failures), file=sys.stderr)
        return 1
    shutil.rmtree(runner.repo, ignore_errors=True)  # models of a GiB or so; the logs stay
    return 0


if __name__ == "__main__":
    sys.exit(main())
