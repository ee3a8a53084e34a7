"""`llmval init [DIR] --engine <engine kind>`: scaffold an ops repo that uses llmval.

Writes `inventory.toml` (a valid minimal inventory, every other key commented), `pytest.ini` (its
`llmval_inventory` setting, so a bare `pytest` runs the team's tests and the contract), `.github/workflows/llmval.yml`
(smoke on push, the full contract nightly, from a self-hosted runner) and `systemd/llmval-smoke@.{service,timer}`
(smoke after every boot, waiting for the stack with `--wait-ready`; template units whose instance is the repo's
path, so nothing of the writing machine is hard-coded), each run writing its Prometheus textfile
(`--prometheus-textfile`, into node_exporter's textfile folder) and, when it fails, starting
`systemd/llmval-notify@.service` (its `OnFailure=`). It never overwrites a file: where the folder already has a
pytest configuration, it says which line to add there instead of writing pytest.ini.

The workflow and the unit install llmval as this llmval was installed, pinned (`install_requirement`, from the
PEP 610 `direct_url.json` pip writes): a git URL at its commit, a wheel by its sha256, a local checkout at its
git commit, or `pytest-llmval==<version>` from a package index. The line is one pip 23.0 and later accept (Debian 12
and Proxmox VE 8 ship pip 23.0.1; Python 3.11's venv brings 23.2.1): their packaging 21.3 refuses a `name @ URL`
whose URL names no host (`git+file:///...`: "Invalid requirement ... It looks like a path"), so such a source is
written as pip's own URL form with `#egg=<name>`. A source that is a path on this machine (`file://`) is said
so, at init and in the written files (a CI runner elsewhere cannot see it), with the checkout's git remote at the
same commit as the line to use instead, where the checkout has one (`InstallSource`).

    >>> sorted(PLATFORMS)
    ['openai', 'sglang', 'vllm']
    >>> install_requirement({"url": "https://github.com/o/llmval", "vcs_info": {"vcs": "git", "commit_id": "ab12"}},
    ...                     "0.1.0")
    'pytest-llmval @ git+https://github.com/o/llmval@ab12'
    >>> install_requirement({"url": "file:///srv/llmval", "vcs_info": {"vcs": "git", "commit_id": "ab12"}}, "0.1.0")
    'git+file:///srv/llmval@ab12#egg=pytest-llmval'
    >>> install_requirement(None, "0.1.0")
    'pytest-llmval==0.1.0'
"""

from __future__ import annotations

import configparser
import contextlib
import os
import re
import shlex
import stat
import string
import subprocess
import tomllib
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from urllib.parse import unquote, urlparse

from .. import DISTRIBUTION, __version__
from ..core.errors import ParseError
from ..core.jsontext import read_json
from ..engines import ADAPTERS


@dataclass(frozen=True)
class Platform:
    engine: str
    base_url: str
    model: str


PLATFORMS: dict[str, Platform] = {kind: Platform(kind, f"http://127.0.0.1:{adapter.default_port}", "your-model")
                                  for kind, adapter in ADAPTERS.items()}
"""One per engine of the adapter registry, at the engine's default port."""

FILES: dict[str, str] = {
    "inventory.toml": "inventory.toml",
    "pytest.ini": "pytest.ini",
    ".github/workflows/llmval.yml": "workflow.yml",
    "systemd/llmval-smoke@.service": "llmval-smoke@.service",
    "systemd/llmval-smoke@.timer": "llmval-smoke@.timer",
    "systemd/llmval-notify@.service": "llmval-notify@.service",
    ".gitignore": "gitignore",
}
"""Written path (relative to DIR) -> template (package data `llmval/templates/`)."""
OPTIONAL = (".gitignore",)
"""Written only where the folder has none (an existing repo's own is left as it is, and is no reason to refuse):
without it `git add -A` in a new ops repo took the venv inside it and every run's reports."""
INI_SETTING = "llmval_inventory = inventory.toml"
"""What turns the contract on for every pytest run of the ops repo (pytest.ini, or the folder's own config)."""


class InitRefused(Exception):
    """`llmval init` would overwrite a file, or got a name it cannot use."""


def deployment_name(folder: Path) -> str:
    """The deployment's name from the folder's name, as the inventory allows it (`ops repo` -> `ops-repo`)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", folder.resolve().name).strip("-_")[:64]
    return name or "deployment"


@dataclass(frozen=True)
class InstallSource:
    """Where the pinned install line takes llmval from."""

    requirement: str
    """The pip requirement, as `pip install` takes it (pip >= 23.0)."""
    local_path: Path | None = None
    """The source is this path of the machine that ran init (a `file://` URL): other machines cannot install it."""
    remote_requirement: str = ""
    """The same commit from the checkout's git remote, where it has one: the line to use on other machines."""

    def note(self) -> str:
        """One line for the written files and init's output: where the line installs from, and what to do when
        that is a path of this machine."""
        if self.local_path is None:
            return "installs from a package index or a URL any machine with access can reach"
        fix = (f"push that commit and use `pip install {shlex.quote(self.remote_requirement)}` (the checkout's git "
               "remote)" if self.remote_requirement else
               "publish llmval where the runner can reach it (a git server, a wheel on an index) and change the line")
        return (f"installs from {self.local_path}, a path on the machine that ran `llmval init`: a CI runner or "
                f"host without that path cannot install it; {fix}")


