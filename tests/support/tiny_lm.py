"""A tiny tool-calling chat model built offline, and a real TRL ``GRPOTrainer`` run on it.

No model can be downloaded on the test machines, so the tests of the TRL environment classes build
everything from nothing, deterministically, in seconds on one CPU thread:

- ``build_tokenizer(extra_corpus)``: a byte-level BPE trained on the fly with ``tokenizers`` (byte
  level so that any text, a board or a FEN, round-trips exactly; no split at spaces, so an env's
  repeated prompt text merges into a few tokens and the warm-up stays short) and wrapped in
  ``PreTrainedTokenizerFast`` with TRL's own Qwen2.5 chat template, which TRL recognises: it sets
  the Qwen response parser (``add_response_schema``) and parses ``<tool_call>`` JSON into calls;
- ``build_model(tokenizer, seed)``: a 2-layer ``Qwen3ForCausalLM`` with hidden size 64;
- ``warm_up(model, tokenizer, demonstrations)``: a short supervised loop on whole tool-calling
  conversations (user, assistant tool call, tool reply, assistant ``done``), so that sampling emits
  tool calls in the template's format from the first GRPO step;
- ``demonstrations(env_factory, rows, choose_call)``: those conversations, with the prompt rendered
  the way ``GRPOTrainer`` renders it (the row's prompt plus the text ``reset(**row)`` returns) and
  the tool's real reply;
- ``run_grpo(model, tokenizer, env_factory, rows, ...)``: a real ``GRPOTrainer`` with
  ``environment_factory`` and ``use_vllm=False`` (transformers ``generate`` on the CPU), trained for
  ``max_steps`` and returned, so a test reads ``trainer.state.log_history`` and ``trainer.tools``.

pytest runs with ``--import-mode=importlib``, so ``tests/support`` is not importable by default;
a test module puts it on ``sys.path`` first:

    sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
    from tiny_lm import build_model, build_tokenizer, run_grpo

Example:
    >>> tokenizer = build_tokenizer()
    >>> call = '{"name": "move", "arguments": {"move": "Nf3"}}'
    >>> text = "<tool_call>\\n" + call + "\\n</tool_call><|im_end|>"
    >>> tokenizer.decode(tokenizer(text)["input_ids"]) == text
    True
    >>> tokenizer.eos_token, tokenizer.convert_ids_to_tokens(tokenizer("<tool_call>")["input_ids"])
    ('<|im_end|>', ['<tool_call>'])
"""

from __future__ import annotations

import copy
import inspect
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from datasets import Dataset  # type: ignore[import-untyped]
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, PrinterCallback, Qwen3Config, Qwen3ForCausalLM
from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import qwen2_5_chat_template

__all__ = [
    "Demonstration",
    "EnvFactory",
    "TinyToolLM",
    "build_model",
    "build_tokenizer",
    "demonstrations",
    "environment_tools",
    "prompt_messages",
    "run_grpo",
    "tool_calling_lm",
    "warm_up",
]

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Markers of the Qwen tool-calling format: whole tokens (as in Qwen's own vocabulary), so that a
# generated tool call is a few confident tokens and the template's text splits cleanly around them.
MARKER_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<tools>",
    "</tools>",
)

_BASE_CORPUS = (
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\n"
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    '{"type": "function", "function": {"name": "move", "description": "Play a move.", '
    '"parameters": {"type": "object", "properties": {"move": {"type": "string", '
    '"description": "SAN or UCI."}, "number": {"type": "integer", "description": "A number."}}, '
    '"required": ["move"]}}}\n</tools>\n\n'
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n'
    "<tool_response>\nerror illegal move. done\n</tool_response>\n"
    "e2e4 e7e5 g1f3 b8c6 Nf3 Nc6 Bb5 a6 O-O Qxd8+ exd5 Kxf7# 1-0 0-1 1/2-1/2 white black to move\n"
    "r n b q k b n r p P R N B Q K . 0 1 2 3 4 5 6 7 8 9 10 a b c d e f g h guess higher lower\n"
)


