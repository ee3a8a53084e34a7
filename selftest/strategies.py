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
