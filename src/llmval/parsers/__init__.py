"""Pure parsers: host command output in, small frozen models out. No I/O, no pytest.

One source per module: `nvidia_smi` (CSV query, `-q -x`), `nccl` (INFO log lines), `proxmox`
(LXC/VM configs, `lspci -k`, sysfs drivers), `ip` (`ip -j addr`), `systemd` (`systemctl show`),
`docker` (`docker inspect`), `ray` (`ray list nodes --format json` / `ray.nodes()` JSON),
`env` (environment blocks), `files` (listings and sha256 sums), `procs` (GPU holders).
Bad input raises `ParseError` naming the source and the offending excerpt.
"""
