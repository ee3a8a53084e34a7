"""Verdicts about the GPUs from read-only host evidence: DCGM-style health watches (`health`) and who holds
the GPUs (`holders`: serving processes, strays, zombie workers whose server is gone).

Pure: takes what `llmval.parsers` made of nvidia-smi, fuser, ps and the kernel log; the reads themselves are
declared in `llmval.hostfacts`. May import `llmval.core` and `llmval.parsers`.
"""

from .health import NotReported

__all__ = ["NotReported"]
