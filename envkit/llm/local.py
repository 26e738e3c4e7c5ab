"""``LocalChatClient``: a local transformers checkpoint answering like a chat endpoint.

It has ``ChatClient``'s interface (``complete(messages)``, ``last_usage``, ``last_retries``,
``last_from_cache``, ``cache_scope``, ``close``), so an ``LLMAgent`` (and every player built on
one) plays with a checkpoint on disk, a trained one for instance, without a server. The prompt is
the tokenizer's chat template applied to the messages; the answer is generated greedily when the
settings' temperature is 0, else sampled from a ``torch.Generator`` seeded by ``seed``. Token
counts are exact (the prompt's and the answer's tokens).

With ``settings.tool_calling`` the tools are rendered into the prompt by the chat template and the
answer's tool calls are parsed the way TRL's ``GRPOTrainer`` parses them in training
(``trl.chat_template_utils.parse_response``), so a checkpoint trained on a tool env is rated on
the same format it learnt. That needs a chat template TRL recognises (Qwen2.5/3, Llama 3.x, ...)
or a response parser the tokenizer already has.

``local_settings`` reads the options the ``hf:PATH`` players share (``LOCAL_OPTIONS``).
transformers and torch (and trl, for tool calls) are imported when the client is made (the
``llm-rl`` extra).
"""

from __future__ import annotations

import os
from typing import Any

from envkit.llm.client import TokenUsage
from envkit.llm.settings import LLMSettings
from envkit.player_spec import PlayerSpec

__all__ = ["LOCAL_OPTIONS", "LocalChatClient", "local_settings"]

LOCAL_OPTIONS = ("temperature", "max_tokens", "seed", "tool_calling")
"""The options every ``hf:PATH`` player takes: sampling (``temperature``, default 0: greedy),
``max_tokens`` (new tokens per answer), ``seed`` (of sampling) and ``tool_calling`` (answer
through a tool, as a model trained with ``training.llm_rl`` does)."""


def local_settings(
    spec: PlayerSpec, *, system_prompt: str, max_tokens: int
) -> tuple[LLMSettings, int]:
    """The settings and sampling seed of ``spec`` (``hf:PATH?...``); a bad value of one of
    ``LOCAL_OPTIONS`` is the spec's error naming the key. The caller checks which keys its kind
    takes (``PlayerSpec.reject_extras``); ``max_tokens`` is the default of that option.

    Example:
        >>> from envkit.player_spec import parse_spec
        >>> spec = parse_spec("hf:runs/ckpt?tool_calling=yes&seed=3", ["hf"])
        >>> settings, seed = local_settings(spec, system_prompt="Play.", max_tokens=32)
        >>> settings.model_name, settings.temperature, settings.tool_calling, seed
        ('runs/ckpt', 0.0, True, 3)
    """
    if not spec.argument:
        raise spec.error("expected hf:PATH, a local checkpoint's folder")
    settings = LLMSettings(
        name=spec.argument[-50:],
        model_name=spec.argument,
        system_prompt=system_prompt,
        temperature=spec.number("temperature", -1e-9, 2.0) or 0.0,
        max_tokens=spec.integer("max_tokens", 1, 4096) or max_tokens,
        tool_calling=spec.flag("tool_calling") or False,
    )
    return settings, spec.integer("seed", 0, 2**32 - 1) or 0


class LocalChatClient:
    """Answers chat messages with the checkpoint at ``path`` (a folder ``save_pretrained`` wrote,
    with its tokenizer and a chat template); nothing is downloaded.

    Args:
        path: the checkpoint's folder.
        settings: sampling (``temperature``; 0 is greedy), ``max_tokens`` (new tokens) and
            ``tool_calling`` (tools in the prompt, tool calls parsed from the answer).
        seed: seeds sampling, so the same seed gives the same answers.

    Raises:
        FileNotFoundError: no folder at ``path``.
        ValueError: tool calling with a chat template whose tool calls cannot be parsed.
    """

    def __init__(self, path: str | os.PathLike[str], settings: LLMSettings, seed: int = 0) -> None:
        if not os.path.isdir(path):
            raise FileNotFoundError(f"no checkpoint folder at {os.fspath(path)!r}")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.settings, self.path = settings, os.fspath(path)
        self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        if settings.tool_calling:
            _add_response_parser(self.tokenizer)
        self.model = AutoModelForCausalLM.from_pretrained(self.path, local_files_only=True)
        self.model.eval()
        self.generator = torch.Generator().manual_seed(seed)
        self.last_usage: TokenUsage | None = None
        self.last_retries = 0
        self.last_from_cache = False
        self.cache_scope = ""
        self._calls = 0

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
    ) -> dict[str, Any]:
        """The assistant message for ``messages``: its ``content``, and its ``tool_calls``
        (arguments as objects, as chat templates take them back) in tool-calling mode."""
        import torch

        del tool_choice  # a local model cannot be forced; a missing call is refused by the agent
        template_tools: list[Any] | None = tools if self.settings.tool_calling else None
        prompt: Any = self.tokenizer.apply_chat_template(
            messages,
            tools=template_tools,
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
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
        self.last_usage = TokenUsage(int(prompt_length), int(answer.shape[-1]))
        if not self.settings.tool_calling:
            text = self.tokenizer.decode(answer, skip_special_tokens=True)
            return {"role": "assistant", "content": text}
        return self._parsed(answer.tolist(), prompt["input_ids"][0].tolist())

    def _parsed(self, ids: list[int], prompt_ids: list[int]) -> dict[str, Any]:
        """The answer as TRL parses a completion in training (the prompt is the parser's
        context), each call given an id."""
        from trl.chat_template_utils import parse_response

        message = dict(parse_response(self.tokenizer, ids, prefix=prompt_ids))
        calls = []
        for call in message.get("tool_calls") or []:
            self._calls += 1
            calls.append({"id": f"call_{self._calls}", **call})
        message["tool_calls"] = calls
        return message

    def close(self) -> None:
        """Nothing to release but memory (kept until the client is dropped)."""


def _add_response_parser(tokenizer: Any) -> None:
    """Give ``tokenizer`` TRL's parser of its template's tool calls, unless it has one."""
    if getattr(tokenizer, "response_template", None) or getattr(tokenizer, "response_schema", None):
        return
    try:
        from trl.chat_template_utils import add_response_schema
    except ImportError:
        raise ValueError("tool_calling needs trl: pip install 'polyarena[llm-rl]'") from None
    try:
        add_response_schema(tokenizer)
    except ValueError:
        raise ValueError(
            "tool_calling needs a chat template whose tool calls TRL can parse (Qwen2.5/3, "
            "Llama 3.x, ...); this checkpoint's template is not one of them"
        ) from None
