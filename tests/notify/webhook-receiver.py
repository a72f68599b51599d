#!/usr/bin/python3
"""Webhook receiver for tests/http/test_notifications.c: checks each delivery's
X-Aidc-Signature (sha256=<hex HMAC-SHA256 of the body> with --secret) as a receiver
would, answers 500 to the first --fail-first attempts of each delivery (X-Aidc-Delivery)
under /flaky, always 500 under /down, never answers in time under /slow, and 204
otherwise. Each request is written to DIR/<n>.json: {"path", "event", "delivery",
"signature_ok", "status", "body"} (a dot-file renamed, so a poller never reads half).
usage: webhook-receiver.py --dir DIR --secret S [--fail-first 2]; prints "port N"."""
import argparse, hashlib, hmac, itertools, json, os, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument('--dir', required=True)
p.add_argument('--secret', required=True)
p.add_argument('--fail-first', type=int, default=2)
a = p.parse_args()
os.makedirs(a.dir, exist_ok=True)
seq = itertools.count(1)
attempts = {}
lock = threading.Lock()


class H(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get('Content-Length', '0'))
        body = self.rfile.read(min(n, 1 << 20))
        want = 'sha256=' + hmac.new(a.secret.encode(), body, hashlib.sha256).hexdigest()
        ok = hmac.compare_digest(want, self.headers.get('X-Aidc-Signature', ''))
        delivery = self.headers.get('X-Aidc-Delivery', '')
        with lock:
            attempts[delivery] = attempts.get(delivery, 0) + 1
            k = attempts[delivery]
        status = 204 if ok else 401
        if self.path.startswith('/flaky') and k <= a.fail_first:
            status = 500
        elif self.path.startswith('/down'):
            status = 500
        elif self.path.startswith('/slow'):
            time.sleep(30)
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        rec = {'path': self.path, 'event': self.headers.get('X-Aidc-Event'), 'delivery': delivery,
               'attempt': k, 'signature_ok': ok, 'status': status, 'body': doc}
        name = f'{next(seq):05d}.json'
        tmp = os.path.join(a.dir, '.' + name)
        with open(tmp, 'w') as f:
            json.dump(rec, f)
        os.rename(tmp, os.path.join(a.dir, name))
        self.send_response(status)
        self.send_header('Content-Length', '10')
        self.end_headers()
        self.wfile.write(b'try again\n' if status == 500 else b'ok ok ok\n\n')


srv = ThreadingHTTPServer(('127.0.0.1', 0), H)
srv.daemon_threads = True
print(f'port {srv.server_address[1]}', flush=True)
srv.serve_forever()
