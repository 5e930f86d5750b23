#!/usr/bin/env python3
# Hostile clients against `plexus serve` (issue 32's reproducers, items 1-5 and 7): prints what each
# one costs the server — a good completion's latency among 120 clients trickling headers, SIGTERM's
# exit time with slow clients, chunked bodies over --max-body, the memory of 8 MB chat bodies of
# one-letter messages (one, then eight at once) and of 8 MB text prompts, connection bursts against
# the listen backlog, bodies without or with bad Content-Lengths. Each scenario starts its own
# server on a free loopback port and kills it after; no pass/fail.
# usage: benchmarks/serve/hostile_clients.py PLEXUS MODEL [slow term1 term30 chunked memory bigprompt backlog nolength]
#   (MODEL: e.g. `plexus make-model m --tokenizer build/golden/tokenizers/llama3`; the memory scenarios take
#   ~4 GB on a server without issue 32's bounds.)
import json, os, re, select, signal, socket, subprocess, sys, threading, time
PLEXUS, MODEL = sys.argv[1], sys.argv[2]
which = sys.argv[3:] or ["slow", "term1", "term30", "chunked", "memory", "bigprompt", "backlog", "nolength"]

def start(extra):
    p = subprocess.Popen(["env", "CUDA_VISIBLE_DEVICES=", PLEXUS, "serve", MODEL, "--port", "0", "--threads", "2"] + extra,
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    port = None
    while port is None:
        line = p.stderr.readline()
        m = re.search(r"listening on http://127.0.0.1:(\d+)", line)
        if m: port = int(m.group(1))
    while True:
        line = p.stderr.readline()
        if "loaded" in line: break
    threading.Thread(target=lambda: p.stderr.read(), daemon=True).start()
    return p, port

def post(port, body, path="/v1/completions", timeout=120):
    t0 = time.time()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d: break
            data += d
    except socket.timeout:
        pass
    s.close()
    return data.split(b" ")[1].decode() if data else "none", time.time() - t0

def slow_clients(port, n, every, stop):
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
    head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: "
    i = 0
    while not stop.is_set():
        c = head[i:i+1] if i < len(head) else b"a"
        for s in socks:
            try: s.send(c)
            except OSError: pass
        i += 1
        stop.wait(every)
    for s in socks: s.close()

def rss(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"): return int(line.split()[1]) / 1024
good = b'{"prompt": "hello", "max_tokens": 2}'

if "slow" in which:
    p, port = start(["--context", "256"])
    stop = threading.Event()
    t = threading.Thread(target=slow_clients, args=(port, 120, 2.0, stop)); t.start()
    time.sleep(3)
    print("item 1: 120 slow clients (1 byte / 2 s): good completion:", [("%s %.3f s" % post(port, good, timeout=60)) for _ in range(3)])
    stop.set(); t.join(); p.kill(); p.wait()

for n, key in ((1, "term1"), (30, "term30")):
    if key not in which: continue
    p, port = start(["--context", "256", "--drain-timeout", "2"])
    stop = threading.Event()
    t = threading.Thread(target=slow_clients, args=(port, n, 1.0, stop)); t.start()
    time.sleep(2)
    t0 = time.time(); p.send_signal(signal.SIGTERM)
    try:
        code = p.wait(timeout=90)
    except subprocess.TimeoutExpired:
        p.kill(); code = "killed"
    print(f"item 2: SIGTERM --drain-timeout 2 with {n} slow client(s): exit {code} after {time.time()-t0:.2f} s")
    stop.set(); t.join()

if "chunked" in which:
    p, port = start(["--context", "256", "--max-body", "1024"])
    body = b'{"prompt": "' + b"a" * 4000 + b'", "max_tokens": 1}'
    def chunked(b, size):
        out = b""
        for i in range(0, len(b), size):
            part = b[i:i+size]; out += b"%x\r\n" % len(part) + part + b"\r\n"
        return out + b"0\r\n\r\n"
    for label, req in (("content-length 4 KB", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body),
                       ("chunked 4 KB", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(body, 500))):
        s = socket.create_connection(("127.0.0.1", port), timeout=10); s.sendall(req)
        print("item 3:", label, "->", s.recv(100).split(b"\r\n")[0].decode()); s.close()
    hwm0 = rss(p.pid, "VmHWM")
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b"a" * 0x10000 + b"\r\n"; sent = 0
    try:
        while sent < 100 << 20:
            s.sendall(chunk); sent += 0x10000
    except OSError: pass
    try: status = s.recv(100).split(b"\r\n")[0].decode()
    except OSError as e: status = str(e)
    print(f"item 3: chunked 100 MiB: {status}; sent {sent >> 20} MiB before the server stopped reading; VmHWM {hwm0:.0f} -> {rss(p.pid, 'VmHWM'):.0f} MiB")
    p.kill(); p.wait()

if "memory" in which:
    template = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"hostile_clients_{os.getpid()}.jinja")
    open(template, "w").write("{% for m in messages %}[{{ m.role }}: {{ m.content }}]{% endfor %}")
    p, port = start(["--context", "2048", "--chat-template", template])
    msgs = b'{"role":"u","content":"a"},' * (8_000_000 // 27)
    body = b'{"messages": [' + msgs[:-1] + b']}'
    r0 = rss(p.pid, "VmRSS")
    res = post(port, body, "/v1/chat/completions")
    print(f"item 4: one {len(body)/1e6:.1f} MB chat body ({len(body)//27} messages): {res[0]} in {res[1]:.2f} s; VmRSS {r0:.0f} MiB, peak {rss(p.pid, 'VmHWM'):.0f} MiB")
    out = []
    ts = [threading.Thread(target=lambda: out.append(post(port, body, "/v1/chat/completions"))) for _ in range(8)]
    t0 = time.time()
    for t in ts: t.start()
    for t in ts: t.join()
    time.sleep(1)
    print(f"item 4: eight at once: {[o[0] for o in out]} in {time.time()-t0:.2f} s; peak {rss(p.pid, 'VmHWM'):.0f} MiB; VmRSS after {rss(p.pid, 'VmRSS'):.0f} MiB (before {r0:.0f})")
    p.kill(); p.wait()
    os.remove(template)

if "backlog" in which:
    p, port = start(["--context", "256"])
    def overflows():
        t = open("/proc/net/netstat").read().split("\n")
        h, v = t[0].split(), t[1].split()
        return int(v[h.index("ListenOverflows")])
    o0 = overflows()
    t0 = time.time()
    for burst in range(3):
        socks = []
        for i in range(200):
            s = socket.socket(); s.setblocking(False)
            try: s.connect(("127.0.0.1", port))
            except BlockingIOError: pass
            socks.append(s)
        for s in socks:
            s.setblocking(True); s.settimeout(60)
            try:
                s.send(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); s.recv(100)
            except OSError: pass
            s.close()
    print(f"item 5: 3 bursts of 200 connections, each sending GET /health: {time.time()-t0:.2f} s, ListenOverflows +{overflows()-o0} (machine-wide counter)")
    os.kill(p.pid, signal.SIGSTOP)
    socks = []
    for i in range(300):
        s = socket.socket(); s.setblocking(False)
        try: s.connect(("127.0.0.1", port))
        except BlockingIOError: pass
        socks.append(s)
    time.sleep(0.5)
    ok = sum(1 for s in socks if select.select([], [s], [], 0)[1] and s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
    os.kill(p.pid, signal.SIGCONT)
    for s in socks: s.close()
    print(f"item 5: server stopped (SIGSTOP), 300 connects: {ok} completed the handshake (the accept queue holds them)")
    p.kill(); p.wait()

if "nolength" in which:
    p, port = start(["--context", "256"])
    head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    for label, req in (("no Content-Length", head + b"\r\n" + good),
                       ("two Content-Lengths", head + b"Content-Length: %d\r\nContent-Length: 3\r\n\r\n" % len(good) + good),
                       ("Content-Length: -5", head + b"Content-Length: -5\r\n\r\n" + good)):
        s = socket.create_connection(("127.0.0.1", port), timeout=60); t0 = time.time(); s.sendall(req)
        try: line = s.recv(100).split(b"\r\n")[0].decode()
        except OSError as e: line = str(e)
        print(f"item 7: {label}: {line} after {time.time()-t0:.3f} s"); s.close()
    p.kill(); p.wait()

if "bigprompt" in which:
    p, port = start(["--context", "2048"])
    body = json.dumps({"prompt": "word " * 1_600_000}).encode()
    r0 = rss(p.pid, "VmRSS")
    out = []
    ts = [threading.Thread(target=lambda: out.append(post(port, body))) for _ in range(8)]
    t0 = time.time()
    for t in ts: t.start()
    for t in ts: t.join()
    time.sleep(1)
    print(f"8 MB text prompts, eight at once: {[o[0] for o in out]} in {time.time()-t0:.2f} s; VmRSS {r0:.0f} MiB, peak {rss(p.pid, 'VmHWM'):.0f} MiB, after {rss(p.pid, 'VmRSS'):.0f} MiB")
    p.kill(); p.wait()
