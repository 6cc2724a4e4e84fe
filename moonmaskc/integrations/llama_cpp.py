"""A llama-cpp-python logits processor that masks every sampling step with a moonmaskc artifact.

Takes: an artifact with a token table (a path, an in-memory ``Artifact`` or a runtime ``Guide``)
compiled for the GGUF model's vocabulary (``moonmaskc compile ... --tokenizer model.gguf``).
Hands on: ``MoonmaskLlamaProcessor``, to pass as
``llm(prompt, logits_processor=LogitsProcessorList([processor]), max_tokens=N)`` or to
``llm.create_chat_completion(messages, logits_processor=..., max_tokens=N)``, and
``vocabulary_mismatches``, which compares a vocabulary with llama.cpp's own rendering of every token.

How llama-cpp-python calls it (0.3.x): once per sampled token, before its samplers (penalties,
top-k / top-p / min-p, temperature, the final draw), as ``processor(input_ids, scores)``:
``input_ids`` is every token so far (the prompt, then the tokens generated), ``scores`` the
float32 logits of the whole vocabulary in id order (a strided view); the returned array replaces
them. A completion stops at the first end-of-generation token (eos) or after ``max_tokens``
generated tokens; the eos is not counted in the text and ends the call at once.

Invariants:
- One instance per completion: the first call records the prompt length; every later call reads
  the tokens generated since the prompt.
- eos is allowed only in an accepting state; every other special token (control tokens, other
  end-of-generation tokens) is never allowed. After eos the output is finished: a further call is
  an error, not a silent mask.
- With a budget (``max_tokens``, or the context left after the prompt when ``llama`` is given), a
  token is allowed only when a valid end with eos still fits after it (``Guide.allowed(...,
  tokens_left=...)``): every output ends valid, with eos, within the budget. While the budget is
  loose the masks are the unbudgeted ones.
- Wrong inputs are errors that say what is wrong: an artifact for another vocabulary (fingerprint,
  checked against the GGUF file of ``llama``), logits of the wrong length or shape, NaN logits, a
  budget of 0 or less or too small for the shortest valid output.

Importing this module imports numpy and moonmaskc's runtime, not ``llama_cpp``: the processor only
needs what llama-cpp-python hands it; ``llama`` objects are read through their public methods.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from moonmaskc.errors import RuntimeInputError, VocabularyError
from moonmaskc.integrations.allow_rows import AllowRows, NoContinuation
from moonmaskc.runtime import Guide

__all__ = ["FINISHED", "MoonmaskLlamaProcessor", "token_piece", "vocabulary_mismatches"]

FINISHED = -1


def _as_guide(source: Any, tokenizer: Any = None) -> Guide:
    """A runtime ``Guide`` from a ``Guide``, an in-memory ``Artifact`` or an artifact path."""
    if isinstance(source, Guide):
        source.check_tokenizer(tokenizer)
        return source
    if isinstance(source, str | os.PathLike):
        return Guide.load(source, tokenizer=tokenizer)
    if hasattr(source, "token_table") and hasattr(source, "dfa"):
        return Guide.from_artifact(source, tokenizer=tokenizer)
    raise TypeError(f"expected an artifact path, an Artifact or a Guide, not {type(source).__name__}")


class MoonmaskLlamaProcessor:
    """Sets the score of every token the artifact does not allow next to -inf.

    ``artifact``: a path, an ``Artifact`` (with a token table) or a ``Guide``.

    ``llama``: the ``llama_cpp.Llama`` that will generate (optional, recommended). Then the
    artifact's vocabulary is checked against the one in the model's GGUF file (fingerprint, the
    artifact's eos), its eos must be one of llama.cpp's end-of-generation tokens, and the context
    left after the prompt bounds the budget as it bounds llama-cpp-python's ``max_tokens``.
    ``tokenizer``: instead or as well, a vocabulary spec (a ``Vocabulary``, a ``.gguf`` path, a
    ``tokenizer.json``) checked against the artifact's fingerprint.

    ``max_tokens`` (alias ``max_new_tokens``): the token budget of the completion, eos included;
    give the same value as to llama-cpp-python. Every output then ends valid and with eos within
    it. When the start state's shortest valid output (``Guide.fewest_tokens``) is longer,
    ``RuntimeInputError`` at once. Without a budget (and without ``llama``), an output may be cut
    at llama-cpp-python's ``max_tokens`` unfinished.

    llama-cpp-python stops as soon as eos is sampled and does not call the processor again, so
    the processor never sees that eos: after a completion with ``finish_reason == "stop"``,
    ``generated`` holds the ids before eos, ``complete`` is true (the text is valid) and
    ``calls == len(generated) + 1`` (the last call allowed eos). ``state`` is the state reached
    (``FINISHED`` = -1 when an eos was seen in ``input_ids``, as in a raw ``Llama.generate`` loop),
    ``budget`` the budget in force (``None``: none), ``mask_seconds`` the time spent in this
    processor and ``calls`` its call count.
    """

    def __init__(
        self,
        artifact: Any,
        *,
        llama: Any = None,
        tokenizer: Any = None,
        max_tokens: int | None = None,
        max_new_tokens: int | None = None,
    ) -> None:
        self.guide = _as_guide(artifact, tokenizer=tokenizer)
        self.llama = llama
        if llama is not None:
            self._check_llama(llama)
        self.guide.warm()  # every mask row built now, off the sampling loop
        if max_tokens is not None and max_new_tokens is not None and max_tokens != max_new_tokens:
            raise RuntimeInputError(
                f"max_tokens={max_tokens} and max_new_tokens={max_new_tokens} disagree: give one budget"
            )
        requested = max_tokens if max_tokens is not None else max_new_tokens
        self.max_tokens: int | None = None
        if requested is not None:
            name = "max_tokens" if max_tokens is not None else "max_new_tokens"
            self.max_tokens = self._checked_budget(requested, name)
        self.budget: int | None = self.max_tokens
        self.prompt_length: int | None = None
        self.state = self.guide.start()
        self.generated: list[int] = []
        self.mask_seconds = 0.0
        self.calls = 0
        self._allow_rows = AllowRows(self.guide)

    @property
    def finished(self) -> bool:
        """Whether an eos was seen among the generated tokens (only in a raw ``Llama.generate``
        loop: completions stop before the processor could see it)."""
        return self.state == FINISHED

    @property
    def complete(self) -> bool:
        """Whether the generated text is a complete valid text (an accepting state, or eos seen)."""
        return self.state == FINISHED or self.guide.is_accept(self.state)

    def __call__(self, input_ids: Any, scores: Any) -> np.ndarray:
        began = time.perf_counter()
        ids = np.asarray(input_ids)
        logits = np.asarray(scores)
        if ids.ndim != 1:
            raise RuntimeInputError(f"input_ids must be 1-D (one sequence), got shape {ids.shape}")
        if self.prompt_length is None:
            self._begin(len(ids))
        self._follow(ids)
        self._check_logits(logits)
        if self.state == FINISHED:
            raise RuntimeInputError(
                f"the output already ended with eos after {len(self.generated)} tokens and a next token "
                "is asked for: use one processor per completion"
            )
        tokens_left = None if self.budget is None else self.budget - len(self.generated)
        allowed = self._allowed_row(self.state, tokens_left)
        masked = np.where(allowed, logits, np.float32(-np.inf)).astype(np.float32, copy=False)
        if not np.isfinite(masked).any():
            raise RuntimeInputError(
                f"every token allowed in state {self.state} has a score of -inf: nothing can be sampled "
                "(another logits processor before this one removed them)"
            )
        self.mask_seconds += time.perf_counter() - began
        self.calls += 1
        return masked

    # checks -------------------------------------------------------------------------------------

    def _check_llama(self, llama: Any) -> None:
        n_vocab = int(llama.n_vocab())
        if n_vocab != self.guide.vocab_size:
            raise VocabularyError(
                f"the llama.cpp model has {n_vocab} tokens but the artifact's vocabulary has "
                f"{self.guide.vocab_size}: compile the artifact with --tokenizer on this model's GGUF file"
            )
        model_path = getattr(llama, "model_path", None)
        if model_path and Path(model_path).suffix.lower() == ".gguf" and Path(model_path).is_file():
            vocabulary = _gguf_vocabulary(Path(model_path), self._eos_token())
            if vocabulary.fingerprint != self.guide.fingerprint:
                raise VocabularyError(
                    f"the vocabulary of {model_path} (fingerprint {vocabulary.fingerprint[:16]}..., eos "
                    f"{vocabulary.eos_token!r}) is not the one this artifact was compiled for "
                    f"({self.guide.vocabulary_name!r}, fingerprint {self.guide.fingerprint[:16]}...): "
                    "recompile or link the artifact with --tokenizer on this model's GGUF file"
                )
        is_eog = _eog_check(llama)
        if is_eog is not None and not is_eog(self.guide.eos):
            raise VocabularyError(
                f"the artifact's eos (token {self.guide.eos}) is not an end-of-generation token of this "
                "llama.cpp model, so a completion would not stop there: compile with the model's eos"
            )

    def _eos_token(self) -> str | None:
        arrays = getattr(self.guide.table, "vocab_arrays", None)
        try:
            return str(arrays["vocab_eos_token"]) if arrays is not None else None
        except (KeyError, TypeError):
            return None

    def _checked_budget(self, value: Any, origin: str) -> int:
        """``value`` as a budget; ``RuntimeInputError`` unless it is a positive int in which the
        start state's shortest valid output (eos included) fits."""
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise RuntimeInputError(f"{origin} must be an int, not {type(value).__name__}")
        value = int(value)
        if value <= 0:
            raise RuntimeInputError(f"{origin} is {value}: at least one new token (eos) is needed")
        fewest = self.guide.fewest_tokens(self.guide.start())
        if fewest <= 0:
            raise RuntimeInputError(
                "no output of this artifact can end with eos: no token sequence of its vocabulary "
                "completes it"
            )
        if fewest > value:
            raise RuntimeInputError(
                f"the shortest valid output of this artifact takes {fewest} tokens (eos included), more "
                f"than {origin} = {value}: raise the budget so that the output can end valid"
            )
        return value

    def _begin(self, prompt_length: int) -> None:
        """The first call: record the prompt; with ``llama``, the context left bounds the budget."""
        self.prompt_length = prompt_length
        if self.llama is None:
            return
        context_left = int(self.llama.n_ctx()) - prompt_length
        if self.max_tokens is None or context_left < self.max_tokens:
            origin = f"the context left after the prompt ({self.llama.n_ctx()} - {prompt_length} tokens)"
            self.budget = self._checked_budget(context_left, origin)

    def _check_logits(self, logits: np.ndarray) -> None:
        if logits.ndim != 1 or logits.shape[0] != self.guide.vocab_size:
            raise RuntimeInputError(
                f"the model scores {tuple(logits.shape)} but the artifact's vocabulary has "
                f"{self.guide.vocab_size} tokens: compile the artifact with this model's GGUF file "
                "(--tokenizer model.gguf)"
            )
        if not np.issubdtype(logits.dtype, np.floating):
            raise RuntimeInputError(f"scores must be floating point, not {logits.dtype}")
        nan = np.isnan(logits)
        if nan.any():
            raise RuntimeInputError(
                f"the model's scores hold {int(nan.sum())} NaN values (first at token "
                f"{int(np.argmax(nan))}) after {len(self.generated)} generated tokens: no mask is "
                "applied to NaN logits"
            )

    # states -------------------------------------------------------------------------------------

    def _follow(self, ids: np.ndarray) -> None:
        """Advance the state over the tokens generated since the last call (the first ones are
        checked to be the ones already seen; otherwise the generated tokens are walked again)."""
        assert self.prompt_length is not None
        if len(ids) < self.prompt_length + len(self.generated):
            raise RuntimeInputError(
                f"this processor saw a prompt of {self.prompt_length} tokens and {len(self.generated)} "
                f"generated tokens, and now {len(ids)} tokens in all: use one processor per completion"
            )
        generated = ids[self.prompt_length :].astype(np.int64).tolist()
        if generated[: len(self.generated)] != self.generated:
            self.state, self.generated = self.guide.start(), []
        for position in range(len(self.generated), len(generated)):
            self.state = self._step(self.state, generated[position], position)
            self.generated.append(generated[position])

    def _step(self, state: int, token: int, position: int) -> int:
        if state == FINISHED:
            raise RuntimeInputError(
                f"token {token} was generated at position {position}, after eos: the output had ended"
            )
        if token == self.guide.eos and self.guide.is_accept(state):
            return FINISHED
        following = self.guide.advance(state, token) if 0 <= token < self.guide.vocab_size else None
        if following is None:
            raise RuntimeInputError(
                f"generated token {token} at position {position} is not allowed in state {state}; "
                "another logits processor or sampler must have changed the masked scores"
            )
        return following

    def _allowed_row(self, state: int, tokens_left: int | None) -> np.ndarray:
        """The boolean allow-row of ``state``, under the budget rule once ``tokens_left`` binds
        it (``AllowRows``); a budget error names the budget."""
        try:
            return self._allow_rows.row(state, tokens_left)
        except NoContinuation:
            raise
        except RuntimeInputError as error:
            raise RuntimeInputError(f"budget {self.budget}, {tokens_left} tokens left: {error}") from None


_GGUF_VOCABULARIES: dict[tuple[str, int, int, str | None], Any] = {}


def _gguf_vocabulary(path: Path, eos: str | None) -> Any:
    """The vocabulary of a GGUF file with ``eos``, remembered per file version (0.4 s a read)."""
    from moonmaskc.vocabulary import read_gguf_vocabulary

    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, eos)
    vocabulary = _GGUF_VOCABULARIES.get(key)
    if vocabulary is None:
        try:
            vocabulary = read_gguf_vocabulary(path, eos=eos)
        except VocabularyError as error:
            raise VocabularyError(f"cannot check the artifact against {path}: {error}") from None
        _GGUF_VOCABULARIES[key] = vocabulary
    return vocabulary


