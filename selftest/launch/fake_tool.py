"""STAND-IN HOST TOOLS for the kpro6 full-chain launch self-test: `ssh`, `pct`, `systemctl`, `journalctl`,
`nvidia-smi`, `fuser`, `pkill`, each a shell wrapper calling `fake_tool.py <name> ARGS`.

Every call is appended to $FAKE_STATE/calls.log as `<name> [ct <id>]: <args>`. `ssh` and `pct exec` run
what they were given locally (`pct` marks it as running inside the container), so the log shows the
exact command at each hop. Answers are SYNTHESIZED in the documented formats; nothing is recorded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STATE = Path(os.environ["FAKE_STATE"])
OPTIONS_WITH_VALUE = {"-o", "-p", "-i", "-F", "-S", "-l", "-J"}


def log(name: str, args: list[str]) -> None:
    where = f" [ct {os.environ['FAKE_CT']}]" if os.environ.get("FAKE_CT") else ""
    with open(STATE / "calls.log", "a") as calls:
        calls.write(f"{name}{where}: {' '.join(args)}\n")


def count(name: str) -> int:
    path = STATE / f"{name}.count"
    n = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(n))
    return n


def ssh(args: list[str]) -> int:
    rest = list(args)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in OPTIONS_WITH_VALUE and rest:
            rest.pop(0)
    host, command = rest[0], " ".join(rest[1:])
    log("ssh", [host, command])
    return subprocess.run(["/bin/sh", "-c", command]).returncode


def main() -> int:
    name, args = sys.argv[1], sys.argv[2:]
    if name == "ssh":
        return ssh(args)
    log(name, args)
    if name == "pct":
        assert args[:3] == ["exec", "129", "--"], args
        return subprocess.run(args[3:], env={**os.environ, "FAKE_CT": args[1]}).returncode
    if name == "systemctl" and args[0] == "is-active":
        print("inactive")
        return 3
    if name == "systemctl" and args[0] == "show":
        print("NRestarts=0\nActiveState=activating\nSubState=start\nExecMainStatus=0")
    if name == "journalctl":
        print(f"Load weight end. mem usage={count('journal')} GB\n-- cursor: s=fake;i={count('cursor')}")
    if name == "fuser":
        (STATE / "gpus-freed").touch()
        print("/dev/nvidia0:  4242", file=sys.stderr)
    if name == "pkill":
        print("python3 killed (pid 4242)")
    if name == "nvidia-smi":
        print("\n".join(f"{i}, {2 if (STATE / 'gpus-freed').exists() else 88000}" for i in range(4)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