def requirement_of(url: str) -> str:
    """`pytest-llmval @ <url>` (PEP 508), or, for a URL that names no host other than a plain `file:` one
    (`git+file:///srv/llmval@<sha>`), pip's URL form `<url>#egg=pytest-llmval`: pip 23's packaging (21.3) refuses
    a `name @ URL` without a host ("Invalid URL"), pip 24 and 25 take either form.

    >>> requirement_of("file:///srv/llmval")
    'pytest-llmval @ file:///srv/llmval'
    """
    parts = urlparse(url)
    if not parts.netloc and parts.scheme != "file":
        return f"{url}#egg={DISTRIBUTION}"
    return f"{DISTRIBUTION} @ {url}"


def install_source(direct_url: dict | None, version: str) -> InstallSource:
    """The pinned install line of the llmval that PEP 610's `direct_url.json` describes (None: it came from a package
    index). A local checkout is pinned to its git commit where it is one (`git_commit`)."""
    if direct_url is None:
        return InstallSource(f"{DISTRIBUTION}=={version}")
    url = str(direct_url.get("url", ""))
    local = Path(unquote(urlparse(url).path)) if urlparse(url).scheme == "file" else None
    vcs = direct_url.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("commit_id"):
        commit = str(vcs["commit_id"])
        return InstallSource(requirement_of(f"{vcs.get('vcs', 'git')}+{url}@{commit}"), local,
                             remote_requirement(local, commit) if local else "")
    archive = direct_url.get("archive_info")
    if isinstance(archive, dict):
        hashes = archive.get("hashes") or {}
        pin = f"#sha256={hashes['sha256']}" if isinstance(hashes, dict) and hashes.get("sha256") else ""
        return InstallSource(requirement_of(f"{url}{pin}"), local)
    if local is not None and (commit := git_commit(local)):
        return InstallSource(requirement_of(f"git+{url}@{commit}"), local, remote_requirement(local, commit))
    return InstallSource(requirement_of(url), local)


def install_requirement(direct_url: dict | None, version: str) -> str:
    """The pip requirement that installs this llmval again, pinned (`install_source`)."""
    return install_source(direct_url, version).requirement