def _eog_check(llama: Any) -> Any:
    """A function ``token -> bool`` (llama.cpp's end-of-generation test), or ``None`` when this
    llama-cpp-python does not expose it."""
    try:
        import llama_cpp

        vocab = llama._model.vocab
        test = llama_cpp.llama_vocab_is_eog
    except (ImportError, AttributeError):
        return None
    return lambda token: bool(test(vocab, int(token)))


def token_piece(llama: Any, token: int) -> bytes:
    """llama.cpp's rendering of ``token`` alone (``llama_token_to_piece``, control tokens as
    nothing), whatever its length. ``Llama.detokenize`` of llama-cpp-python 0.3.x renders into a
    32-byte buffer and gives ``b""`` for a longer token (SmolLM2 has 47 of them: runs of spaces,
    dashes, hashes); this asks again with the length llama.cpp says it needs."""
    try:
        import ctypes

        import llama_cpp

        vocab = llama._model.vocab
        render = llama_cpp.llama_token_to_piece
    except (ImportError, AttributeError):
        piece: bytes = llama.detokenize([token])
        return piece
    size = 64
    while True:
        buffer = ctypes.create_string_buffer(size)
        written = int(render(vocab, llama_cpp.llama_token(token), buffer, size, 0, False))
        if written >= 0:
            return buffer.raw[:written]
        size = -written


def vocabulary_mismatches(llama: Any, vocabulary: Any) -> list[int]:
    """The token ids whose bytes in ``vocabulary`` differ from llama.cpp's rendering of the token
    alone (``token_piece``: control tokens render as nothing, as the vocabulary holds them); ``[]``
    when they agree everywhere. A size mismatch is ``VocabularyError``."""
    if int(llama.n_vocab()) != vocabulary.size:
        raise VocabularyError(f"llama.cpp has {llama.n_vocab()} tokens, the vocabulary {vocabulary.size}")
    return [
        token_id
        for token_id, ours in enumerate(vocabulary.token_bytes)
        if token_piece(llama, token_id) != ours
    ]
