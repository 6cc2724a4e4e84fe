"""The native core: Cython twins of the hot automata stages (see ``moonmaskc.automata.native``).

Each module is compiled at install by ``setup.py`` when a C compiler is present. Callers never
import these modules directly: ``moonmaskc.automata.native.native(name)`` does, after the pure
path was checked for being forced, and every array is validated by the Python stage before it
reaches them.
"""
