"""Model files are present and the same size on every node of a group (fast: a listing, no hashing)."""

import pytest

from llmval.hostfacts import compare_group, model_digests

pytestmark = [pytest.mark.hosts, pytest.mark.smoke]


@pytest.mark.needs("model_files")
def test_model_files_present(host, facts, hash_cache, expect):
    short = {}
    for spec in host.model_files:
        files = model_digests(facts, spec, hash_cache, with_hashes=False)
        if not files or sum(f.size for f in files) < (spec.min_bytes or 1):
            short[spec.path] = f"{len(files)} files, {sum(f.size for f in files)} bytes"
    expect(host.name, "hosts.model_files.present", expected={s.path: f">= {s.min_bytes or 1} bytes"
                                                             for s in host.model_files},
           observed=short or "all present", ok=not short,
           hint="copy the model onto this host (e.g. `rsync -a` from a host that holds it), then re-run")


def test_model_file_sizes_identical(model_group, facts_of, hash_cache, expect):
    verdict = compare_group([(h, facts_of(h.name), s) for h, s in model_group.members], hash_cache,
                            with_hashes=False)
    expect(verdict.subject, "hosts.model_files.sizes", expected=f"same files and sizes as {verdict.reference} "
           f"({verdict.files} files)", observed=verdict.differences or "identical", ok=verdict.ok,
           hint="re-copy the differing files from the reference node (rsync), then re-run")
