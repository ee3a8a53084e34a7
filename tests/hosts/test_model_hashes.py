"""Model files are byte-identical (sha256) on every node of a group. Nightly, not smoke: the first run
hashes everything (119 GB on Spark); later runs hash only files whose size or mtime changed."""

import pytest

from llmval.hostfacts import compare_group

pytestmark = [pytest.mark.hosts]


def test_model_files_identical(model_group, facts_of, hash_cache, expect):
    verdict = compare_group([(h, facts_of(h.name), s) for h, s in model_group.members], hash_cache, with_hashes=True)
    expect(verdict.subject, "hosts.model_files.sha256", expected=f"byte-identical to {verdict.reference} "
           f"({verdict.files} files)", observed=verdict.differences or "identical", ok=verdict.ok,
           hint="re-copy the differing files from the reference node (`rsync -c`), then re-run")
