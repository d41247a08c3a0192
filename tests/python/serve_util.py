"""Start and stop `squeeze serve` on a free loopback port (tests and bench/serve_load.py)."""
import json
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request

LISTENING = re.compile(r"listening on http://([^:]+):(\d+)")


class Server:
    """`squeeze serve ARGS --port 0`; the port is read from its "listening on" line."""

    def __init__(self, binary, *args, env=None, timeout=120):
        self.proc = subprocess.Popen([binary, "serve", "--port", "0", *args], stderr=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, text=True, env=env)
        self.log = []
        self._ready = threading.Event()
        self.url = None
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(timeout) or self.url is None:
            self.proc.kill()
            raise RuntimeError("squeeze serve did not start: " + "".join(self.log))

    def _read(self):
        for line in self.proc.stderr:
            self.log.append(line)
            m = LISTENING.search(line)
            if m:
                self.url = f"http://{m.group(1)}:{m.group(2)}"
                self._ready.set()
        self._ready.set()

    def request(self, method, path, body=None, headers=None, raw=None, timeout=120):
        """(status, headers, parsed JSON or text)."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, hdrs, text = r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            status, hdrs, text = e.code, dict(e.headers), e.read().decode()
        try:
            return status, hdrs, json.loads(text)
        except ValueError:
            return status, hdrs, text

    def metrics(self):
        _, _, text = self.request("GET", "/metrics")
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def stop(self, timeout=60):
        """SIGTERM, then the exit code."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def wait_for(self, predicate, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if predicate():
                return True
            time.sleep(0.1)
        return False