def build_tokenizer(
    extra_corpus: Iterable[str] = (), vocab_size: int = 512
) -> PreTrainedTokenizerFast:
    """A byte-level BPE over the tool-calling format and chess notation (plus ``extra_corpus``),
    with TRL's Qwen2.5 chat template: TRL matches templates by identity, so only its own text makes
    it add the tool-call parser and accept the template as prefix-preserving.

    Example:
        >>> tokenizer = build_tokenizer()
        >>> len(tokenizer) <= 512, tokenizer.pad_token
        (True, '<|endoftext|>')
    """
    corpus = [_BASE_CORPUS, *extra_corpus]
    bpe = Tokenizer(models.BPE())
    # No regex split: merges may span spaces, which shortens a repeated board to a few tokens
    # (a 2-layer model cares about sequence length, not about word boundaries).
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    bpe_trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[*SPECIAL_TOKENS, *MARKER_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(corpus, trainer=bpe_trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.add_tokens(list(MARKER_TOKENS))
    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer


def build_model(tokenizer: PreTrainedTokenizerFast, seed: int = 0) -> Qwen3ForCausalLM:
    """A 2-layer Qwen3 with hidden size 64 (74k parameters plus 64 per token of the vocabulary:
    107k with the default tokenizer), initialised from ``seed``.

    Example:
        >>> model = build_model(build_tokenizer(), seed=0)
        >>> model.config.num_hidden_layers, sum(p.numel() for p in model.parameters())
        (2, 106880)
    """
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def environment_tools(environment: object) -> list[Callable[..., Any]]:
    """The bound methods ``GRPOTrainer`` exposes as tools: the class's public functions other
    than ``reset`` and ``get_reward`` (the same rule as ``GRPOTrainer.__init__``), by name.

    Example:
        >>> class Env:
        ...     def reset(self, **row): return ""
        ...     def get_reward(self): return 0.0
        ...     def guess(self, number: int) -> str: return ""
        ...     def _helper(self): ...
        >>> [tool.__name__ for tool in environment_tools(Env())]
        ['guess']
    """
    return [
        getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


EnvFactory = Callable[[], Any] | dict[str, Callable[[], Any]]
"""What ``GRPOTrainer(environment_factory=...)`` takes: one factory, or factories by the name a
row's ``environment`` field selects (TRL's dict mode)."""

_EMPTY_PROMPT = [{"role": "user", "content": ""}]


def prompt_messages(
    environment: Any, row: dict[str, Any], dict_mode: bool = False
) -> list[dict[str, str]]:
    """Reset ``environment`` with ``row`` and build the prompt as ``GRPOTrainer`` does: the text
    ``reset(**row)`` returns is appended to the row's last prompt message (an empty user message
    when the row has no prompt); in dict mode ``reset`` does not receive ``environment``.

    Example:
        >>> class Env:
        ...     def reset(self, **row): return " Go."
        >>> prompt_messages(Env(), {"prompt": [{"role": "user", "content": "Hi."}]})
        [{'role': 'user', 'content': 'Hi. Go.'}]
    """
    prompt = row.get("prompt", _EMPTY_PROMPT)
    reset_row = {k: v for k, v in row.items() if k != "environment"} if dict_mode else row
    observation = environment.reset(**reset_row)
    if observation is None:
        return list(prompt)
    return [*prompt[:-1], {**prompt[-1], "content": prompt[-1]["content"] + observation}]


@dataclass(frozen=True)
class Demonstration:
    """One whole tool-calling conversation to imitate, and the tools rendered in its prompt."""

    messages: list[dict[str, Any]]
    tools: list[dict[Any, Any] | Callable[..., Any]]


def demonstrations(
    env_factory: EnvFactory,
    rows: Sequence[dict[str, Any]],
    choose_call: Callable[[dict[str, Any], int], tuple[str, dict[str, Any]]],
    repeats: int = 8,
) -> list[Demonstration]:
    """``repeats`` conversations per row: the prompt as TRL renders it, the assistant calling
    ``choose_call(row, k) -> (tool name, arguments)``, the tool's real reply (an exception as
    ``{'error': ...}``, as TRL feeds it back), then the assistant ending with ``done``. With a
    dict of factories, each row's ``environment`` field picks its factory, as in TRL.

    Example:
        >>> class Env:
        ...     def reset(self, **row): return ""
        ...     def guess(self, number: int) -> str:
        ...         '''Guess.
        ...
        ...         Args:
        ...             number: The guess.
        ...         '''
        ...         return "lower"
        >>> rows = [{"prompt": [{"role": "user", "content": "Guess."}]}]
        >>> [demo] = demonstrations(Env, rows, lambda row, k: ("guess", {"number": 3}), repeats=1)
        >>> [message["role"] for message in demo.messages], demo.messages[2]["content"]
        (['user', 'assistant', 'tool', 'assistant'], 'lower')

        In dict mode ``reset`` gets the row without its ``environment`` field:

        >>> class Keys(Env):
        ...     def reset(self, **row): return " " + ",".join(row)
        >>> rows = [{"environment": "keys", "prompt": [{"role": "user", "content": "Go:"}]}]
        >>> one_guess = lambda row, k: ("guess", {"number": 1})
        >>> [demo] = demonstrations({"keys": Keys}, rows, one_guess, repeats=1)
        >>> demo.messages[0]["content"]
        'Go: prompt'
    """
    demos = []
    for index, row in enumerate(rows):
        factory = _factory_for(env_factory, row, index)
        for k in range(repeats):
            environment = factory()
            messages: list[dict[str, Any]] = [
                *prompt_messages(environment, row, dict_mode=isinstance(env_factory, dict))
            ]
            name, arguments = choose_call(row, k)
            tool_names = [tool.__name__ for tool in environment_tools(environment)]
            if name not in tool_names:
                raise ValueError(
                    f"rows[{index}]: choose_call names {name!r}, not one of {tool_names}"
                )
            try:
                reply: object = getattr(environment, name)(**arguments)
            except Exception as error:  # TRL returns any tool exception to the model
                reply = {"error": str(error)}
            call = {"type": "function", "function": {"name": name, "arguments": arguments}}
            messages += [
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "name": name, "content": str(reply)},
                {"role": "assistant", "content": "done"},
            ]
            demos.append(Demonstration(messages=messages, tools=[*environment_tools(environment)]))
    return demos


def _factory_for(env_factory: EnvFactory, row: dict[str, Any], index: int) -> Callable[[], Any]:
    """The factory of ``row``: the only one, or in dict mode the one its ``environment`` names."""
    if not isinstance(env_factory, dict):
        return env_factory
    name = row.get("environment")
    if name not in env_factory:
        raise ValueError(f"rows[{index}].environment: {name!r} is not one of {sorted(env_factory)}")
    return env_factory[name]


def _assistant_labels(
    tokenizer: PreTrainedTokenizerFast, demo: Demonstration
) -> tuple[list[int], list[int]]:
    """Token ids of the whole conversation and labels that keep only the assistant turns (the
    template is prefix-preserving, so each turn's tokens are the difference of two renderings)."""

    def render(messages: list[dict[str, Any]], generation_prompt: bool) -> list[int]:
        ids = tokenizer.apply_chat_template(
            messages,
            tools=demo.tools,
            tokenize=True,
            return_dict=False,
            add_generation_prompt=generation_prompt,
        )
        return list(ids)

    ids = render(demo.messages, generation_prompt=False)
    labels = [-100] * len(ids)
    for turn, message in enumerate(demo.messages):
        if message["role"] == "assistant":
            start = len(render(demo.messages[:turn], generation_prompt=True))
            end = len(render(demo.messages[: turn + 1], generation_prompt=False))
            labels[start:end] = ids[start:end]
    return ids, labels


def warm_up(
    model: Qwen3ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    demos: Sequence[Demonstration],
    steps: int = 120,
    learning_rate: float = 3e-3,
    seed: int = 0,
) -> Qwen3ForCausalLM:
    """Teach ``model`` the demonstrated tool calls with a plain AdamW loop over the assistant
    tokens (full batch, ``steps`` steps), in place; returned in eval mode for convenience.

    Example:
        >>> tokenizer = build_tokenizer()
        >>> messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "done"}]
        >>> demo = Demonstration(messages, tools=[])
        >>> model = warm_up(build_model(tokenizer), tokenizer, [demo], steps=20)
        >>> prompt = tokenizer.apply_chat_template(
        ...     messages[:1], add_generation_prompt=True, return_tensors="pt", return_dict=True
        ... )
        >>> reply = model.generate(**prompt, do_sample=False, max_new_tokens=5)
        >>> tokenizer.decode(reply[0, prompt["input_ids"].shape[1] :])
        'done<|im_end|>'
    """
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    encoded = [_assistant_labels(tokenizer, demo) for demo in demos]
    width = max(len(ids) for ids, _ in encoded)
    input_ids = torch.tensor(
        [ids + [tokenizer.pad_token_id] * (width - len(ids)) for ids, _ in encoded]
    )
    labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in encoded])
    attention_mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in encoded])
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    model.train()
    for _ in range(steps):
        loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    return model


