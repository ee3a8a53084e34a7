"""`llmval init [DIR] --platform <engine kind>`: scaffold an ops repo that uses llmval.

Writes `inventory.toml` (a valid minimal inventory, every other key commented), `pytest.ini` (its
`llmval_inventory` setting, so a bare `pytest` runs the team's tests and the contract), `.github/workflows/llmval.yml`
(smoke on push, the full contract nightly, from a self-hosted runner) and `systemd/llmval-smoke@.{service,timer}`
(smoke after every boot, waiting for the stack with `--wait-ready`; template units whose instance is the repo's
path, so nothing of the writing machine is hard-coded). It never overwrites a file: where the folder already has a
pytest configuration, it says which line to add there instead of writing pytest.ini.

The workflow and the unit install llmval as this llmval was installed, pinned (`install_requirement`, from the
PEP 610 `direct_url.json` pip writes): a git URL at its commit, a wheel by its sha256, a local checkout at its
git commit, or `pytest-llmval==<version>` from a package index.

    >>> sorted(PLATFORMS)
    ['openai', 'sglang', 'vllm']
    >>> install_requirement({"url": "https://github.com/o/llmval", "vcs_info": {"vcs": "git", "commit_id": "ab12"}},
    ...                     "0.1.0")
    'pytest-llmval @ git+https://github.com/o/llmval@ab12'
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
}
"""Written path (relative to DIR) -> template (package data `llmval/templates/`)."""
INI_SETTING = "llmval_inventory = inventory.toml"
"""What turns the contract on for every pytest run of the ops repo (pytest.ini, or the folder's own config)."""


class InitRefused(Exception):
    """`llmval init` would overwrite a file, or got a name it cannot use."""


def deployment_name(folder: Path) -> str:
    """The deployment's name from the folder's name, as the inventory allows it (`ops repo` -> `ops-repo`)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", folder.resolve().name).strip("-_")[:64]
    return name or "deployment"


def install_requirement(direct_url: dict | None, version: str) -> str:
    """The pip requirement that installs this llmval again, pinned, from PEP 610's `direct_url.json` (None: it
    came from a package index). A local checkout is pinned to its git commit where it is one (`git_commit`)."""
    if direct_url is None:
        return f"{DISTRIBUTION}=={version}"
    url = str(direct_url.get("url", ""))
    vcs = direct_url.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("commit_id"):
        return f"{DISTRIBUTION} @ {vcs.get('vcs', 'git')}+{url}@{vcs['commit_id']}"
    archive = direct_url.get("archive_info")
    if isinstance(archive, dict):
        hashes = archive.get("hashes") or {}
        pin = f"#sha256={hashes['sha256']}" if isinstance(hashes, dict) and hashes.get("sha256") else ""
        return f"{DISTRIBUTION} @ {url}{pin}"
    if url.startswith("file://") and (commit := git_commit(Path(unquote(urlparse(url).path)))):
        return f"{DISTRIBUTION} @ git+{url}@{commit}"
    return f"{DISTRIBUTION} @ {url}"


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


def installed_requirement() -> str:
    """`install_requirement` of the llmval that runs now."""
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        text = None
    try:
        direct_url = read_json(text, "direct_url.json") if text else None
    except ParseError:
        direct_url = None
    return install_requirement(direct_url if isinstance(direct_url, dict) else None, __version__)


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


def render(template: str, platform: str, folder: Path, install: str = "") -> str:
    """One template filled in (`$name`, `$engine`, `$model`, `$base_url`, `$install`; GitHub's `${{ }}` kept). No
    absolute path of `folder` goes in: the files are committed and used on other machines."""
    chosen = PLATFORMS[platform]
    text = (resources.files("llmval") / "templates" / template).read_text(encoding="utf-8")
    return string.Template(text).safe_substitute(name=deployment_name(folder), engine=chosen.engine,
                                                 model=chosen.model, base_url=chosen.base_url,
                                                 install=shlex.quote(install or installed_requirement()))


def scaffold(folder: Path, platform: str) -> list[Path]:
    """Write the ops-repo files into `folder`; InitRefused (nothing written) if any of them exists, as a file or a
    link (a dangling one too), or if a folder on the way is a link or no folder. Where the folder has a pytest
    configuration of its own, pytest.ini is not written (`pytest_config_of` says where the setting goes).

    Every target is checked before anything is written; each file is then written whole under a temporary name
    and linked into place (`_write_inside`), through folder descriptors opened without following links, so no
    write lands outside `folder` and none replaces a file made meanwhile (issue 45.5)."""
    if platform not in PLATFORMS:
        raise InitRefused(f"unknown platform {platform!r}; valid: {sorted(PLATFORMS)}")
    _check_folder(folder)
    own_config = pytest_config_of(folder)
    targets = {folder / rel: template for rel, template in FILES.items()
               if not (rel == "pytest.ini" and own_config is not None)}
    problems = [problem for path in targets for problem in _target_problems(folder, path)]
    if problems:
        raise InitRefused("llmval init never overwrites nor writes through a link: "
                          + "; ".join(dict.fromkeys(problems)))
    install = installed_requirement()
    texts = {path.relative_to(folder): render(template, platform, folder, install).encode("utf-8")
             for path, template in targets.items()}
    _write_inside(folder, texts)
    return list(targets)


def _check_folder(folder: Path) -> None:
    """DIR itself: a folder (followed if a link: the user named it), made when missing; InitRefused otherwise."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InitRefused(f"{folder} is not a folder") from None
    except OSError as error:
        raise InitRefused(f"{folder} cannot be made a folder: {error.strerror or error}") from None
    try:
        folder.resolve(strict=True)
    except (OSError, RuntimeError) as error:  # a link that loops (RuntimeError before Python 3.13)
        raise InitRefused(f"{folder} cannot be followed: {error}") from None


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
