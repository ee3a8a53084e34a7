"""Named hypothesis strategies shared by the self-tests."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
SEED_INVENTORIES = sorted((ROOT / "inventories").glob("*.toml"))

JUNK_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True),
    st.text(max_size=20), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(),
                                                                                 max_size=2),
)


def _paths(node: object, prefix: tuple = ()) -> list[tuple]:
    """Every key path in a parsed TOML document (dict keys and list indexes)."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            found.append((*prefix, key))
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.append((*prefix, index))
            found += _paths(value, (*prefix, index))
    return found


def _parent(document: dict, path: tuple):
    node = document
    for part in path[:-1]:
        node = node[part]
    return node


@st.composite
def broken_inventories(draw) -> dict:
    """A seed inventory with one key deleted, retyped, or an unknown key added somewhere."""
    seed = draw(st.sampled_from(SEED_INVENTORIES))
    document = copy.deepcopy(tomllib.loads(seed.read_text()))
    paths = [p for p in _paths(document) if p != ("$schema",)]
    path = draw(st.sampled_from(paths))
    parent = _parent(document, path)
    action = draw(st.sampled_from(["delete", "retype", "add_unknown"]))
    if action == "delete":
        del parent[path[-1]]
    elif action == "retype":
        parent[path[-1]] = draw(JUNK_VALUES)
    else:
        target = parent[path[-1]] if isinstance(parent[path[-1]], dict) else parent
        if isinstance(target, list):
            target.append(draw(JUNK_VALUES))
        else:
            target[draw(st.text(min_size=1, max_size=12).filter(lambda k: k not in target))] = draw(JUNK_VALUES)
    return document


def malformed_toml_texts():
    """Text that is not valid TOML (or not text a human meant as TOML)."""
    return st.one_of(
        st.text(max_size=200).filter(lambda t: _is_bad_toml(t)),
        st.sampled_from(["[deployment\nname='x'", "a = ", "[[hosts]]\nname = 'a'\nname = 'b'", "x = [1, 2",
                         "\x00\x01", "= 1"]),
    )


def _is_bad_toml(text: str) -> bool:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return True
    return False


# --- the inventory fuzzer (issue 12.5): mutations of the three shipped inventories ---------------------------
SHIPPED_INVENTORIES = [ROOT / "inventories" / f"{name}.toml" for name in ("local", "kpro6", "spark")]
FUZZ_CANARY = "/tmp/llmval-fuzz-canary"
FUZZ_VALUES: list[object] = [
    "", " ", "-delete", "--privileged", "--host=evil", "-oProxyCommand=touch " + FUZZ_CANARY,
    f"x;touch {FUZZ_CANARY};y", "$(touch " + FUZZ_CANARY + ")", "a\x00b", "\x1b[2J\x1b[31mred", "line\nbreak",
    "é✓𝔘\u202etxt", "\ufeffbom", "../../etc/passwd", "prod/../x", "a.b", "http:///v1", "http://u:p@127.0.0.1:1",
    "http://127.0.0.1:0", "https://[::1]:65536", "kind:x", "file:relative", "docker:", "systemd:-x", "process:",
    "launch", "x" * 300, "y" * 70_000, 0, -1, 1, 2**31, 2**63 - 1, 2**64, -(2**64), 0.0, 5.0, -0.5, 1e308,
    float("inf"), float("-inf"), float("nan"), True, False, [], {}, [1, "a"], {"k": "v"}, {"": 1},
]


def _fuzz_value(rng) -> object:
    value = rng.choice(FUZZ_VALUES)
    if rng.random() < 0.1:  # a random unicode string, control characters included
        value = "".join(chr(rng.choice([rng.randrange(0, 0x80), rng.randrange(0x80, 0x3000),
                                        rng.randrange(0x10000, 0x10FFFF)])) for _ in range(rng.randrange(1, 12)))
    if isinstance(value, str) and 0xD800 <= max((ord(c) for c in value), default=0) <= 0xDFFF:
        value = "surrogate"
    return copy.deepcopy(value)


def mutate_inventory(document: dict, rng) -> dict:
    """One to three structural mutations of a parsed inventory: retype, delete, duplicate, add a key."""
    for _ in range(rng.randrange(1, 4)):
        paths = [p for p in _paths(document) if p != ("$schema",)]
        if not paths:
            break
        path = rng.choice(paths)
        parent = _parent(document, path)
        action = rng.choice(["retype", "retype", "delete", "duplicate", "add_unknown"])
        if action == "retype":
            parent[path[-1]] = _fuzz_value(rng)
        elif action == "delete":
            del parent[path[-1]]
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
        elif isinstance(parent, dict):
            parent[rng.choice(["colour", "api_key", "x" * 300, "é"])] = _fuzz_value(rng)
    return document


def damage_toml(text: str, rng) -> bytes:
    """TOML-level damage: truncation, a stray byte, a BOM, a repeated line, deep nesting, or none."""
    action = rng.choice(["none", "none", "truncate", "insert", "bom", "repeat_line", "deep", "invalid_utf8"])
    lines = text.splitlines(keepends=True)
    if action == "truncate":
        text = text[: rng.randrange(len(text) + 1)]
    elif action == "insert":
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice(["\x00", "[", "]", "=", '"', "\n[[", "\x1b", "\\"]) + text[at:]
    elif action == "bom":
        text = "\ufeff" + text
    elif action == "repeat_line" and lines:
        at = rng.randrange(len(lines))
        lines.insert(at, lines[at])
        text = "".join(lines)
    elif action == "deep":
        depth = rng.choice([20, 300, 700])
        text = f"deep = {'[' * depth}{']' * depth}\n" + text
    raw = text.encode("utf-8", "surrogatepass")
    return raw.replace(b"=", b"=\xff", 1) if action == "invalid_utf8" else raw


def fuzzed_inventory_bytes(rng) -> bytes:
    """A shipped inventory, mutated, written as TOML, perhaps damaged at the text level."""
    import tomli_w

    seed = rng.choice(SHIPPED_INVENTORIES)
    document = mutate_inventory(tomllib.loads(seed.read_text()), rng)
    try:
        text = tomli_w.dumps(document)
    except (TypeError, ValueError):  # a mutation TOML cannot express (an empty key path): keep the seed text
        text = seed.read_text()
    return damage_toml(text, rng)


def fuzzed_inventories():
    """Bytes of a damaged inventory file, driven by hypothesis' own random source (so failures replay)."""
    return st.randoms(use_true_random=False).map(fuzzed_inventory_bytes)


def sigint_as_in_a_terminal() -> None:
    """`preexec_fn` for a child the test interrupts with SIGINT: its default action back. A job started in the
    background by a non-interactive shell (`cmd &`, as a CI runner may start `.ci/run`) inherits SIGINT ignored,
    and Python then installs no KeyboardInterrupt handler, so the child would never see the signal the test sends
    (seen: three SIGINT self-tests timed out in a `nohup .ci/run &` run, 2026-12-02)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
