"""A live dpportal stack in subprocesses for end-to-end tests: migrate, runserver, a real Celery
worker, on a given broker; plus a tiny JSON/multipart HTTP client (stdlib only)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STARTUP_TIMEOUT = 60  # seconds; the machine may be busy


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = STARTUP_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listening on port {port} after {timeout}s")


def base_env(data_dir: Path, broker_url: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
    env.update(
        DPPORTAL_DATA_DIR=str(data_dir),
        DJANGO_SECRET_KEY="live-test-" + uuid.uuid4().hex,
        DJANGO_SETTINGS_MODULE="dpportal.settings",
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
    )
    if broker_url:
        env["CELERY_BROKER_URL"] = broker_url
    return env


def manage(env: dict, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    if out.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed: {out.stderr[-2000:]}")
    return out.stdout


class Stack:
    """runserver + Celery worker sharing one SQLite database and data directory."""

    def __init__(self, data_dir: Path, *, broker_url: str | None = None, template_db: Path | None = None):
        self.data_dir = data_dir
        self.env = base_env(data_dir, broker_url)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        data_dir.mkdir(parents=True, exist_ok=True)
        if template_db is not None:
            shutil.copy(template_db, data_dir / "db.sqlite3")
        else:
            manage(self.env, "migrate", "--noinput", "-v0")

    def start(self, *, worker: bool = True) -> "Stack":
        log = open(self.data_dir / "web.log", "w")
        web = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{self.port}", "--noreload"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(web)
        if worker:
            self.start_worker()
        wait_for_port(self.port, web)
        return self

    def start_worker(self, queues: str | None = None) -> subprocess.Popen:
        """One worker process, concurrency 1; ``queues`` (e.g. "fast") like scripts/run.sh, else all queues."""
        log = open(self.data_dir / f"worker-{len(self.procs)}.log", "w")
        extra = ["-Q", queues, "-n", f"{queues}-{len(self.procs)}@%h"] if queues else []
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "dpportal",
                "worker",
                "--loglevel=INFO",
                "--concurrency=1",
                "--prefetch-multiplier=1",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                *extra,
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.data_dir.glob("*.log")))

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    # -- HTTP ---------------------------------------------------------------------------------------
    def call(
        self, method: str, path: str, *, token: str | None = None, json_body=None, files=None, fields=None
    ) -> tuple[int, bytes, dict]:
        headers = {"Accept": "application/json"}
        data = None
        if token:
            headers["Authorization"] = f"Token {token}"
        if json_body is not None:
            data = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        elif files is not None:
            data, ctype = multipart(fields or {}, files)
            headers["Content-Type"] = ctype
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, resp.read(), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), dict(exc.headers)

    def json(self, method: str, path: str, **kw):
        status, body, _ = self.call(method, path, **kw)
        return status, json.loads(body)

    def wait_release(self, rid: int, token: str, timeout: float = 90) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, data = self.json("GET", f"/api/releases/{rid}/", token=token)
            if data.get("finished"):
                return data
            time.sleep(0.3)
        raise TimeoutError(f"release {rid} not finished after {timeout}s: {data}\n{self.logs()}")


def multipart(fields: dict, files: dict) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, (filename, content) in files.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            f"Content-Type: text/csv\r\n\r\n".encode()
            + content
            + b"\r\n"
        )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"
