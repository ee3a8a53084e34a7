"""The verdict model: what a check concluded (`Verdict`, `Cause`), how a broken contract is worded (`contract`),
and why something could not be checked (the `errors` tree).

Everything else in llmval imports from here; this package imports nothing else of llmval, so a verdict means
the same wherever it is made or read.
"""
