"""Word lists the transcript builder draws from (plain constants; the builder's seed picks among them)."""

PACKAGES = ("ledger", "relay", "quarry", "harbor", "lattice", "beacon")
MODULES = ("shards", "router", "cache", "codec", "journal", "quota", "schema", "session", "batch", "index",
           "planner", "storage", "metrics", "auth", "retry", "pool")
SERVICES = ("api", "gateway", "scheduler", "ingest", "billing", "search", "notifier")
WORKERS = tuple(f"worker-{i}" for i in range(1, 10))
VERBS = ("fetch", "load", "store", "merge", "split", "resolve", "encode", "decode", "flush", "compact",
         "validate", "render", "publish", "reserve", "release", "rebuild", "prune", "scan")
NOUNS = ("shard", "record", "batch", "segment", "ticket", "lease", "token", "manifest", "snapshot", "chunk",
         "offset", "replica", "cursor", "bucket", "window", "entry")
PARAMS = (("path", "str", None), ("shard_id", "int", None), ("retries", "int", "3"), ("timeout_s", "float", "12.5"),
          ("strict", "bool", "False"), ("limit", "int", "100"), ("prefix", "str", '""'), ("dry_run", "bool", "True"),
          ("batch_size", "int", "64"), ("encoding", "str", '"utf-8"'), ("max_age_s", "int", "3600"),
          ("tags", "list[str] | None", "None"), ("on_error", "str", '"raise"'), ("workers", "int", "4"))
RETURNS = ("bytes", "int", "None", "bool", "list[str]", "dict[str, int]", "Iterator[bytes]", "str")
CONFIG_KEYS = ("request_timeout_ms", "max_inflight_requests", "retry_budget_ms", "shard_count", "cache_ttl_s",
               "pool_size", "queue_depth", "flush_interval_ms", "lease_renew_ms", "batch_window_ms",
               "max_payload_kib", "idle_timeout_s", "compaction_threshold", "replica_lag_ms")
ENV_NAMES = {key: key.upper() for key in CONFIG_KEYS}
BODY_LINES = ("result = []", "for item in items:", "    result.append(item)", "if not items:", "    return None",
              "logger.debug(\"done\")", "total += len(chunk)", "self._cache.clear()", "raise ValueError(name)",
              "with open(path, \"rb\") as handle:", "    data = handle.read()", "return result",
              "state = self._state.copy()", "offset = 0", "yield from self._iter()", "assert limit > 0")
LOG_MESSAGES = ("request served", "cache miss", "lease renewed", "batch flushed", "connection reset by peer, retrying",
                "slow query", "queue drained", "snapshot written", "config reloaded", "health check ok",
                "replica caught up", "compaction started", "compaction finished", "rate limit applied")
TASKS = ("The nightly deploy of the {package} service failed. Find out why and prepare the fix.",
         "Users report timeouts from the {package} service since yesterday. Investigate the repository and logs.",
         "Review the {package} repository before the release and record the facts the release notes need.")
