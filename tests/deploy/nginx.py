"""The shipped nginx config (deploy/nginx.conf) run with Debian's nginx on loopback, in front of gunicorn on
a Unix socket (0660, in a 0700 directory), as the tests start it: the template's variables filled in, a
main config with every path under a temporary prefix."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.live import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
MAIN = """\
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
{user}
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    include {prefix}/dpportal.conf;
}}
"""


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)


def render(template: str, values: dict[str, str]) -> str:
    """${NAME} -> values[NAME], as the official image's envsubst does; a name left over fails."""
    text = re.sub(r"\$\{([A-Z_]+)\}", lambda m: values[m.group(1)], template)
    assert not re.search(r"\$\{[A-Z_]+\}", text), text
    return text


class NginxStack:
    """gunicorn (the given WSGI app) on a Unix socket + nginx with the repository's config."""

    def __init__(
        self,
        base: Path,
        env: dict,
        *,
        app: str,
        upstream_timeout: str = "180s",
        max_body: str = "201m",
        gunicorn_args: tuple[str, ...] = (),
    ):
        self.base, self.env, self.procs, self.gunicorn_args = base, env, [], gunicorn_args
        self.port = free_port()
        run = base / "run"
        run.mkdir(mode=0o700)
        self.socket = run / "web.sock"
        self.prefix = base / "nginx"
        self.prefix.mkdir()
        conf = render(
            (ROOT / "deploy" / "nginx.conf").read_text(),
            {
                "DPPORTAL_UPSTREAM": f"unix:{self.socket}",
                "NGINX_LISTEN": f"127.0.0.1:{self.port}",
                "DPPORTAL_STATIC_ROOT": str(ROOT / "static"),
                "NGINX_MAX_BODY": max_body,
                "NGINX_UPSTREAM_TIMEOUT": upstream_timeout,
            },
        )
        (self.prefix / "dpportal.conf").write_text(conf)
        user = "user root root;" if os.geteuid() == 0 else ""  # workers reach the root-only socket directory
        (self.prefix / "nginx.conf").write_text(MAIN.format(prefix=self.prefix, user=user))
        self.app = app

    def start(self) -> "NginxStack":
        log = open(self.base / "gunicorn.log", "w")
        gunicorn = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                self.app,
                "--bind",
                f"unix:{self.socket}",
                "--umask",
                "0o117",
                "--workers",
                "1",
                "--threads",
                "4",
                "--timeout",
                "120",
                *self.gunicorn_args,
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(gunicorn)
        deadline = time.monotonic() + 60
        while not self.socket.exists():
            assert gunicorn.poll() is None and time.monotonic() < deadline, (self.base / "gunicorn.log").read_text()
            time.sleep(0.1)
        binary = nginx_binary()
        conf = str(self.prefix / "nginx.conf")
        check = subprocess.run([binary, "-t", "-p", str(self.prefix), "-c", conf], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        nginx = subprocess.Popen(
            [binary, "-p", str(self.prefix), "-c", conf, "-g", "daemon off;"],
            stdout=open(self.base / "nginx.log", "w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(nginx)
        wait_for_port(self.port, nginx, timeout=30)
        return self

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
