#!/usr/bin/python3
"""sessions_client.py - the client side of tests/bench/sessions.sh (run by /usr/bin/python3:
Debian's python3-websocket is needed for the notebook, nothing else outside the standard
library).

  notebook API TENANT TOKEN PROJECT RUNS
      RUNS times: POST .../sessions (app jupyter, the host's jupyter-notebook), wait for
      "ready", follow the single-use link on the relay, start a kernel through the relay
      (POST <base>api/kernels) and run print(6*7) over its WebSocket (the Jupyter kernel
      protocol, as /work/shared/examples/jupyter/README.md), then stop the session and
      wait for its job to end. One line per run: "run N ready_s kernel_s total_s
      ready_at_s" (seconds from the POST; ready_at_s: the server's ready_at - created_at).
  latency RELAY_PORT SESSION_ID COOKIE DIRECT_PORT ROUNDS BLOCKS PAYLOAD
      WebSocket round trips (PAYLOAD bytes sent, the same bytes read back) to the echo app
      through the relay (cookie, Origin) and straight to its forwarded port, and to an
      echo server on loopback in this process (no relay, no slirp4netns): BLOCKS blocks
      of ROUNDS / BLOCKS round trips, alternating, after 200 unmeasured ones each. One
      line per path: "PATH n p50_us p90_us p99_us max_us mean_us".
"""
import base64
import calendar
import json
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid


# ---- the API ---------------------------------------------------------------------------------
class Api:
    def __init__(self, base, token):
        self.base, self.token = base, token

    def call(self, method, path, body=None, want=(200,)):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, text = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        if status not in want:
            sys.exit(f"{method} {path} answered {status}: {text[:300]!r}")
        return json.loads(text) if text else None


def ts(s):
    """An API timestamp (2026-12-04T10:00:00.123Z) as epoch seconds."""
    if not s:
        return None
    s = s.rstrip("Z")
    frac = 0.0
    if "." in s:
        s, f = s.split(".", 1)
        frac = float("0." + f)
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%S")) + frac


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


def enter(link):
    """Follow the single-use link; the aidc_app cookie it sets."""
    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(link, timeout=30)
        sys.exit(f"{link} did not redirect")
    except urllib.error.HTTPError as e:
        if e.code != 302:
            sys.exit(f"the link answered {e.code}: {e.read()[:300]!r}")
        for v in e.headers.get_all("Set-Cookie") or []:
            name, _, rest = v.partition("=")
            if name.strip() == "aidc_app":
                return rest.split(";", 1)[0]
    sys.exit("the link set no aidc_app cookie")


# ---- a notebook, POST to print(6*7) ----------------------------------------------------------
def notebook(api_base, tenant, token, project, runs):
    import websocket  # python3-websocket (Debian): only this mode needs it

    api = Api(api_base, token)
    for run in range(1, int(runs) + 1):
        t0 = time.time()
        s = api.call("POST", f"/api/v1/tenants/{tenant}/sessions",
                     {"project": project, "app": "jupyter", "cpus": 1, "memory_gib": 2,
                      "idle_minutes": 30, "time_limit_minutes": 30}, want=(201,))
        sid = s["id"]
        path = f"/api/v1/tenants/{tenant}/sessions/{sid}"
        while True:  # the session watcher looks every 2 s; 20 ms polls see it at once
            s = api.call("GET", path)
            if s["state"] == "ready":
                break
            if s["state"] == "ended" or time.time() - t0 > 120:
                sys.exit(f"run {run}: session {sid} {s['state']}: {s.get('reason')}")
            time.sleep(0.02)
        t_ready = time.time()
        link = api.call("POST", path + "/open")["url"]
        cookie = enter(link)
        base = s["url"]  # http://127.0.0.1:PORT/sessions/<id>/
        origin = base.split("/sessions/", 1)[0]
        req = urllib.request.Request(base + "api/kernels", data=b'{"name":"python3"}',
                                     method="POST")
        req.add_header("Cookie", "aidc_app=" + cookie)
        req.add_header("Origin", origin)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=60) as r:
            if r.status != 201:
                sys.exit(f"run {run}: POST api/kernels answered {r.status}")
            kernel = json.load(r)["id"]
        ws = websocket.create_connection(
            base.replace("http://", "ws://", 1) + f"api/kernels/{kernel}/channels?session_id={uuid.uuid4().hex}",
            header=["Cookie: aidc_app=" + cookie], origin=origin, timeout=60)
        msg_id = uuid.uuid4().hex
        ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "bench",
                       "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": "print(6*7)", "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
        out, replied = "", False
        while not (out == "42\n" and replied):
            m = json.loads(ws.recv())
            if m.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            c = m.get("content", {})
            if m.get("msg_type") == "stream" and c.get("name") == "stdout":
                out += c.get("text", "")
            elif m.get("msg_type") == "execute_reply":
                if c.get("status") != "ok":
                    sys.exit(f"run {run}: execute_reply {c}")
                replied = True
        t_done = time.time()
        ws.close()
        s = api.call("GET", path)
        ready_at = ts(s.get("ready_at"))
        created = ts(s.get("created_at"))
        api.call("POST", path + "/stop", want=(200, 202))
        while api.call("GET", path)["job"]["state"] not in ("succeeded", "failed", "cancelled"):
            time.sleep(0.1)
        print(f"run {run} {t_ready - t0:.3f} {t_done - t_ready:.3f} {t_done - t0:.3f} "
              f"{(ready_at - created) if ready_at and created else -1:.3f}", flush=True)


