"""The verdict model: what a check concluded (`Verdict`, `Cause`), how a broken contract is worded (`contract`),
why something could not be checked (the `errors` tree), and which of an inventory's values are secrets that no
output may hold (`secrets`).

Everything else in llmval imports from here; this package imports nothing else of llmval, so a verdict means
the same wherever it is made or read.
"""
