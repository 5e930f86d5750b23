#!/usr/bin/env python3
"""Hostile strings through the real `plexus deploy` and the real validators (issue 32, item 11).

Each string (bytes: newlines, U+2028, U+0085, DEL, C0/C1 controls, quotes, $(...), backticks,
${}, #, ---, leading - * & ! % @, long strings, invalid UTF-8) is the model directory's name (and
its parent's), an --env value and the GPU names of the inventory, deployed for docker, compose,
kubernetes and slurm. Then:
  - deploy exits 0, or 2 naming MODEL/--env for invalid UTF-8 and MODEL for a ':' under docker and
    compose (the only refusals allowed);
  - every file is UTF-8 without raw controls, C1, U+2028/U+2029 (printable text);
  - run.sh, serve.sbatch, batch.sbatch pass `bash -n` and run under real bash with docker, srun,
    mpirun, hostname replaced by stubs recording argv and $FUZZ: the strings arrive exactly, and
    nothing else runs (the scratch directory stays empty);
  - compose.yaml and the manifests read back with PyYAML (YAML 1.1, as docker-compose reads them)
    to exactly the strings and the expected top-level keys; `docker-compose config` accepts each
    compose.yaml and keeps the --env value;
  - every Dockerfile passes lint_dockerfile.mjs (dockerfile-utils) and its CMD, read as JSON, holds
    the name; every manifest passes validate_k8s.mjs (Kubernetes OpenAPI schemas).
--image: each string exits 2 naming --image unless it is an image reference by the grammar (an
independent regular expression below), and random valid references round-trip. Other string flags
(--strategy, --dtype, --quantize, --api-type, --target) exit 2 naming the flag; --out DIR with the
string as DIR's name writes there.

usage: hostile_strings.py PLEXUS VALIDATORS_DIR DATA_DIR (--reproducers | --random N --seed S)
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

PLEXUS, VALIDATORS, DATA = sys.argv[1], sys.argv[2], sys.argv[3]
MODE = sys.argv[4]
MODEL = os.path.join(DATA, "llama-8b-config")
# The same model with its weights' index (metadata.total_size): vLLM is sized from the weights.
HUB_MODEL = os.path.join(DATA, "llama-8b-hub")
INVENTORY = os.path.join(DATA, "h100x2.json")
TARGETS = ["docker", "compose", "kubernetes", "slurm"]
K8S_KEYS = {"apiVersion", "kind", "metadata", "spec"}
# What a generated file must not hold raw: C0 controls but \n, DEL, C1, U+2028, U+2029.
UNPRINTABLE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")

# The reference grammar (distribution/reference), written as one expression.
_ALNUM = r"[a-z0-9]+"
_SEP = r"(?:[._]|__|-+)"
_PATH = _ALNUM + "(?:" + _SEP + _ALNUM + ")*"
_DCOMP = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = r"(?:" + _DCOMP + r"(?:\." + _DCOMP + r")*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_NAME = "(?:" + _DOMAIN + "/)?" + _PATH + "(?:/" + _PATH + ")*"
_REFERENCE = re.compile(
    "(" + _NAME + r")(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?",
    re.ASCII)

failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what, flush=True)


def show(b):
    return repr(b)[:120]


def is_reference(s):
    try:
        text = s.decode("ascii")
    except UnicodeDecodeError:
        return False
    m = _REFERENCE.fullmatch(text)
    return bool(m) and len(m.group(1)) <= 255


def utf8(b):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


REPRODUCERS = [
    b"m\ntouch injected\n", b"m\ntouch injected", b"\nRUN touch injected\n", b"m\r\nkind: Injected",
    "m\u2028kind: Injected".encode(), "m\u2029x".encode(), "m\u0085kind: Injected".encode(), b"x\x7fy",
    b"\x01\x02\x1b[31m\x1f", "\u009b31m\u0080\u009f".encode(), b"tab\there", "\ufeffbom\ufffe".encode(),
    b"'", b"\"", b"it's \"q\" \\", b"$(touch injected)", b"`touch injected`", b"${HOME}", b"$HOME", b"$$",
    b"#", b"# x", b"a #b", b"---", b"--- x", b"...", b"- x", b"-rf", b"--help", b"* x", b"&a", b"!x", b"%x", b"@x",
    b"? x", b": x", b"key: value", b"|", b">", b"{a: b}", b"[a]", b"yes", b"null", b"~", b"08", b"0x1f", b"1e3",
    b" lead", b"trail ", b"\\", b"a\\", b"x:y", "é✓🙂".encode(), b"a" * 200, "é".encode() * 100, b"\xff\xfe",
    b"m\xc0\x80", b"\xed\xa0\x80",
]

# Also given to --strategy, --dtype, --quantize, --api-type, --target and as --out's name.
FLAG_REPRODUCERS = [b"m\ntouch injected\n", "m\u2028kind: Injected".encode(), b"x\x7fy", b"$(touch injected)", b"--help",
                    b"-rf", b"\xff\xfe", b"a" * 200]

IMAGE_REPRODUCERS = [
    b"my model", b"img\nRUN touch injected", b"img\n", "img\u2028".encode(), b"Upper", b"team/Model", b"a:b:c", b"-x",
    b"$(x)", b"a//b", b"x:" + b"t" * 129, b"x@sha256:abc", b"plexus", b"registry.example.com:5000/team/plexus:1.0-rc_1",
    b"localhost/a__b/c.d/e-f", b"[::1]:5000/x@sha256:" + b"a" * 64, b"UPPER.example.com/x:Tag", b"a" * 256,
]

HOSTILE_PIECES = [
    "\n", "\r", "\r\n", "\t", "\x01", "\x1b", "\x7f", "\x85", "\x9b", "\u2028", "\u2029", "\ufeff", "'", "\"", "`", "$",
    "$(", "${", "#", " #", "---", "...", "- ", ": ", "*", "&", "!", "%", "@", "?", "|", ">", "{", "}", "[", "]", "\\",
    ",", ";", "<", "(", ")", "=", "~", " ", "é", "✓", "🙂", "ü", "\u00a0", "yes", "null", "0x", "1e", "'\\''",
]
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-."


def random_string(rng):
    parts = []
    for _ in range(rng.randint(1, 12)):
        r = rng.random()
        if r < 0.45:
            parts.append(rng.choice(HOSTILE_PIECES))
        elif r < 0.85:
            parts.append("".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 6))))
        else:
            parts.append(chr(rng.choice([rng.randint(1, 0x7f), rng.randint(0x80, 0x2fff), rng.randint(0x1f000, 0x1faff)])))
    b = "".join(parts).encode("utf-8", "surrogatepass")
    if rng.random() < 0.05:
        b += bytes([rng.choice([0x80, 0xc0, 0xfe, 0xff])])  # invalid UTF-8
    if rng.random() < 0.05:
        b = b * rng.randint(10, 40)
    return b.replace(b"\x00", b"0")


def random_reference(rng):
    def comp():
        out = "".join(rng.choice("abcz09") for _ in range(rng.randint(1, 4)))
        for _ in range(rng.randint(0, 2)):
            out += rng.choice([".", "_", "__", "-", "---"]) + "".join(rng.choice("abz19") for _ in range(rng.randint(1, 3)))
        return out
    ref = ""
    if rng.random() < 0.5:
        ref += rng.choice(["localhost", "registry.example.com", "R1.io", "[::1]"]) + (":5000" if rng.random() < 0.4 else "") + "/"
    ref += "/".join(comp() for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.6:
        ref += ":" + rng.choice(["latest", "1.0", "v_2-rc.1", "_x", "A" * 128])
    if rng.random() < 0.3:
        ref += "@sha256:" + "".join(rng.choice("0123456789abcdef") for _ in range(64))
    return ref.encode()


def run(args, **kw):
    return subprocess.run(args, capture_output=True, **kw)


def plexus(args):
    return run([PLEXUS, "deploy"] + args, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))


class Work:
    def __init__(self, root):
        self.root = root
        self.bin = os.path.join(root, "bin")
        self.stub_out = os.path.join(root, "stub-out")
        os.makedirs(self.bin)
        os.makedirs(self.stub_out)
        for tool in ("docker", "srun", "mpirun"):
            with open(os.path.join(self.bin, tool), "w") as f:
                f.write("#!/bin/bash\nprintf '%%s\\0' \"$@\" > \"$STUB_OUT/%s.argv\"\nprintf '%%s' \"${FUZZ-}\" > \"$STUB_OUT/%s.env\"\n"
                        % (tool, tool))
        with open(os.path.join(self.bin, "hostname"), "w") as f:
            f.write("#!/bin/sh\necho node1\n")
        for tool in os.listdir(self.bin):
            os.chmod(os.path.join(self.bin, tool), 0o755)
        self.dockerfiles, self.k8s_dirs, self.count = [], [], 0

    def next_dir(self, what):
        self.count += 1
        d = os.path.join(self.root, "%s-%d" % (what, self.count))
        os.makedirs(d)
        return d

    def run_script(self, script, args=()):
        """Runs SCRIPT under bash in an empty directory with the stubs first on PATH; argv and
        $FUZZ of each stub that ran, and whatever else appeared in the directory."""
        for f in os.listdir(self.stub_out):
            os.remove(os.path.join(self.stub_out, f))
        cwd = tempfile.mkdtemp(dir=self.root, prefix="run-")
        env = dict(os.environ, PATH=self.bin + ":" + os.environ["PATH"], STUB_OUT=self.stub_out, SLURM_NTASKS="3")
        r = run(["bash", script] + list(args), cwd=cwd, env=env)
        stubs = {}
        for f in os.listdir(self.stub_out):
            with open(os.path.join(self.stub_out, f), "rb") as fh:
                data = fh.read()
            tool, kind = f.split(".")
            stubs.setdefault(tool, {})[kind] = data.split(b"\0")[:-1] if kind == "argv" else data
        left = os.listdir(cwd)
        shutil.rmtree(cwd)
        return r, stubs, left


def has_pair(argv, flag, value):
    for i, a in enumerate(argv):
        if a == flag + b"=" + value or (a == flag and i + 1 < len(argv) and argv[i + 1] == value):
            return True
    return False


def check_files(out, label):
    ok = True
    for name in sorted(os.listdir(out)):
        with open(os.path.join(out, name), "rb") as f:
            data = f.read()
        text = utf8(data)
        if text is None:
            fail("%s: %s is not UTF-8" % (label, name))
            ok = False
        elif UNPRINTABLE.search(text):
            fail("%s: %s holds %r raw" % (label, name, UNPRINTABLE.search(text).group()))
            ok = False
    return ok


def check_scripts(work, out, label, s, name, path, api, target):
    for script in sorted(os.listdir(out)):
        if not (script.endswith(".sh") or script.endswith(".sbatch")):
            continue
        full = os.path.join(out, script)
        r = run(["bash", "-n", full])
        if r.returncode != 0:
            fail("%s: bash -n rejected %s: %s" % (label, script, r.stderr.decode(errors="replace")))
            continue
        args = [INVENTORY, os.path.join(work.root, "results.jsonl")] if script == "batch.sbatch" else []
        r, stubs, left = work.run_script(full, args)
        if r.returncode != 0:
            fail("%s: bash %s exited %d: %s" % (label, script, r.returncode, r.stderr.decode(errors="replace")[-400:]))
        if left:
            fail("%s: bash %s created %r" % (label, script, left))
        tool = {"run.sh": "docker", "serve.sbatch": "srun", "batch.sbatch": "mpirun"}[script]
        argv = stubs.get(tool, {}).get("argv", [])
        if tool != "docker" and stubs.get(tool, {}).get("env", b"") != s:
            fail("%s: %s: $FUZZ reached %s as %s" % (label, script, tool, show(stubs.get(tool, {}).get("env"))))
        if script == "run.sh":
            if not has_pair(argv, b"--env", b"FUZZ=" + s):
                fail("%s: run.sh: docker did not get --env FUZZ=%s" % (label, show(s)))
            if not has_pair(argv, b"--volume", path + b":/models/" + name + b":ro"):
                fail("%s: run.sh: docker did not get the --volume of %s" % (label, show(path)))
        elif script == "batch.sbatch" and not has_pair(argv, b"batch", path):
            fail("%s: batch.sbatch: mpirun did not get `batch %s`" % (label, show(path)))
        elif script == "serve.sbatch" and not has_pair(argv, b"serve" if api != "tgi" else b"--model-id", path):
            fail("%s: serve.sbatch: srun did not get the model %s" % (label, show(path)))
        if api in ("plexus", "vllm") and script != "batch.sbatch" and not has_pair(argv, b"--served-model-name", name):
            fail("%s: %s: the server did not get --served-model-name %s" % (label, script, show(name)))


def undollar(v):
    return v.replace("$$", "$") if isinstance(v, str) else v


def check_yaml(out, label, s, name, path, api, target):
    try:
        read_yaml(out, label, s, name, path, api, target)
    except (yaml.YAMLError, KeyError, TypeError, AttributeError, StopIteration) as e:
        fail("%s: the YAML does not read back: %s" % (label, str(e).replace("\n", " ")[:300]))


def read_yaml(out, label, s, name, path, api, target):
    su, nu, pu = s.decode(), name.decode(), path.decode()
    if target == "compose":
        with open(os.path.join(out, "compose.yaml"), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        if not isinstance(doc, dict) or set(doc) != {"services"} or len(doc["services"]) != 1:
            fail("%s: compose.yaml's top level is %r" % (label, doc if not isinstance(doc, dict) else list(doc)))
            return
        svc = next(iter(doc["services"].values()))
        if undollar(svc.get("environment", {}).get("FUZZ")) != su:
            fail("%s: compose.yaml reads FUZZ back as %r" % (label, svc.get("environment")))
        if [undollar(v) for v in svc.get("volumes", [])] != [pu + ":/models/" + nu + ":ro"]:
            fail("%s: compose.yaml's volumes read back as %r" % (label, svc.get("volumes")))
        command = [undollar(v).encode() for v in svc.get("command", [])]
        if api in ("plexus", "vllm") and not has_pair(command, b"--served-model-name", name):
            fail("%s: compose.yaml's command is %r" % (label, svc.get("command")))
        r = run(["docker-compose", "-f", "compose.yaml", "config"], cwd=out)
        if r.returncode != 0:
            fail("%s: docker-compose config rejected compose.yaml: %s" % (label, r.stderr.decode(errors="replace")[-400:]))
        else:
            normal = yaml.safe_load(r.stdout)
            got = undollar(next(iter(normal["services"].values())).get("environment", {}).get("FUZZ"))
            # The YAML `config` prints comes from PyYAML's emitter, which writes U+0085, U+2028 and
            # U+2029 raw inside single quotes, where its reader folds them into spaces: its printout
            # (not what compose read, checked above with the same PyYAML) loses them.
            if got != su and not any(c in su for c in "\x85\u2028\u2029"):
                fail("%s: docker-compose config gives FUZZ=%r" % (label, got))
    if target == "kubernetes":
        for manifest in ("deployment.yaml", "service.yaml", "pvc.yaml", "model-copy-pod.yaml"):
            with open(os.path.join(out, manifest), encoding="utf-8") as f:
                docs = list(yaml.safe_load_all(f))
            if len(docs) != 1 or not isinstance(docs[0], dict) or set(docs[0]) != K8S_KEYS:
                fail("%s: %s reads as %r" % (label, manifest, docs))
        with open(os.path.join(out, "deployment.yaml"), encoding="utf-8") as f:
            c = yaml.safe_load(f)["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e["value"] for e in c["env"]}
        if env.get("FUZZ") != su:
            fail("%s: deployment.yaml reads FUZZ back as %r" % (label, env.get("FUZZ")))
        if api in ("plexus", "vllm") and not has_pair([w.encode() for w in c["command"]], b"--served-model-name", name):
            fail("%s: deployment.yaml's command is %r" % (label, c["command"]))


def check_dockerfile(out, label, name, api):
    df = os.path.join(out, "Dockerfile")
    if not os.path.exists(df):
        return
    with open(df, encoding="utf-8") as f:
        cmd = [l for l in f.read().split("\n") if l.startswith("CMD ")]
    if len(cmd) != 1 or not has_pair([w.encode() for w in json.loads(cmd[0][4:])], b"--served-model-name", name):
        fail("%s: the Dockerfile's CMD is %r" % (label, cmd))


def deploy_string(work, s, i):
    """s as the model directory's (and its parent's) name, an --env value and the GPU names."""
    name = s.replace(b"/", b"_")[:200]
    if name in (b"", b".", b".."):
        name = b"x" + name
    inventory = INVENTORY
    if utf8(s) is not None:
        with open(INVENTORY) as f:
            inv = json.load(f)
        for d in inv["devices"]:
            d["name"] = utf8(s)
        inventory = os.path.join(work.next_dir("inv"), "inventory.json")
        with open(inventory, "w") as f:
            json.dump(inv, f)
    api = "plexus" if i % 2 == 0 else "vllm"
    for target in TARGETS:
        case = work.next_dir(target)
        parent = os.path.join(case.encode(), name)
        os.makedirs(parent)
        path = os.path.join(parent, name)
        os.symlink((MODEL if api == "plexus" else HUB_MODEL).encode(), path)
        out = os.path.join(case, "out")
        label = "%s/%s %s" % (target, api, show(s))
        r = plexus([path, "--target", target, "--api-type", api, "--inventory", inventory, "--out", out,
                    "--env", b"FUZZ=" + s])
        err = r.stderr.decode(errors="replace")
        if utf8(path) is None or utf8(s) is None:
            if r.returncode != 2 or "not valid UTF-8" not in err or not ("MODEL" in err or "--env FUZZ" in err):
                fail("%s: invalid UTF-8 should exit 2 naming it; exit %d: %s" % (label, r.returncode, err[-300:]))
            continue
        if b":" in path and target in ("docker", "compose"):
            if r.returncode != 2 or "MODEL" not in err or "':'" not in err:
                fail("%s: a ':' in the path should exit 2 naming MODEL; exit %d: %s" % (label, r.returncode, err[-300:]))
            continue
        if r.returncode != 0:
            fail("%s: exit %d: %s" % (label, r.returncode, err[-400:]))
            continue
        if not check_files(out, label):
            continue
        check_scripts(work, out, label, s, name, path, api, target)
        check_yaml(out, label, s, name, path, api, target)
        check_dockerfile(out, label, name, api)
        if os.path.exists(os.path.join(out, "Dockerfile")):
            work.dockerfiles.append(os.path.join(out, "Dockerfile"))
        if target == "kubernetes":
            work.k8s_dirs.append(out)


def deploy_image(work, image):
    out = os.path.join(work.next_dir("image"), "out")
    r = plexus([MODEL, "--target", "compose", "--inventory", INVENTORY, "--out", out, "--image", image])
    label = "--image %s" % show(image)
    if not is_reference(image):
        if r.returncode != 2 or b"--image" not in r.stderr or os.path.exists(out):
            fail("%s: should exit 2 naming --image; exit %d: %s" % (label, r.returncode, r.stderr[-300:]))
        return
    if r.returncode != 0:
        fail("%s: an image reference was refused: %s" % (label, r.stderr[-300:]))
        return
    check_files(out, label)
    with open(os.path.join(out, "compose.yaml"), encoding="utf-8") as f:
        got = next(iter(yaml.safe_load(f)["services"].values()))["image"]
    if got != image.decode():
        fail("%s: compose.yaml reads the image back as %r" % (label, got))
    work.dockerfiles.append(os.path.join(out, "Dockerfile"))


def other_flags(work, s):
    for flag in ("--strategy", "--dtype", "--quantize", "--api-type", "--target"):
        args = [MODEL, "--inventory", INVENTORY, "--out", os.path.join(work.root, "never")] + \
            ([] if flag == "--target" else ["--target", "docker"]) + [flag, s]
        r = plexus(args)
        if r.returncode != 2 or flag.encode() not in r.stderr:
            fail("%s %s: should exit 2 naming %s; exit %d: %s" % (flag, show(s), flag, r.returncode, r.stderr[-300:]))
    name = s.replace(b"/", b"_")[:200]
    if name in (b"", b".", b".."):
        return
    out = os.path.join(work.next_dir("out").encode(), name)
    r = plexus([MODEL, "--target", "slurm", "--inventory", INVENTORY, "--out", out])
    if r.returncode != 0 or not os.path.exists(os.path.join(out, b"serve.sbatch")):
        fail("--out %s: exit %d: %s" % (show(name), r.returncode, r.stderr[-300:]))


def main():
    if MODE == "--reproducers":
        strings, images = REPRODUCERS, IMAGE_REPRODUCERS
    elif MODE == "--random":
        rng = random.Random(int(sys.argv[7]))
        count = int(sys.argv[5])
        strings = [random_string(rng) for _ in range(count)]
        images = [random_string(rng) for _ in range(count // 2)] + [random_reference(rng) for _ in range(count // 2)]
    else:
        sys.exit(__doc__)
    root = tempfile.mkdtemp(prefix="plexus-hostile-")
    try:
        work = Work(root)
        for i, s in enumerate(strings):
            deploy_string(work, s, i)
            if s in FLAG_REPRODUCERS:
                other_flags(work, s)
        for image in images:
            deploy_image(work, image)
        if work.dockerfiles:
            r = run(["node", "lint_dockerfile.mjs"] + work.dockerfiles, cwd=VALIDATORS)
            if r.returncode != 0:
                fail("lint_dockerfile.mjs: " + r.stdout.decode(errors="replace")[-2000:])
        if work.k8s_dirs:
            r = run(["node", "validate_k8s.mjs"] + work.k8s_dirs, cwd=VALIDATORS)
            if r.returncode != 0:
                fail("validate_k8s.mjs: " + (r.stdout + r.stderr).decode(errors="replace")[-2000:])
        print("%d strings x %d targets, %d images, %d Dockerfiles linted, %d manifest sets validated: %d failures"
              % (len(strings), len(TARGETS), len(images), len(work.dockerfiles), len(work.k8s_dirs), len(failures)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(1 if failures else 0)


main()
