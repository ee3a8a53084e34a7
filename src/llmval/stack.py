"""Kept for imports written before `llmval.launch` existed; use `llmval.launch`."""

from .launch import BackgroundProcess, Stack, http_ok

__all__ = ["BackgroundProcess", "Stack", "http_ok"]