def run_grpo(
    model: Qwen3ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    env_factory: EnvFactory,
    rows: Sequence[dict[str, Any]],
    *,
    seed: int = 0,
    num_generations: int = 4,
    max_completion_length: int = 48,
    max_steps: int = 1,
    max_tool_calling_iterations: int = 1,
    **config: Any,
) -> GRPOTrainer:
    """Train a deep copy of ``model`` (the caller's stays as it was, to compare or rerun) with a
    real ``GRPOTrainer`` for ``max_steps`` steps on the CPU, one prompt (a group of
    ``num_generations`` rollouts) per step, and return the trainer. ``config`` overrides any other
    ``GRPOConfig`` field; outputs go to a temporary directory deleted on return.

    Example (an untrained model and an env that scores every rollout 1; the tool-calling runs
    are in ``tests/training/llm_rl/test_grpo_tiny.py``):
        >>> class Env:
        ...     def reset(self, **row): return " Go."
        ...     def get_reward(self): return 1.0
        ...     def wait(self) -> str:
        ...         '''Wait a turn.'''
        ...         return "waited"
        >>> tokenizer = build_tokenizer()
        >>> rows = [{"prompt": [{"role": "user", "content": "Hi."}]}]
        >>> model = build_model(tokenizer)
        >>> trainer = run_grpo(model, tokenizer, Env, rows, num_generations=2, max_steps=1)
        >>> [tool.__name__ for tool in trainer.tools], trainer.state.log_history[0]["reward"]
        (['wait'], 1.0)
    """
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as output_dir:
        args = GRPOConfig(
            output_dir=output_dir,
            use_cpu=True,
            use_vllm=False,
            seed=seed,
            data_seed=seed,
            per_device_train_batch_size=num_generations,
            num_generations=num_generations,
            max_completion_length=max_completion_length,
            max_tool_calling_iterations=max_tool_calling_iterations,
            max_steps=max_steps,
            learning_rate=1e-4,
            temperature=1.0,
            logging_steps=1,
            report_to="none",
            save_strategy="no",
            disable_tqdm=True,
            dataloader_num_workers=0,
            **config,
        )
        trainer = GRPOTrainer(
            model=copy.deepcopy(model),
            processing_class=tokenizer,
            args=args,
            train_dataset=Dataset.from_list(list(rows)),
            environment_factory=env_factory,
        )
        # The metrics stay in ``trainer.state.log_history``; printing them would only clutter.
        trainer.remove_callback(PrinterCallback)
        trainer.train()
    return trainer


