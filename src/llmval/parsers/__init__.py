"""Pure parsers: host command output in, small frozen models out. No I/O, no pytest.

One source per module: `envelope` (what journald, `docker logs -t`, ANSI colour and Ray's forwarding wrap around
every log line: stripped before any log parser, kept as facts), `nvidia_smi` (CSV query, `-q -x`), `gpu_health`
(health fields of `-q -x` or of `-q` text, Xid and GSP lines), `nccl` (INFO log lines), `proxmox` (LXC/VM configs,
`lspci -k`, sysfs drivers, the node's device majors), `ip` (`ip -j addr`), `systemd` (`systemctl show`), `docker`
(`docker inspect`), `ray` (`ray list nodes|actors|jobs`, JSON or table; `ray status`),
`env` (environment blocks), `files` (listings and sha256 sums), `procs` (GPU holders).
Bad input raises `ParseError` naming the source and the offending excerpt.
"""
