"""The automata: Thompson NFA, byte classes, subset construction, minimisation, products,
distances and sampling, each stage in a module of its own (see ``docs/architecture.md``).

Nothing is imported here, so that a serving process that needs only ``automata.dfa.DFA`` loads
no construction code. ``automata.build.compile_ir`` is the entry: IR to minimal DFA.
"""
