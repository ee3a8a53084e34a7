"""The suite's plugins are registered by the `pytest11` entry point `llmval` (fixtures/, installed as
`llmval.pytest_plugin`), in this checkout through its editable install, as in any repository that installs llmval.
Logic lives in src/llmval."""
