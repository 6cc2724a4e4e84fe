"""GBNF compiled to a DFA, checked against Lark's Earley parser on the same grammar.

The oracle (``gbnf_to_lark``) reads the syntax tree, not the IR, and parses text with Earley, so it
handles recursion exactly. Claims checked: every string sampled from the DFA is accepted by Earley;
on random strings and mutations, DFA-accepts implies Earley-accepts; for non-recursive grammars the
two agree on every string tried; and the depth bound means what docs/gbnf.md says.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.errors import LimitError
from moonmaskc.frontends import gbnf
from moonmaskc.limits import Limits
from tests.conftest import data_path
from tests.oracles.gbnf_to_lark import earley_recognizer

NON_RECURSIVE = ["chess.gbnf", "english.gbnf", "japanese.gbnf", "list.gbnf"]
RECURSIVE = [("arithmetic.gbnf", 3), ("json.gbnf", 3), ("json_arr.gbnf", 3), ("c.gbnf", 1)]
SAMPLE_LENGTH = 40


def sample(dfa: DFA, rng: random.Random, max_len: int = SAMPLE_LENGTH) -> bytes | None:
    """A random accepted string: a walk that only takes steps from which acceptance stays in reach."""
    if dfa.start == 0 or dfa.distance[dfa.start] > max_len:
        return None
    rows = dfa.transitions.tolist()
    distance = dfa.distance.tolist()
    accepting = dfa.accepting.tolist()
    members: dict[int, list[int]] = {}
    for byte, column in enumerate(dfa.byte_class.tolist()):
        members.setdefault(column, []).append(byte)
    state, out = dfa.start, bytearray()
    while True:
        room = max_len - len(out)
        if accepting[state] and (room == 0 or rng.random() < 0.15):
            return bytes(out)
        moves = [
            (column, target)
            for column, target in enumerate(rows[state])
            if target != 0 and distance[target] <= room - 1
        ]
        if not moves:
            assert accepting[state]
            return bytes(out)
        column, state = rng.choice(moves)
        out.append(rng.choice(members[column]))


def mutations(text: str, alphabet: str, rng: random.Random, count: int) -> list[str]:
    result = []
    for _ in range(count):
        chars = list(text)
        for _ in range(rng.randint(1, 3)):
            kind = rng.randrange(4)
            where = rng.randint(0, len(chars))
            if kind == 0 and chars:
                del chars[min(where, len(chars) - 1)]
            elif kind == 1:
                chars.insert(where, rng.choice(alphabet))
            elif kind == 2 and chars:
                chars[min(where, len(chars) - 1)] = rng.choice(alphabet)
            else:
                chars[where:where] = chars[where : where + rng.randint(1, 4)]
        result.append("".join(chars))
    return result


def check_against_earley(
    dfa: DFA, earley: Callable[[str], bool], rng: random.Random, exact: bool, samples: int, per_sample: int
) -> int:
    """Run the three claims; returns how many accepted samples were checked."""
    texts = []
    for _ in range(samples):
        data = sample(dfa, rng)
        assert data is not None
        text = data.decode("utf-8")  # the DFA only accepts valid UTF-8
        assert earley(text), f"DFA sample rejected by Earley: {text!r}"
        texts.append(text)
    alphabet = "".join(sorted(set("".join(texts)))) + 'a0 \n"{}[]()-+é€😀\x00'
    candidates = [m for text in texts for m in mutations(text, alphabet, rng, per_sample)]
    candidates += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(samples)]
    for text in candidates:
        in_dfa = dfa.accepts(text.encode("utf-8"))
        if exact:
            assert in_dfa == earley(text), f"DFA says {in_dfa} on {text!r}, Earley disagrees"
        elif in_dfa:
            assert earley(text), f"DFA accepts {text!r}, which the grammar does not derive"
    for _ in range(samples):
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        if dfa.accepts(junk):
            assert earley(junk.decode("utf-8"))
    return len(texts)


@pytest.mark.parametrize("name", NON_RECURSIVE)
def test_non_recursive_grammars_agree_with_earley(name: str) -> None:
    text = data_path("gbnf", name).read_text(encoding="utf-8")
    result = gbnf.parse(text)
    assert result.notes["recursive_rules"] == []
    dfa = compile_ir(result.node)
    earley = earley_recognizer(gbnf.parse_ast(text), "root")
    check_against_earley(dfa, earley, random.Random(name), exact=True, samples=25, per_sample=3)


@pytest.mark.parametrize(("name", "depth"), RECURSIVE)
def test_recursive_grammars_unroll_to_a_subset_of_earley(name: str, depth: int) -> None:
    text = data_path("gbnf", name).read_text(encoding="utf-8")
    result = gbnf.parse(text, max_depth=depth)
    assert result.notes["recursive_rules"] and result.notes["max_depth"] == depth
    dfa = compile_ir(result.node)
    earley = earley_recognizer(gbnf.parse_ast(text), "root")
    check_against_earley(dfa, earley, random.Random(name), exact=False, samples=8, per_sample=2)


@pytest.mark.slow
def test_c_grammar_compiles_at_depth_three() -> None:
    text = data_path("gbnf", "c.gbnf").read_text(encoding="utf-8")
    dfa = compile_ir(gbnf.parse(text, max_depth=3).node)
    earley = earley_recognizer(gbnf.parse_ast(text), "root")
    check_against_earley(dfa, earley, random.Random(3), exact=False, samples=10, per_sample=2)


# --- what the depth bound means ----------------------------------------------------------------

DEPTH_CASES = [
    # (grammar, the string with k levels of nesting)
    ('root ::= "(" root ")" | "x"', lambda k: "(" * k + "x" + ")" * k),
    ('root ::= root "+x" | "x"', lambda k: "x" + "+x" * k),
    ('root ::= "[" items "]" | "x"\nitems ::= root ("," root)*', lambda k: "[" * k + "x" + "]" * k),
    ('root ::= "a" b | "."\nb ::= "b" root', lambda k: "ab" * k + "."),
]


@pytest.mark.parametrize(("text", "nested"), DEPTH_CASES)
@pytest.mark.parametrize("depth", [0, 1, 2, 4])
def test_depth_n_accepts_exactly_n_re_entries(text: str, nested: Callable[[int], str], depth: int) -> None:
    dfa = compile_ir(gbnf.parse(text, max_depth=depth).node)
    earley = earley_recognizer(gbnf.parse_ast(text), "root")
    for k in range(depth + 4):
        assert earley(nested(k))
        assert dfa.accepts(nested(k).encode()) == (k <= depth), (k, depth)


def test_deeper_unrolling_only_adds_strings() -> None:
    text = data_path("gbnf", "arithmetic.gbnf").read_text(encoding="utf-8")
    shallow = compile_ir(gbnf.parse(text, max_depth=1).node)
    deep = compile_ir(gbnf.parse(text, max_depth=2).node)
    rng = random.Random(7)
    for _ in range(40):
        data = sample(shallow, rng)
        assert data is not None and deep.accepts(data)


# --- random grammars --------------------------------------------------------------------------

ALPHABET = "ab€\n"
ATOMS = st.sampled_from(
    ['"a"', '"b"', '"ab"', '""', '"\\u20AC"', '"\\n"', "[ab]", "[^a]", "[a-b\\n]", "[^\\x00-\\x7F]", "."]
)
POSTFIX = st.sampled_from(["", "", "", "*", "+", "?", "{2}", "{0,2}", "{1,}"])


def expressions(rule_names: list[str]) -> st.SearchStrategy[str]:
    leaves = ATOMS | st.sampled_from(rule_names) if rule_names else ATOMS

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        sequence = st.lists(inner, min_size=1, max_size=3).map(" ".join)
        group = st.lists(sequence, min_size=1, max_size=3).map(
            lambda options: "(" + " | ".join(options) + ")"
        )
        return st.tuples(group, POSTFIX).map("".join) | st.tuples(inner, POSTFIX).map("".join)

    return st.recursive(leaves, extend, max_leaves=6)


@st.composite
def grammars(draw: st.DrawFn, recursive: bool) -> str:
    count = draw(st.integers(1, 3))
    names = [f"r{i}" for i in range(count)]
    lines = []
    for index, name in enumerate(names):
        visible = names[index + 1 :] + (names[: index + 1] if recursive else [])
        options = draw(st.lists(expressions(visible), min_size=1, max_size=3))
        lines.append(f"{name} ::= " + " | ".join(options))
    return "root ::= r0\n" + "\n".join(lines) + "\n"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=grammars(recursive=False), seed=st.integers(0, 2**32))
def test_random_non_recursive_grammars_agree_with_earley(text: str, seed: int) -> None:
    dfa = compile_ir(gbnf.parse(text).node)
    earley = earley_recognizer(gbnf.parse_ast(text), "root")
    rng = random.Random(seed)
    for _ in range(25):
        candidate = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 5)))
        assert dfa.accepts(candidate.encode()) == earley(candidate), candidate
    if dfa.start != 0:
        check_against_earley(dfa, earley, rng, exact=True, samples=5, per_sample=2)


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=grammars(recursive=True), depth=st.integers(0, 2), seed=st.integers(0, 2**32))
def test_random_recursive_grammars_unroll_to_a_subset(text: str, depth: int, seed: int) -> None:
    # Unrolling can exceed any state bound; that is a LimitError by design, not a wrong language.
    limits = Limits(max_states=20_000)
    try:
        dfa = compile_ir(gbnf.parse(text, limits=limits, max_depth=depth).node, limits)
    except LimitError:
        assume(False)
        return
    earley = earley_recognizer(gbnf.parse_ast(text), "root")
    rng = random.Random(seed)
    for _ in range(25):
        candidate = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 5)))
        if dfa.accepts(candidate.encode()):
            assert earley(candidate), candidate
    if dfa.start != 0:
        check_against_earley(dfa, earley, rng, exact=False, samples=5, per_sample=2)
