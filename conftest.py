"""The root conftest only lists the suite's plugins (fixtures/); logic lives in src/llmval."""

pytest_plugins = [
    "fixtures.options",
    "fixtures.blockers",
    "fixtures.evidence",
    "fixtures.targets",
    "fixtures.hosts",
    "fixtures.hostfacts",
    "fixtures.serving",
    "fixtures.engine",
    "fixtures.launch",
    "fixtures.ready",
    "fixtures.reporting",
    "fixtures.accuracy",
    "fixtures.agentic",
    "fixtures.perf",
]
