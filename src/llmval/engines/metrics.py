"""Prometheus `/metrics` text, parsed with prometheus_client's own parser (never with regexes).

    >>> m = parse_metrics('vllm:cache_config_info{cache_dtype="auto",engine="0"} 1.0\\n')
    >>> m.labels("vllm:cache_config_info")[0]["cache_dtype"]
    'auto'
"""

from __future__ import annotations

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


def parse_metrics(text: str, source: str = "/metrics") -> Metrics:
    """Parse Prometheus text exposition; raise ParseError naming the source on malformed input."""
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