def remote_requirement(checkout: Path, commit: str) -> str:
    """`pytest-llmval @ git+<remote>@<commit>` for the checkout's git remote (`origin`, else its first), as a URL
    pip takes (`git@host:o/r.git` becomes `ssh://git@host/o/r.git`); "" where it has none."""
    try:
        names = subprocess.run(["git", "-C", str(checkout), "remote"], capture_output=True, text=True, timeout=10)
        remotes = names.stdout.split() if names.returncode == 0 else []
        if not remotes:
            return ""
        name = "origin" if "origin" in remotes else remotes[0]
        found = subprocess.run(["git", "-C", str(checkout), "remote", "get-url", name], capture_output=True,
                               text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    remote = found.stdout.strip() if found.returncode == 0 else ""
    if scp := re.fullmatch(r"(?P<user>[\w.-]+@)?(?P<host>[\w.-]+):(?!//)(?P<path>.+)", remote):
        remote = f"ssh://{scp['user'] or ''}{scp['host']}/{scp['path'].lstrip('/')}"
    if not urlparse(remote).netloc:  # another path of this machine (or nothing): no better than the checkout
        return ""
    return requirement_of(f"git+{remote}@{commit}")


def git_commit(folder: Path) -> str | None:
    """The commit checked out in `folder` when it is a git work tree with nothing uncommitted, else None."""
    try:
        head = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        dirty = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0 or dirty.returncode != 0 or dirty.stdout.strip():
        return None
    return head.stdout.strip() or None


def installed_source() -> InstallSource:
    """`install_source` of the llmval that runs now."""
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        text = None
    try:
        direct_url = read_json(text, "direct_url.json") if text else None
    except ParseError:
        direct_url = None
    return install_source(direct_url if isinstance(direct_url, dict) else None, __version__)


def pytest_config_of(folder: Path) -> Path | None:
    """The file of `folder` pytest would read its settings from, if one is there (pytest's own order)."""
    for name in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"):
        if (folder / name).is_file():
            return folder / name
    try:
        pyproject = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        pyproject = {}
    if "pytest" in pyproject.get("tool", {}):
        return folder / "pyproject.toml"
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(folder / name, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        if parser.has_section(section):
            return folder / name
    return None


def render(template: str, platform: str, folder: Path, install: InstallSource | None = None) -> str:
    """One template filled in (`$name`, `$engine`, `$engines` (the registry's kinds: the choices the inventory
    takes), `$model`, `$base_url`, `$install`, `$install_note`; GitHub's `${{ }}` kept). No absolute path of
    `folder` goes in: the files are committed and used on other machines."""
    chosen = PLATFORMS[platform]
    install = install or installed_source()
    text = (resources.files("llmval") / "templates" / template).read_text(encoding="utf-8")
    return string.Template(text).safe_substitute(name=deployment_name(folder), engine=chosen.engine,
                                                 engines=" | ".join(PLATFORMS),
                                                 model=chosen.model, base_url=chosen.base_url,
                                                 install=shlex.quote(install.requirement),
                                                 install_note=install.note())


def scaffold(folder: Path, platform: str) -> list[Path]:
    """Write the ops-repo files into `folder`; InitRefused (nothing written) if any of them exists, as a file or a
    link (a dangling one too), or if a folder on the way is a link or no folder. Where the folder has a pytest
    configuration of its own, pytest.ini is not written (`pytest_config_of` says where the setting goes); where it
    has a .gitignore, none is written (`OPTIONAL`).

    Every target is checked before anything is written; each file is then written whole under a temporary name
    and linked into place (`_write_inside`), through folder descriptors opened without following links, so no
    write lands outside `folder` and none replaces a file made meanwhile (an ops repo's `.github` linked
    elsewhere, a file another `init` wrote in between)."""
    if platform not in PLATFORMS:
        raise InitRefused(f"unknown platform {platform!r}; valid: {sorted(PLATFORMS)}")
    _check_folder(folder)
    own_config = pytest_config_of(folder)
    targets = {folder / rel: template for rel, template in FILES.items()
               if not (rel == "pytest.ini" and own_config is not None)
               and not (rel in OPTIONAL and ((folder / rel).exists() or (folder / rel).is_symlink()))}
    problems = [problem for path in targets for problem in _target_problems(folder, path)]
    if problems:
        raise InitRefused("llmval init never overwrites nor writes through a link: "
                          + "; ".join(dict.fromkeys(problems)))
    install = installed_source()
    texts = {path.relative_to(folder): render(template, platform, folder, install).encode("utf-8")
             for path, template in targets.items()}
    _write_inside(folder, texts)
    return list(targets)


def _check_folder(folder: Path) -> None:
    """DIR itself: a folder (followed if a link: the user named it), made when missing; InitRefused otherwise."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InitRefused(f"{folder} is not a folder (a file, or a link that loops or leads to no folder): "
                          "name the ops repository's folder (llmval init DIR)") from None
    except OSError as error:
        raise InitRefused(f"{folder} cannot be made a folder: {error.strerror or error}; name a folder this user "
                          "can create or write, or make it first") from None
    try:
        folder.resolve(strict=True)
    except (OSError, RuntimeError) as error:  # a link that loops (RuntimeError before Python 3.13)
        raise InitRefused(f"{folder} cannot be followed: {error}; name the folder itself, not a link that loops or "
                          "leads nowhere") from None


def _target_problems(folder: Path, path: Path) -> list[str]:
    """What stops `path` (under `folder`) from being written there and only there: a folder on the way that is a
    link or a file, or the path itself existing in any form (lstat: a dangling link exists)."""
    problems = []
    for part in reversed(path.relative_to(folder).parents[:-1]):  # .github, .github/workflows, systemd
        try:
            mode = os.lstat(folder / part).st_mode
        except FileNotFoundError:
            break
        if stat.S_ISLNK(mode):
            return [f"{folder / part} is a symlink (to {os.readlink(folder / part)}), not a folder"]
        if not stat.S_ISDIR(mode):
            return [f"{folder / part} is a file, not a folder"]
    else:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return problems
        what = f"a symlink (to {os.readlink(path)})" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) \
            else "a file"
        problems.append(f"{path} already exists ({what})")
    return problems


def _write_inside(folder: Path, texts: dict[Path, bytes]) -> None:
    """Write each relative path's bytes under `folder`, whole or not at all: folders made one by one and opened
    with O_NOFOLLOW, each file written to a temporary name and hard-linked to its own (which fails if anything
    took the name). On any failure what this call made is removed again and InitRefused names the path."""
    made: list[tuple[int, str, bool]] = []  # (folder fd, name, is_folder), in the order made
    fds: list[int] = []
    try:
        root = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        fds.append(root)
        for relative, data in texts.items():
            at = root
            for name in relative.parts[:-1]:
                try:
                    os.mkdir(name, 0o755, dir_fd=at)
                    made.append((at, name, True))
                except FileExistsError:
                    pass
                at = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=at)  # a link: ELOOP
                fds.append(at)
            temporary = f".{relative.name}.llmval-init-{os.getpid()}"
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=at)
            try:
                made.append((at, temporary, False))
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.link(temporary, relative.name, src_dir_fd=at, dst_dir_fd=at, follow_symlinks=False)
            made.append((at, relative.name, False))
            os.unlink(temporary, dir_fd=at)
            made.remove((at, temporary, False))
    except OSError as error:
        for at, name, is_folder in reversed(made):  # nothing half-done is left behind
            with contextlib.suppress(OSError):
                if is_folder:
                    os.rmdir(name, dir_fd=at)
                else:
                    os.unlink(name, dir_fd=at)
        where = f" ({error.filename})" if error.filename else ""
        raise InitRefused(f"cannot write into {folder}{where}: {error.strerror or error}; nothing was written") \
            from None
    finally:
        for fd in fds:
            os.close(fd)