@dataclass(frozen=True)
class TinyToolLM:
    """A warmed-up tiny model and its tokenizer; ``grpo`` trains a copy, never this model."""

    model: Qwen3ForCausalLM
    tokenizer: PreTrainedTokenizerFast

    def grpo(
        self,
        env_factory: EnvFactory,
        rows: Sequence[dict[str, Any]],
        **options: Any,
    ) -> GRPOTrainer:
        """``run_grpo`` on this model; ``options`` as ``run_grpo`` takes them."""
        return run_grpo(self.model, self.tokenizer, env_factory, rows, **options)


def tool_calling_lm(
    env_factory: EnvFactory,
    rows: Sequence[dict[str, Any]],
    choose_call: Callable[[dict[str, Any], int], tuple[str, dict[str, Any]]],
    *,
    seed: int = 0,
    repeats: int = 8,
    steps: int = 120,
    vocab_size: int = 1024,
) -> TinyToolLM:
    """A tiny model that calls ``env_factory``'s tools on ``rows``: the tokenizer is trained on
    the demonstrations as the chat template renders them (so an env's boards, replies and tool
    schemas take few tokens), then the model is warmed up on them. The ``tiny_tool_lm`` fixture of
    ``tests/training/llm_rl/conftest.py`` builds it once per test module.

    It takes about 5 s (a 600-character chess prompt shrinks to about 70 tokens), so its runs are
    the tests in ``tests/training/llm_rl/``.
    """
    demos = demonstrations(env_factory, rows, choose_call, repeats=repeats)
    renderer = build_tokenizer()
    corpus = [
        renderer.apply_chat_template(demo.messages, tools=demo.tools, tokenize=False)
        for demo in demos
    ]
    tokenizer = build_tokenizer(extra_corpus=[str(text) for text in corpus], vocab_size=vocab_size)
    model = warm_up(build_model(tokenizer, seed=seed), tokenizer, demos, steps=steps, seed=seed)
    return TinyToolLM(model=model, tokenizer=tokenizer)
