"""Real OpenSSH servers in network namespaces, as stand-in remote hosts (loopback-free, private addresses).

Each `SshNode` is a namespace with a veth pair (`10.251.<n>.1` here, `10.251.<n>.2` inside) and an
`sshd -D` inside, key-only, with its own host key, authorized_keys and `SetEnv PATH=<bin>:...` so the
node's shell finds the fake tools in `<bin>` (nvidia-smi, pct) first. Only what this module started is
stopped (by pid), and the namespace is deleted (which removes the veth pair).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def available() -> str | None:
    """None when namespaces and sshd can be used here, else why not."""
    if os.geteuid() != 0:
        return "needs root for ip netns"
    if not Path(SSHD).exists() or shutil.which("ssh") is None or shutil.which("ip") is None:
        return "needs openssh-server, openssh-client and iproute2 (apt-get install -y openssh-server)"
    return None


def _sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


@dataclass
class SshNode:
    index: int
    folder: Path
    process: subprocess.Popen | None = None
    namespace: str = ""
    bin_dir: Path = field(default_factory=Path)

    @property
    def address(self) -> str:
        return f"10.251.{self.index}.2"

    def start(self, client_key: Path) -> None:
        self.namespace = f"llmval-{os.getpid()}-{self.index}"
        host_if, ns_if = f"lv{os.getpid() % 100000}h{self.index}", f"lv{os.getpid() % 100000}n{self.index}"
        self.bin_dir = self.folder / "bin"
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        _sh("ip", "netns", "add", self.namespace)
        _sh("ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if)
        _sh("ip", "link", "set", ns_if, "netns", self.namespace)
        _sh("ip", "addr", "add", f"10.251.{self.index}.1/24", "dev", host_if)
        _sh("ip", "link", "set", host_if, "up")
        for cmd in (["ip", "addr", "add", f"{self.address}/24", "dev", ns_if], ["ip", "link", "set", ns_if, "up"],
                    ["ip", "link", "set", "lo", "up"]):
            _sh("ip", "netns", "exec", self.namespace, *cmd)
        host_key = self.folder / "ssh_host_ed25519_key"
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key))
        (self.folder / "authorized_keys").write_text(Path(f"{client_key}.pub").read_text())
        config = self.folder / "sshd_config"
        config.write_text("\n".join([
            f"ListenAddress {self.address}", "Port 22", f"HostKey {host_key}",
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'}", "StrictModes no", "UsePAM no",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
            f"PidFile {self.folder / 'sshd.pid'}", "MaxSessions 50", "MaxStartups 50:30:100",
            "ClientAliveInterval 3", "ClientAliveCountMax 2",  # sessions of vanished clients end by themselves
            f"SetEnv PATH={self.bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        ]) + "\n")
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege-separation directory sshd insists on
        with open(self.folder / "sshd.log", "wb") as log:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(["ip", "netns", "exec", self.namespace, SSHD, "-D", "-e", "-f",
                                             str(config)], stdout=subprocess.DEVNULL, stderr=log)

    def close_masters(self, key: Path, config: Path) -> None:
        """Ask the ControlMaster this suite opened to this node to exit (its session on the node ends)."""
        from llmval.io.transport import control_path

        subprocess.run(["ssh", "-F", str(config), "-i", str(key), "-o", f"ControlPath={control_path()}", "-O", "exit",
                        f"root@{self.address}"], capture_output=True, timeout=15)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.namespace:
            subprocess.run(["ip", "netns", "del", self.namespace], capture_output=True, timeout=30)


def client_files(folder: Path) -> tuple[Path, Path]:
    """A client key and an ssh_config (own known_hosts, nothing written under ~/.ssh)."""
    key = folder / "id_ed25519"
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
    config = folder / "ssh_config"
    config.write_text(f"Host *\n  UserKnownHostsFile {folder / 'known_hosts'}\n  IdentitiesOnly yes\n"
                      "  LogLevel ERROR\n")
    return key, config


def wait_for_ssh(node: SshNode, key: Path, config: Path, timeout_s: float = 30) -> None:
    """Bounded: until `ssh node true` answers, or fail with sshd's log."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        if node.process is not None and node.process.poll() is not None:
            break
        done = subprocess.run(["ssh", "-F", str(config), "-i", str(key), "-o", "BatchMode=yes", "-o",
                               "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=2",
                               f"root@{node.address}", "true"], capture_output=True, text=True, timeout=15)
        if done.returncode == 0:
            return
        last = done.stderr.strip()
        time.sleep(0.3)
    log = (node.folder / "sshd.log").read_text(errors="replace")[-1500:]
    raise RuntimeError(f"sshd at {node.address} never answered: {last}\nsshd log:\n{log}")
