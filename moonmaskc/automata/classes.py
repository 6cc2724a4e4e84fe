"""Byte classes: the coarsest partition of the 256 bytes that no NFA edge tells apart.

Takes: an ``NFA``. Hands on (``byte_classes``): ``class_of[byte]`` (classes numbered by their
smallest byte) and, for each distinct edge mask, the classes it covers as a bit set.
"""

from __future__ import annotations

from itertools import pairwise

from moonmaskc.automata.thompson import NFA


def byte_classes(nfa: NFA) -> tuple[list[int], dict[int, int]]:
    """The coarsest byte classes that no edge of ``nfa`` tells apart (two bytes share a class when
    every edge mask holds both or neither), numbered by their smallest byte. Returns ``class_of``,
    a list of 256 class numbers (``class_of[byte]``), and a dict from each distinct edge mask of
    ``nfa`` to the classes it covers as a bit set (bit ``c`` set for class ``c``): the two
    arguments of ``NFA.to_arrays``.

    One sweep over the bytes where some mask's run starts or ends: each distinct mask owns one bit
    of a signature that is toggled at those points, and the bytes between two points share the
    signature, i.e. the set of masks that hold them."""
    masks = list({mask for edges in nfa.edges for mask, _ in edges})
    toggles = {0: 0, 256: 0}
    for index, mask in enumerate(masks):
        bit = 1 << index
        edges = mask ^ (mask << 1)  # bit b set where byte b - 1 and byte b differ in membership
        while edges:
            low = edges & -edges
            at = low.bit_length() - 1
            toggles[at] = toggles.get(at, 0) ^ bit
            edges ^= low
    cuts = sorted(toggles)
    class_of = [0] * 256
    class_ids: dict[int, int] = {}
    signature = 0
    for cut, end in pairwise(cuts):
        signature ^= toggles[cut]
        cls = class_ids.setdefault(signature, len(class_ids))
        class_of[cut:end] = [cls] * (end - cut)
    covered: dict[int, int] = {mask: 0 for mask in masks}
    for signature, cls in class_ids.items():
        while signature:
            low = signature & -signature
            covered[masks[low.bit_length() - 1]] |= 1 << cls
            signature ^= low
    return class_of, covered
