"""Secrets stay in (issue 12.2): planted secrets reach no file the run writes and no terminal line.

The run: `pytest tests/serving -m smoke --launch --record` against a STUB engine the suite launches itself.
Secrets enter everywhere they can: the environment (api_key_env / password_env values, one with a name that
looks harmless), the Authorization header, response bodies that echo the key raw and base64-encoded, the
stub's start-up log in vLLM's own forms (`'api_key': ['...']`, `--api-key ...`), its process environment
(read back by the hosts.env check through /proc), and failure messages quoting what the stub answered. Then
every file under the reports and the recording, and the terminal output, is searched for each secret in
every encoding (raw, URL, JSON, base64 at each alignment).
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from llmval.core.contract import encoded_forms
from selftest.strategies import ROOT

PLANTED = {
    "LLMVAL_SELFTEST_AUTH": "plantedAuthValue-7f3c9e1d",  # a harmless-looking name: only the inventory marks it
    "LLMVAL_SELFTEST_SSH_PASSWORD": "planted-ssh-Pa55word!x",
}
STUB = r'''
import base64, json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

key = os.environ["LLMVAL_SELFTEST_AUTH"]
print(f"non-default args: {{'model': 'stub', 'api_key': ['{key}'], 'port': {sys.argv[1]}}}", flush=True)
print(f"vllm serve stub --api-key {key} --port {sys.argv[1]}", flush=True)


class Echo(BaseHTTPRequestHandler):
    def _answer(self):
        said = self.headers.get("Authorization", "")
        body = json.dumps({"object": "list", "data": [{"id": "stub " + said, "max_model_len": 8192}],
                           "echo": said, "b64": base64.b64encode(said.encode()).decode(),
                           "choices": [{"message": {"role": "assistant", "content": "key " + key}}],
                           "version": "0.0.0+" + key}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        print("request", self.headers.get("Authorization", ""), flush=True)


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
'''


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _inventory(folder: Path, port: int) -> Path:
    stub = folder / "llmval_secret_stub.py"
    stub.write_text(STUB)
    path = folder / "secrets.toml"
    path.write_text(f'''
[deployment]
name = "secrets-everywhere"
kind = "lab"

[[hosts]]
name = "localhost"
platform = "local"
transport = {{ kind = "local" }}
env = {{ source = "process:llmval_secret_stub", required = {{ LLMVAL_SELFTEST_AUTH = "wrong-on-purpose" }} }}

[[hosts]]
name = "sshhost"
platform = "local"
smoke = false
transport = {{ kind = "ssh", address = "127.0.0.1", port = 1, password_env = "LLMVAL_SELFTEST_SSH_PASSWORD" }}

[[endpoints]]
name = "stub"
platform = "local"
base_url = "http://127.0.0.1:{port}"
engine = "vllm"
model = "stub"
max_model_len = 8192
api_key_env = "LLMVAL_SELFTEST_AUTH"
host = "localhost"
logs = "launch"
request_timeout_s = 10

[launch]
stop = []
term_grace_s = 2

[[launch.start]]
host = "localhost"
name = "stub"
background = true
run = "exec {sys.executable} {stub} {port}"

[launch.ready]
endpoint = "stub"
path = "/health"
timeout_s = 30
''')
    return path


@pytest.mark.subprocess
def test_planted_secrets_reach_no_file_and_no_terminal_line(tmp_path, monkeypatch):
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    reports, recording = tmp_path / "reports", tmp_path / "recording"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(ROOT),
         "-c", str(ROOT / "pyproject.toml"), str(ROOT / "tests" / "serving"), str(ROOT / "tests" / "hosts"),
         "-m", "smoke", "-k", "stub or localhost", "--inventory", str(_inventory(tmp_path, _free_port())),
         "--launch", "--record", str(recording), "--reports", str(reports), "-rA", "-o", "junit_logging=all"],
        cwd=tmp_path, capture_output=True, text=True, timeout=240)
    terminal = run.stdout + run.stderr
    written = sorted(p for folder in (reports, recording) for p in folder.rglob("*") if p.is_file())
    names = {p.name for p in written}
    assert {"results.json", "status.md", "report.html", "junit.xml"} <= names, (names, terminal[-3000:])
    assert any(n.startswith("http-") for n in names) and any(n.startswith("commands-") for n in names), names
    assert any(p.suffix == ".log" and "launch" in p.parts for p in written), names  # the stub's own log
    assert "non-default args" in "".join(p.read_text(errors="replace") for p in written if p.suffix == ".log")
    assert "Authorization" in terminal or "***" in terminal or "failed" in terminal, terminal[-2000:]
    texts = {"terminal": terminal, **{str(p.relative_to(tmp_path)): p.read_bytes().decode("utf-8", "replace")
                                      for p in written}}
    leaks = [(where, name, form) for where, text in texts.items()
             for name, value in PLANTED.items() for form in encoded_forms(value) if form in text]
    assert not leaks, f"planted secrets found: {leaks}"


def test_a_key_over_plain_http_to_a_remote_host_is_warned_once_per_endpoint(monkeypatch):
    from llmval.inventory import parse_inventory
    from llmval.io.http import plaintext_key_warnings

    monkeypatch.setenv("LLMVAL_SELFTEST_AUTH", PLANTED["LLMVAL_SELFTEST_AUTH"])
    endpoints = [{"name": name, "platform": "p", "base_url": url, "engine": "openai", "model": "m",
                  "api_key_env": "LLMVAL_SELFTEST_AUTH"}
                 for name, url in (("remote", "http://10.1.2.3:8000"), ("tls", "https://10.1.2.3:8000"),
                                   ("loop", "http://127.0.0.1:8000"), ("named", "http://localhost:8000"))]
    inventory = parse_inventory({"deployment": {"name": "x"}, "endpoints": endpoints})
    warnings = plaintext_key_warnings(inventory)
    assert len(warnings) == 1 and warnings[0].startswith("[remote]") and "plain http" in warnings[0]
    assert PLANTED["LLMVAL_SELFTEST_AUTH"] not in warnings[0]


def test_ssh_control_sockets_live_in_a_private_folder(tmp_path, monkeypatch):
    import tempfile

    from llmval.core.errors import HostUnreachable
    from llmval.io.transport import control_dir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = control_dir()
    assert folder.parent == tmp_path and folder.stat().st_mode & 0o777 == 0o700
    folder.chmod(0o777)  # someone else's, or opened up: refused, never used
    with pytest.raises(HostUnreachable, match="not a private folder"):
        control_dir()