# ---- WebSocket round trips ---------------------------------------------------------------------
def upgrade(port, path, headers):
    """A TCP connection to 127.0.0.1:port upgraded to a WebSocket (101 read)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket",
             "Connection: Upgrade", "Sec-WebSocket-Version: 13", f"Sec-WebSocket-Key: {key}"]
    s.sendall(("\r\n".join(lines + headers) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(4096)
        if not d:
            sys.exit(f"{path} on {port}: closed during the upgrade")
        head += d
    status = head.split(b"\r\n", 1)[0]
    if b" 101 " not in status:
        sys.exit(f"{path} on {port}: {status!r}")
    return s


def echo_server():
    """A loopback echo (raw bytes) in a thread; its port."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)

    def serve():
        c, _ = ls.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            d = c.recv(65536)
            if not d:
                return
            c.sendall(d)

    threading.Thread(target=serve, daemon=True).start()
    return ls.getsockname()[1]


def rounds(s, n, payload, out):
    for _ in range(n):
        t = time.perf_counter_ns()
        s.sendall(payload)
        got = 0
        while got < len(payload):
            d = s.recv(65536)
            if not d:
                sys.exit("the echo closed")
            got += len(d)
        if out is not None:
            out.append((time.perf_counter_ns() - t) / 1000)


def latency(relay_port, sid, cookie, direct_port, total, blocks, size):
    relay_port, direct_port, total, blocks, size = map(int, (relay_port, direct_port, total,
                                                             blocks, size))
    # a WebSocket frame the server would get from a browser: FIN + binary, masked
    body = os.urandom(size - 6 if size > 6 else 0)
    payload = bytes([0x82, 0x80 | len(body)]) + os.urandom(4) + body if len(body) < 126 else \
        bytes([0x82, 0xFE]) + len(body).to_bytes(2, "big") + os.urandom(4) + body
    path = f"/sessions/{sid}/ws"
    paths = {
        "relay": upgrade(relay_port, path, [f"Cookie: aidc_app={cookie}",
                                            f"Origin: http://127.0.0.1:{relay_port}"]),
        "direct": upgrade(direct_port, path, []),
    }
    loop = socket.create_connection(("127.0.0.1", echo_server()))
    loop.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    paths["loopback"] = loop
    times = {k: [] for k in paths}
    for s in paths.values():
        rounds(s, 200, payload, None)  # warm: connections, caches, the relay's thread
    per = total // blocks
    for _ in range(blocks):
        for k, s in paths.items():
            rounds(s, per, payload, times[k])
    for k in ("relay", "direct", "loopback"):
        v = sorted(times[k])
        q = lambda p: v[min(len(v) - 1, int(len(v) * p))]
        print(f"{k} {len(v)} {q(0.5):.1f} {q(0.9):.1f} {q(0.99):.1f} {v[-1]:.1f} "
              f"{sum(v) / len(v):.1f}", flush=True)
    for s in paths.values():
        s.close()


if __name__ == "__main__":
    {"notebook": notebook, "latency": latency}[sys.argv[1]](*sys.argv[2:])
