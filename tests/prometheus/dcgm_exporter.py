#!/usr/bin/python3
"""dcgm_exporter.py - a stand-in for NVIDIA's dcgm-exporter in the tests: serves
/metrics in the Prometheus text format, the concatenation of every *.prom file in
the directory it is given (each test writes its own, e.g.
DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1",hpc_job="<id>"} 3). The values are
the test's to set; the scraping, storage and queries are a real Prometheus's.

usage: dcgm_exporter.py PORT DIR
"""
import glob
import http.server
import os
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/metrics":
            self.send_error(404)
            return
        parts = []
        for name in sorted(glob.glob(os.path.join(DIR, "*.prom"))):
            try:
                with open(name, encoding="utf-8") as f:
                    parts.append(f.read())
            except OSError:
                pass  # a file being replaced: the next scrape has it
        body = "".join(p if p.endswith("\n") or not p else p + "\n" for p in parts).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    PORT, DIR = int(sys.argv[1]), sys.argv[2]
    os.makedirs(DIR, exist_ok=True)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    print("exporter ready", flush=True)
    srv.serve_forever()
