"""What masking does not promise: S ::= ac | bd with a hand-written toy model, by exact enumeration.

The toy model: P(a) = P(b) = 1/2 first, then P(c|a) = 9/10, P(d|a) = 1/10, P(c|b) = 9/10,
P(d|b) = 1/10, then eos. Local masking renormalises at each step, so it gives P(ac) = P(bd) = 1/2;
the model's distribution conditioned on validity gives P(ac) = 9/10 and P(bd) = 1/10. Both are
measured by enumerating every path with its exact probability, through the numpy runtime and,
when torch is installed, through ``MoonmaskLogitsProcessor``; random toy models are checked against
the closed forms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import compile_regex
from moonmaskc.runtime import Guide
from moonmaskc.vocabulary import Vocabulary

TOKENS = (b"a", b"b", b"c", b"d", b"")
A, B, C, D, EOS = range(5)
ToyModel = Callable[[tuple[int, ...]], np.ndarray]
Masker = Callable[[tuple[int, ...], np.ndarray], np.ndarray]


@pytest.fixture(scope="module")
def guide() -> Guide:
    vocabulary = Vocabulary.from_tokens(TOKENS, eos_id=EOS, name="abcd")
    return Guide.from_artifact(compile_regex("ac|bd", tokenizer=vocabulary))


def toy_model(p_a: float, p_c_after_a: float, p_c_after_b: float) -> ToyModel:
    """Next-token probabilities of the toy model after a prefix (eos once two letters are out)."""

    def probabilities(prefix: tuple[int, ...]) -> np.ndarray:
        p = np.zeros(len(TOKENS))
        if len(prefix) == 0:
            p[[A, B]] = [p_a, 1 - p_a]
        elif len(prefix) == 1:
            p_c = p_c_after_a if prefix[0] == A else p_c_after_b
            p[[C, D]] = [p_c, 1 - p_c]
        else:
            p[EOS] = 1.0
        return p

    return probabilities


def log_probabilities(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p)


def softmax(logits: np.ndarray) -> np.ndarray:
    finite = np.isfinite(logits)
    out = np.zeros_like(logits)
    out[finite] = np.exp(logits[finite] - logits[finite].max())
    return out / out.sum()


def text_of(tokens: Sequence[int]) -> str:
    return b"".join(TOKENS[t] for t in tokens).decode()


def enumerate_outputs(model: ToyModel, mask: Masker | None) -> dict[str, float]:
    """Every complete output (ending with eos) and its exact probability under the decoding rule."""
    outputs: dict[str, float] = {}

    def walk(prefix: tuple[int, ...], probability: float) -> None:
        logits = log_probabilities(model(prefix))
        if mask is not None:
            logits = mask(prefix, logits)
        for token, p in enumerate(softmax(logits)):
            if p == 0:
                continue
            if token == EOS:
                outputs[text_of(prefix)] = outputs.get(text_of(prefix), 0.0) + probability * p
            else:
                walk((*prefix, token), probability * p)

    walk((), 1.0)
    return outputs


def runtime_masker(guide: Guide) -> Masker:
    def mask(prefix: tuple[int, ...], logits: np.ndarray) -> np.ndarray:
        state: int | None = guide.start()
        for token in prefix:
            assert state is not None
            state = guide.advance(state, token)
        assert state is not None
        return guide.apply_mask(logits.copy(), state)  # type: ignore[no-any-return]

    return mask


def processor_masker(guide: Guide) -> Masker:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from moonmaskc.integrations.transformers import MoonmaskLogitsProcessor

    prompt = [EOS, EOS, EOS]

    def mask(prefix: tuple[int, ...], logits: np.ndarray) -> np.ndarray:
        processor = MoonmaskLogitsProcessor(guide)
        processor(torch.tensor([prompt]), torch.zeros((1, len(TOKENS))))
        scores = torch.from_numpy(logits.copy()).reshape(1, -1)
        masked = processor(torch.tensor([prompt + list(prefix)]), scores)
        return masked[0].numpy()  # type: ignore[no-any-return]

    return mask


def conditioned_on_validity(model: ToyModel, guide: Guide) -> dict[str, float]:
    """The model's own output distribution restricted to outputs the artifact accepts."""
    everything = enumerate_outputs(model, mask=None)
    valid = {text: p for text, p in everything.items() if accepts(guide, text)}
    total = sum(valid.values())
    return {text: p / total for text, p in valid.items()}


def accepts(guide: Guide, text: str) -> bool:
    state: int | None = guide.start()
    for char in text.encode():
        assert state is not None
        state = guide.advance(state, TOKENS.index(bytes([char])))
        if state is None:
            return False
    return state is not None and guide.is_accept(state)


@pytest.mark.parametrize("masker", [runtime_masker, processor_masker], ids=["runtime", "processor"])
def test_local_masking_is_not_conditioning_on_validity(
    guide: Guide, masker: Callable[[Guide], Masker]
) -> None:
    model = toy_model(p_a=1 / 2, p_c_after_a=9 / 10, p_c_after_b=9 / 10)
    masked = enumerate_outputs(model, masker(guide))
    conditioned = conditioned_on_validity(model, guide)
    assert masked.keys() == conditioned.keys() == {"ac", "bd"}
    assert masked["ac"] == pytest.approx(1 / 2, abs=1e-12)
    assert masked["bd"] == pytest.approx(1 / 2, abs=1e-12)
    assert conditioned["ac"] == pytest.approx(9 / 10, abs=1e-12)
    assert conditioned["bd"] == pytest.approx(1 / 10, abs=1e-12)
    unmasked = enumerate_outputs(model, mask=None)
    assert unmasked["ac"] == pytest.approx(0.45) and unmasked["ad"] == pytest.approx(0.05)


probability = st.floats(min_value=0.01, max_value=0.99)


@settings(max_examples=40, deadline=None)
@given(p_a=probability, p_c_after_a=probability, p_c_after_b=probability)
def test_enumeration_matches_the_closed_forms(
    guide: Guide, p_a: float, p_c_after_a: float, p_c_after_b: float
) -> None:
    """Masked: P(ac) = P(a), since only c may follow a. Conditioned: P(a)P(c|a) / P(valid)."""
    model = toy_model(p_a, p_c_after_a, p_c_after_b)
    masked = enumerate_outputs(model, runtime_masker(guide))
    conditioned = conditioned_on_validity(model, guide)
    valid_mass = p_a * p_c_after_a + (1 - p_a) * (1 - p_c_after_b)
    assert math.isclose(masked["ac"], p_a, abs_tol=1e-9)
    assert math.isclose(masked["bd"], 1 - p_a, abs_tol=1e-9)
    assert math.isclose(conditioned["ac"], p_a * p_c_after_a / valid_mass, abs_tol=1e-9)
    assert math.isclose(conditioned["bd"], (1 - p_a) * (1 - p_c_after_b) / valid_mass, abs_tol=1e-9)
