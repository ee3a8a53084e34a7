"""Prometheus `/metrics` text, parsed with prometheus_client's own parser (never with regexes).

    >>> m = parse_metrics('vllm:cache_config_info{cache_dtype="auto",engine="0"} 1.0\\n')
    >>> m.labels("vllm:cache_config_info")[0]["cache_dtype"]
    'auto'

A scrape is read once and only for the families an adapter reads: `families` keeps their lines (and
their `# TYPE`/`# HELP` lines) in one regular-expression pass over the text, the rest never becomes a Sample; at
most `MAX_SERIES` samples are kept. Before: a 60 MiB scrape of a million series took 48 s and 1.4 GB, parsed whole.

    >>> parse_metrics('vllm:a 1\\nother{x="1"} 2\\n', families={"vllm:a"}).names
    {'vllm:a'}
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from ..core.errors import ParseError


@dataclass(frozen=True)
class Sample:
    """One sample line: full name (with `_total`/`_bucket` suffix), labels, value."""

    name: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class Metrics:
    """All samples of one scrape, looked up by sample name."""

    samples: tuple[Sample, ...] = field(default_factory=tuple)

    def find(self, name: str, **labels: str) -> list[Sample]:
        """Samples called `name` (exact sample name, or the family name of a counter) matching `labels`."""
        names = {name, f"{name}_total"}
        return [s for s in self.samples if s.name in names
                and all(s.labels.get(k) == v for k, v in labels.items())]

    def has(self, name: str) -> bool:
        return bool(self.find(name))

    def total(self, name: str, **labels: str) -> float | None:
        """Sum of the matching samples (a counter over all its label sets); None when absent."""
        found = self.find(name, **labels)
        return sum(s.value for s in found) if found else None

    def labels(self, name: str) -> list[dict[str, str]]:
        """Label sets of an `*_info`-style gauge (e.g. vllm:cache_config_info)."""
        return [s.labels for s in self.find(name)]

    @property
    def names(self) -> set[str]:
        return {s.name for s in self.samples}


MAX_SERIES = 10_000
"""The most samples kept of one scrape, of the families read: a real scrape has tens (a data-parallel engine a few
hundred: one per engine and label set); past it the scrape is refused (ParseError naming it), not read in part."""
MAX_LINE_CHARS = 64 * 2**10
"""The longest line kept: 64 KiB (a real sample line, labels and all, is under 1 KiB)."""
SUFFIXES = ("_total", "_created", "_info", "_bucket", "_count", "_sum", "_gcount", "_gsum")
"""What Prometheus adds to a family's name in its sample lines (a counter's `_total`, a histogram's `_bucket`)."""


def _family_lines(families: Iterable[str]) -> re.Pattern[str]:
    names = "|".join(re.escape(name) for name in sorted(set(families), key=len, reverse=True))
    suffixes = "|".join(SUFFIXES)
    return re.compile(rf"^(?:# (?:TYPE|HELP) )?(?:{names})(?:{suffixes})?(?=[{{ \t]).*$", re.M)


def kept_lines(text: str, families: Iterable[str], source: str = "/metrics") -> str:
    """The lines of `text` that belong to `families` (samples, and their `# TYPE`/`# HELP` lines, so counters stay
    counters), read in one pass without splitting the rest into lines; ParseError past `MAX_SERIES` samples."""
    kept: list[str] = []
    series = 0
    for match in _family_lines(families).finditer(text):
        line = match.group()
        if len(line) > MAX_LINE_CHARS:
            raise ParseError(source, f"a line of {len(line)} characters, over the {MAX_LINE_CHARS} the suite reads "
                             "(refused, not read in part)", line[:200])
        if not line.startswith("#"):
            series += 1
            if series > MAX_SERIES:
                raise ParseError(source, f"over {MAX_SERIES} series of the families the suite reads (refused, not "
                                 f"read in part; {len(text)} characters)", line)
        kept.append(line)
    return "\n".join(kept) + "\n"


def parse_metrics(text: str, source: str = "/metrics", *, families: Iterable[str] | None = None) -> Metrics:
    """Parse Prometheus text exposition, only the lines of `families` when given (`kept_lines`); ParseError naming
    the source on malformed input or past `MAX_SERIES` samples."""
    if families is not None:
        text = kept_lines(text, families, source)
    elif text.count("\n") > 3 * MAX_SERIES:  # each series a line, each family two comment lines at most
        raise ParseError(source, f"over {3 * MAX_SERIES} lines (refused, not read in part; {len(text)} characters)")
    try:
        samples = tuple(
            Sample(s.name, dict(s.labels), float(s.value))
            for family in text_string_to_metric_families(text)
            for s in family.samples
        )
    except (ValueError, TypeError, IndexError) as error:
        raise ParseError(source, f"not Prometheus text: {error}", text[:200]) from None
    return Metrics(samples)


def delta(before: Metrics, after: Metrics, name: str, **labels: str) -> float | None:
    """How much a counter grew between two scrapes; None when it is absent from either."""
    start, end = before.total(name, **labels), after.total(name, **labels)
    if start is None or end is None:
        return None
    return end - start
