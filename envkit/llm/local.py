"""``LocalChatClient``: a local transformers checkpoint answering like a chat endpoint.

It has ``ChatClient``'s interface (``complete(messages)``, ``last_usage``, ``last_retries``,
``last_from_cache``, ``cache_scope``, ``close``), so an ``LLMAgent`` (and every player built on
one) plays with a checkpoint on disk, a trained one for instance, without a server. The prompt is
the tokenizer's chat template applied to the messages; the answer is generated greedily when the
settings' temperature is 0, else sampled from a ``torch.Generator`` seeded by ``seed``. Token
counts are exact (the prompt's and the answer's tokens). The answer is text: tool calling needs
a server that parses them, so ``settings.tool_calling`` is refused.

transformers and torch are imported when the client is made (the ``llm-rl`` extra).
"""

from __future__ import annotations

import os
from typing import Any

from envkit.llm.client import TokenUsage
from envkit.llm.settings import LLMSettings

__all__ = ["LocalChatClient"]


class LocalChatClient:
    """Answers chat messages with the checkpoint at ``path`` (a folder ``save_pretrained`` wrote,
    with its tokenizer and a chat template); nothing is downloaded.

    Args:
        path: the checkpoint's folder.
        settings: sampling (``temperature``; 0 is greedy) and ``max_tokens`` (new tokens).
        seed: seeds sampling, so the same seed gives the same answers.
    """

    def __init__(self, path: str | os.PathLike[str], settings: LLMSettings, seed: int = 0) -> None:
        if settings.tool_calling:
            raise ValueError("a local checkpoint answers in text: tool_calling is not supported")
        if not os.path.isdir(path):
            raise FileNotFoundError(f"no checkpoint folder at {os.fspath(path)!r}")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.settings, self.path = settings, os.fspath(path)
        self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(self.path, local_files_only=True)
        self.model.eval()
        self.generator = torch.Generator().manual_seed(seed)
        self.last_usage: TokenUsage | None = None
        self.last_retries = 0
        self.last_from_cache = False
        self.cache_scope = ""

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
    ) -> dict[str, Any]:
        """The assistant message for ``messages`` (``content`` only)."""
        import torch

        del tools, tool_choice  # refused in __init__: text answers only
        prompt: Any = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        sample = self.settings.temperature > 0
        options: dict[str, Any] = {"max_new_tokens": self.settings.max_tokens, "do_sample": sample}
        if sample:
            options["temperature"] = self.settings.temperature
        with torch.no_grad():
            torch.manual_seed(int(torch.randint(2**31, (1,), generator=self.generator)))
            output = self.model.generate(
                **prompt, pad_token_id=self.tokenizer.pad_token_id or 0, **options
            )
        prompt_length = prompt["input_ids"].shape[-1]
        answer = output[0, prompt_length:]
        text = self.tokenizer.decode(answer, skip_special_tokens=True)
        self.last_usage = TokenUsage(int(prompt_length), int(answer.shape[-1]))
        return {"role": "assistant", "content": text}

    def close(self) -> None:
        """Nothing to release but memory (kept until the client is dropped)."""
